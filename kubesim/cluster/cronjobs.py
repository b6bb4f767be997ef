"""The CronJob controller: a Job made at each time a CronJob's schedule names, on the clock.

What pkg/controller/cronjob (its v2 controller) does that clients and tests see:

- **Schedule**: ``spec.schedule`` (:mod:`kubesim.apiserver.cron`) read in ``spec.timeZone`` (UTC
  when unset, as a controller manager in a container reads it). The controller wakes at each
  scheduled time on the server's clock (a timer per CronJob): under ``kubesim serve`` that is
  wall-clock time, in a simulation the time the scenario advances to. When it wakes it runs the
  most recent scheduled time not yet run since ``status.lastScheduleTime`` (or the CronJob's
  creation), once; past ``startingDeadlineSeconds`` it is missed (``MissSchedule``). A
  suspended CronJob runs nothing.
- **The Job**: named ``{cronjob}-{scheduled time in minutes since the Unix epoch}``, from
  ``spec.jobTemplate`` (its labels and annotations, and the annotation
  ``batch.kubernetes.io/cronjob-scheduled-timestamp``, the scheduled time in RFC 3339 in the
  CronJob's zone), owned by the CronJob as its controller. ``concurrencyPolicy``: ``Allow``
  runs it whatever runs; ``Forbid`` skips the time while a Job is active
  (``JobAlreadyActive``); ``Replace`` deletes the active Jobs first.
- **Status**: ``active`` (an ObjectReference per running Job), ``lastScheduleTime``, and
  ``lastSuccessfulTime`` from the completed Jobs' ``completionTime``. A finished Job leaves
  ``active`` (``SawCompletedJob``, "Saw completed job: {name}, condition: Complete"); finished
  Jobs beyond ``successfulJobsHistoryLimit`` and ``failedJobsHistoryLimit`` are deleted, the
  oldest first, with their pods.
- **Events**, as the controller words them: ``SuccessfulCreate`` ("Created job {name}"),
  ``SawCompletedJob``, ``SuccessfulDelete`` ("Deleted job {name}"), ``JobAlreadyActive``,
  ``MissSchedule``, ``InvalidSchedule`` (a schedule that never fires, such as ``0 0 30 2 *``),
  ``UnparseableSchedule``, ``UnknownTimeZone``.

Not modelled: ``TooManyMissedTimes`` (more than 100 missed times are run as one, like any
other), and the jitter of the real controller's requeue (kubesim wakes at the minute itself).
"""

from __future__ import annotations

import datetime as _dt
import zoneinfo
from typing import TYPE_CHECKING, Any

from kubesim._core import Timer
from kubesim.apiserver import cron, propagation
from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.go_values import go_quote as _go_quote
from kubesim.apiserver.objects import as_dict, as_int, deleting, owner_reference
from kubesim.apiserver.storage import Key

if TYPE_CHECKING:
    from kubesim.cluster.workloads import Controllers

JSON = dict[str, Any]

SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
_FORBID_MESSAGE = (
    "Not starting job because prior execution is running and concurrency policy is Forbid"
)
_NEVER = "time difference between two schedules is less than 1 second"
# CronJobStatus's fields in Go's order.
_STATUS_ORDER = ("active", "lastScheduleTime", "lastSuccessfulTime")


class CronJobs:
    """The CronJob controller of one server's :class:`~kubesim.cluster.workloads.Controllers`."""

    def __init__(self, controllers: Controllers) -> None:
        self.controllers = controllers
        self.server = controllers.server
        self.cron_jobs = self.server.resource("cronjobs")
        self.jobs = self.server.resource("jobs")
        self._timers: dict[Key, Timer] = {}

    def sync(self, key: Key) -> None:
        stored = self.server.storage.get(self.cron_jobs, key)
        if stored is None:
            self._wake_at(key, None)
            return
        cron_job = stored.obj
        spec = as_dict(cron_job.get("spec"))
        status = deep_copy(as_dict(cron_job.get("status")))
        jobs = self.controllers.owned(self.jobs, key[0], cron_job)
        self._reconcile_active(cron_job, status, jobs)
        if deleting(cron_job):
            self._write_status(key, status)
            return
        zone = self._zone(cron_job, spec)
        try:
            schedule = cron.parse(str(spec.get("schedule", "")))
        except cron.ScheduleError as exc:
            schedule_text = _go_quote(str(spec.get("schedule", "")))
            self._event(
                cron_job,
                "UnparseableSchedule",
                f"unparseable schedule: {schedule_text} : {exc}",
                warning=True,
            )
            schedule = None
        if zone is None or schedule is None or spec.get("suspend") is True:
            self._cleanup(cron_job, spec, jobs)
            self._write_status(key, status)
            self._wake_at(key, None)
            return
        now = self._now(zone)
        due = self._most_recent_due(cron_job, status, schedule, now, zone)
        if due is not None:
            self._run(cron_job, spec, status, jobs, due, now)
        self._cleanup(cron_job, spec, self.controllers.owned(self.jobs, key[0], cron_job))
        self._write_status(key, status)
        following = schedule.next(now)
        if following is None:
            # Next finds no time within five years (0 0 30 2 *): mostRecentScheduleTime's error.
            message = f"invalid schedule: {spec.get('schedule')} : {_NEVER}"
            self._event(cron_job, "InvalidSchedule", message, warning=True)
        self._wake_at(key, following)

    # -- time -------------------------------------------------------------------------------
    def _zone(self, cron_job: JSON, spec: JSON) -> _dt.tzinfo | None:
        name = spec.get("timeZone")
        if not name:
            return _dt.timezone.utc
        try:
            return zoneinfo.ZoneInfo(str(name))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            message = f"invalid timeZone: {_go_quote(str(name))}: unknown time zone {name}"
            self._event(cron_job, "UnknownTimeZone", message, warning=True)
            return None

    def _now(self, zone: _dt.tzinfo) -> _dt.datetime:
        clock = self.server.clock
        instant = clock.epoch + _dt.timedelta(seconds=clock.now())
        return instant.astimezone(zone)

    def _most_recent_due(
        self,
        cron_job: JSON,
        status: JSON,
        schedule: cron.Schedule,
        now: _dt.datetime,
        zone: _dt.tzinfo,
    ) -> _dt.datetime | None:
        """The latest scheduled time in (last run, now], or None (mostRecentScheduleTime)."""
        since = status.get("lastScheduleTime") or cron_job["metadata"].get("creationTimestamp")
        start = _parse_time(str(since)).astimezone(zone)
        due = None
        t = schedule.next(start)
        while t is not None and t <= now:
            due = t
            t = schedule.next(t)
        return due

    def _wake_at(self, key: Key, when: _dt.datetime | None) -> None:
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous.cancel()
        if when is None:
            return
        clock = self.server.clock
        seconds = (when - clock.epoch).total_seconds()

        def wake() -> None:
            with self.server.lock:
                if self._timers.get(key) is timer:
                    del self._timers[key]
                    self.controllers.requeue("cronjob", key)

        timer = clock.call_at(max(seconds, clock.now()), wake)
        self._timers[key] = timer

    # -- jobs -------------------------------------------------------------------------------
    def _reconcile_active(self, cron_job: JSON, status: JSON, jobs: list[JSON]) -> None:
        active = [ref for ref in status.get("active") or [] if isinstance(ref, dict)]
        uids = {job["metadata"]["uid"]: job for job in jobs}
        kept = []
        for ref in active:
            job = uids.get(ref.get("uid"))
            if job is None:
                self._event(
                    cron_job,
                    "MissingJob",
                    f"Active job went missing: {ref.get('name')}",
                    warning=True,
                )
            elif _finished(job) is not None:
                condition = _finished(job)
                self._event(
                    cron_job,
                    "SawCompletedJob",
                    f"Saw completed job: {job['metadata']['name']}, condition: {condition}",
                )
            else:
                kept.append(ref)
        if kept:
            status["active"] = kept
        else:
            status.pop("active", None)
        for job in jobs:
            completed = as_dict(job.get("status")).get("completionTime")
            if _finished(job) == "Complete" and completed:
                last = status.get("lastSuccessfulTime")
                if not last or _parse_time(str(completed)) > _parse_time(str(last)):
                    status["lastSuccessfulTime"] = completed

    def _run(
        self,
        cron_job: JSON,
        spec: JSON,
        status: JSON,
        jobs: list[JSON],
        due: _dt.datetime,
        now: _dt.datetime,
    ) -> None:
        deadline = spec.get("startingDeadlineSeconds")
        if isinstance(deadline, int) and due + _dt.timedelta(seconds=deadline) < now:
            self._event(
                cron_job,
                "MissSchedule",
                f"Missed scheduled time to start a job: {_rfc1123z(due)}",
                warning=True,
            )
            return
        name = f"{cron_job['metadata']['name']}-{int(due.timestamp()) // 60}"
        if any(job["metadata"]["name"] == name for job in jobs):
            return  # this time already ran
        active = status.get("active") or []
        policy = spec.get("concurrencyPolicy", "Allow")
        if policy == "Forbid" and active:
            self._event(cron_job, "JobAlreadyActive", _FORBID_MESSAGE)
            return
        if policy == "Replace":
            for ref in active:
                self._delete_job(cron_job, str(ref.get("name")))
            status.pop("active", None)
        created = self.controllers.create_recorded(
            cron_job,
            self.jobs,
            self._job_from(cron_job, spec, name, due),
            "Created job {name}",
            "Error creating job: {error}",
        )
        if created is None:
            return
        meta = created["metadata"]
        reference = {
            "kind": "Job",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
            "apiVersion": "batch/v1",
            "resourceVersion": meta["resourceVersion"],
        }
        status["active"] = [*(status.get("active") or []), reference]
        status["lastScheduleTime"] = _rfc3339(due)

    def _job_from(self, cron_job: JSON, spec: JSON, name: str, due: _dt.datetime) -> JSON:
        template = deep_copy(as_dict(spec.get("jobTemplate")))
        template_meta = as_dict(template.get("metadata"))
        meta: JSON = {"name": name}
        if template_meta.get("labels"):
            meta["labels"] = template_meta["labels"]
        meta["annotations"] = {
            **as_dict(template_meta.get("annotations")),
            SCHEDULED_TIMESTAMP: due.isoformat().replace("+00:00", "Z"),
        }
        meta["ownerReferences"] = [owner_reference(cron_job)]
        return {"metadata": meta, "spec": as_dict(template.get("spec"))}

    def _cleanup(self, cron_job: JSON, spec: JSON, jobs: list[JSON]) -> None:
        """Finished Jobs past the history limits go, the oldest first."""
        for kind, field in (
            ("Complete", "successfulJobsHistoryLimit"),
            ("Failed", "failedJobsHistoryLimit"),
        ):
            limit = spec.get(field)
            if limit is None:
                continue
            finished = sorted(
                (job for job in jobs if _finished(job) == kind and not deleting(job)),
                key=lambda job: (
                    str(as_dict(job.get("status")).get("startTime") or ""),
                    job["metadata"]["name"],
                ),
            )
            for job in finished[: max(0, len(finished) - as_int(limit, 0))]:
                self._delete_job(cron_job, job["metadata"]["name"])

    def _delete_job(self, cron_job: JSON, name: str) -> None:
        namespace = cron_job["metadata"]["namespace"]
        self.controllers.write(
            lambda: self.server.registry.delete(
                self.jobs, namespace, name, {}, policy=propagation.BACKGROUND
            )
        )
        self._event(cron_job, "SuccessfulDelete", f"Deleted job {name}")

    # -- writes -----------------------------------------------------------------------------
    def _write_status(self, key: Key, status: JSON) -> None:
        current = self.server.storage.get(self.cron_jobs, key)
        if current is None:
            return
        ordered = {k: status[k] for k in _STATUS_ORDER if k in status}
        ordered.update((k, v) for k, v in status.items() if k not in ordered)
        self.controllers.write_status(self.cron_jobs, current.obj, ordered)

    def _event(self, cron_job: JSON, reason: str, message: str, *, warning: bool = False) -> None:
        self.controllers.record_event(cron_job, reason, message, warning=warning)


def _finished(job: JSON) -> str | None:
    """``Complete`` or ``Failed`` when the Job has finished (IsJobFinished), else None."""
    for condition in as_dict(job.get("status")).get("conditions") or []:
        if (
            isinstance(condition, dict)
            and condition.get("type") in ("Complete", "Failed")
            and condition.get("status") == "True"
        ):
            return str(condition["type"])
    return None


def _parse_time(text: str) -> _dt.datetime:
    return _dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=_dt.timezone.utc)


def _rfc1123z(when: _dt.datetime) -> str:
    """Go's ``time.RFC1123Z`` of the time in UTC, as MissSchedule prints it."""
    return when.astimezone(_dt.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S +0000")


def _rfc3339(when: _dt.datetime) -> str:
    return when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["SCHEDULED_TIMESTAMP", "CronJobs"]
