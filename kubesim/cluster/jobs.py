"""The Job controller: a Job's pods made, counted and finished, as kube-controller-manager does.

What pkg/controller/job does that clients and tests see:

- **Pods** from the template (``generateName: {job}-``, owned by the Job as its controller, the
  template's labels, which carry the generated ``job-name`` and ``controller-uid``): as many as
  ``spec.parallelism`` allows, and no more than the completions still to come
  (``completions - succeeded``); a work-queue Job (no ``completions``) runs ``parallelism`` pods
  until one succeeds. In ``Indexed`` completion mode each pod has its completion index
  (``{job}-{index}-`` as its name's prefix, the ``batch.kubernetes.io/job-completion-index``
  annotation and label, ``hostname`` ``{job}-{index}``), and a succeeded index is not run again.
- **Counting**: a pod whose ``status.phase`` is ``Succeeded`` or ``Failed`` counts once in
  ``status.succeeded`` or ``status.failed``; ``status.active`` (left out at zero, as Go's
  ``omitempty`` does) counts the others not being deleted, ``status.ready`` the ready ones,
  ``status.terminating`` the ones being deleted; ``startTime`` is set when the Job first runs,
  ``completedIndexes`` lists an Indexed Job's succeeded indexes (``0-2,4``).
- **Finishing**: once ``completions`` pods succeeded (a work queue: one, and none still active),
  the conditions ``SuccessCriteriaMet`` and ``Complete`` and ``completionTime``; once more pods
  failed than ``backoffLimit``, the active pods are deleted and the conditions
  ``FailureTarget`` and ``Failed``, reason ``BackoffLimitExceeded`` ("Job has reached the
  specified backoff limit"). A finished Job is left alone.
- **Back-off**: after ``n`` failed pods since the last success, the next pod is made
  ``min(10 s * 2 ** (n - 1), 6 min)`` after the last failure; in between the Job has no
  active pod, ``status.failed`` counts the failures and no condition is set (a retry pending).
- **Suspending**: ``spec.suspend: true`` deletes the active pods and sets the ``Suspended``
  condition (``JobSuspended``, "Job suspended"); resuming sets it ``False`` (``JobResumed``,
  "Job resumed") and runs pods again from a new ``startTime``.
- **Events**, as the controller words them: ``SuccessfulCreate`` ("Created pod: {name}"),
  ``SuccessfulDelete``, ``Completed`` ("Job completed"), ``BackoffLimitExceeded``,
  ``Suspended`` and ``Resumed``.

kubesim's kubelets run containers until their pod is deleted, so a pod of a Job succeeds or
fails only when a client (a scenario, a test) writes its ``status.phase``, as a kubelet would.
Not modelled: the ``batch.kubernetes.io/job-tracking`` finalizer on the pods (and so
``uncountedTerminatedPods`` stays empty), ``activeDeadlineSeconds``, the pod failure and success
policies, ``backoffLimitPerIndex``, and ``ttlSecondsAfterFinished`` (the TTL controller's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubesim.apiserver.encoding import deep_copy
from kubesim.apiserver.objects import as_dict, as_int, deleting, is_ready, owner_reference
from kubesim.apiserver.storage import Key

if TYPE_CHECKING:
    from kubesim.cluster.workloads import Controllers

JSON = dict[str, Any]

COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
BACKOFF_MESSAGE = "Job has reached the specified backoff limit"
COMPLETED = "Reached expected number of succeeded pods"
# The pod failure back-off, virtual seconds: 10 s, doubled per failure, capped at six minutes
# (pkg/controller/job DefaultJobBackOff and MaxJobBackOff; the Job documentation's "Pod
# backoff failure policy").
POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 360.0
_TERMINAL = ("Succeeded", "Failed")
# JobStatus's fields in the order Go declares (and encodes) them.
_STATUS_ORDER = (
    "conditions",
    "startTime",
    "completionTime",
    "active",
    "succeeded",
    "failed",
    "terminating",
    "completedIndexes",
    "failedIndexes",
    "uncountedTerminatedPods",
    "ready",
)


class Jobs:
    """The Job controller of one server's :class:`~kubesim.cluster.workloads.Controllers`."""

    def __init__(self, controllers: Controllers) -> None:
        self.controllers = controllers
        self.server = controllers.server
        self.pods = self.server.resource("pods")
        self.jobs = self.server.resource("jobs")
        # When each ended pod (by uid) was first seen ended, and each Job's back-off timer.
        self._ended: dict[str, float] = {}
        self._timers: dict[Key, Any] = {}

    def sync(self, key: Key) -> None:
        job = self.controllers.live(self.jobs, key)
        if job is None or _finished(job):
            return
        spec, status = as_dict(job.get("spec")), deep_copy(as_dict(job.get("status")))
        pods = self.controllers.owned(self.pods, key[0], job)
        succeeded = [p for p in pods if _phase(p) == "Succeeded"]
        failed = [p for p in pods if _phase(p) == "Failed"]
        active = [p for p in pods if _phase(p) not in _TERMINAL and not deleting(p)]
        now = self.server.clock.timestamp()
        suspended = spec.get("suspend") is True
        conditions: list[JSON] = list(status.get("conditions") or [])
        events: list[tuple[str, str, bool]] = []
        if suspended:
            for pod in active:
                self._delete(job, pod)
            active = []
            if _set_condition(
                conditions, "Suspended", "True", "JobSuspended", "Job suspended", now
            ):
                events.append(("Suspended", "Job suspended", False))
        elif _set_condition(conditions, "Suspended", "False", "JobResumed", "Job resumed", now):
            events.append(("Resumed", "Job resumed", False))
            status["startTime"] = now  # a resumed Job starts its clock again
        else:
            status.setdefault("startTime", now)
        backoff_limit = as_int(spec.get("backoffLimit"), 6)
        done = self._complete(spec, succeeded, active)
        if not suspended and not done and len(failed) > backoff_limit:
            for pod in active:
                self._delete(job, pod)
            active = []
            for kind in ("FailureTarget", "Failed"):
                _set_condition(
                    conditions, kind, "True", "BackoffLimitExceeded", BACKOFF_MESSAGE, now
                )
            events.append(("BackoffLimitExceeded", BACKOFF_MESSAGE, True))
        elif not suspended and not done:
            retry_at = self._backoff_until(succeeded, failed)
            if retry_at is None:
                active = self._scale(job, spec, succeeded, active)
                done = self._complete(spec, succeeded, active)
            else:
                self._wake_at(key, retry_at)  # no new pod before then: the failure back-off
        if done:
            for kind in ("SuccessCriteriaMet", "Complete"):
                _set_condition(conditions, kind, "True", "CompletionsReached", COMPLETED, now)
            status["completionTime"] = now
            events.append(("Completed", "Job completed", False))
        self._write_status(job, status, conditions, pods, active, succeeded, failed)
        for reason, message, warning in events:
            self.controllers.record_event(job, reason, message, warning=warning)

    # -- the back-off after failed pods -----------------------------------------------------
    def _backoff_until(self, succeeded: list[JSON], failed: list[JSON]) -> float | None:
        """The virtual time before which the controller makes no new pod for the Job whose
        ``succeeded`` and ``failed`` pods these are, or None.

        After ``n`` failed pods since the last success the next pod waits
        ``min(10 s * 2 ** (n - 1), 6 min)`` from the last failure, as job_controller.go's
        backoff does (:data:`POD_FAILURE_BACKOFF`, :data:`MAX_POD_FAILURE_BACKOFF`).
        A pod's end is the time the controller first saw it ended (kubesim's pods carry no
        container finish times)."""
        now = self.server.clock.now()
        for pod in (*succeeded, *failed):
            self._ended.setdefault(pod["metadata"]["uid"], now)
        last_success = max((self._ended[p["metadata"]["uid"]] for p in succeeded), default=-1.0)
        failures = sorted(
            self._ended[p["metadata"]["uid"]]
            for p in failed
            if self._ended[p["metadata"]["uid"]] > last_success
        )
        if not failures:
            return None
        delay = min(POD_FAILURE_BACKOFF * 2 ** (len(failures) - 1), MAX_POD_FAILURE_BACKOFF)
        until = failures[-1] + delay
        return until if now < until else None

    def _wake_at(self, key: Key, when: float) -> None:
        """Sync ``key`` again at ``when`` (virtual seconds): the back-off's end."""
        previous = self._timers.pop(key, None)
        if previous is not None:
            previous.cancel()

        def wake() -> None:
            with self.server.lock:
                if self._timers.get(key) is timer:
                    del self._timers[key]
                    self.controllers.requeue("job", key)

        timer = self.server.clock.call_at(when, wake)
        self._timers[key] = timer

    # -- pods -------------------------------------------------------------------------------
    def _complete(self, spec: JSON, succeeded: list[JSON], active: list[JSON]) -> bool:
        completions = spec.get("completions")
        if completions is None:  # a work queue: done once one succeeded and none still run
            return bool(succeeded) and not active
        if _indexed(spec):
            return len(_indexes(succeeded)) >= as_int(completions, 1)
        return len(succeeded) >= as_int(completions, 1)

    def _scale(
        self, job: JSON, spec: JSON, succeeded: list[JSON], active: list[JSON]
    ) -> list[JSON]:
        parallelism = as_int(spec.get("parallelism"), 1)
        completions = spec.get("completions")
        if completions is None:
            # A work queue: parallelism pods until one succeeded; then what runs, runs on.
            wanted = len(active) if succeeded else parallelism
        else:
            remaining = as_int(completions, 1) - (
                len(_indexes(succeeded)) if _indexed(spec) else len(succeeded)
            )
            wanted = max(0, min(parallelism, remaining))
        if len(active) > wanted:
            # The newest go first (activePods sorted by creation, the tail deleted).
            for pod in sorted(active, key=_created)[wanted:]:
                self._delete(job, pod)
            return sorted(active, key=_created)[:wanted]
        indexes = self._free_indexes(spec, succeeded, active)
        made = list(active)
        for position in range(wanted - len(active)):
            if indexes is not None and position >= len(indexes):
                break
            index = indexes[position] if indexes is not None else None
            created = self.controllers.create_recorded(
                job,
                self.pods,
                self._pod_from(job, index),
                "Created pod: {name}",
                "Error creating: {error}",
            )
            if created is None:
                break
            made.append(created)
        return made

    def _free_indexes(
        self, spec: JSON, succeeded: list[JSON], active: list[JSON]
    ) -> list[int] | None:
        """An Indexed Job's indexes that neither succeeded nor run, lowest first."""
        if not _indexed(spec):
            return None
        taken = _indexes(succeeded) | _indexes(active)
        return [i for i in range(as_int(spec.get("completions"), 1)) if i not in taken]

    def _pod_from(self, job: JSON, index: int | None) -> JSON:
        template = deep_copy(as_dict(as_dict(job.get("spec")).get("template")))
        meta = as_dict(template.get("metadata"))
        name = job["metadata"]["name"]
        pod_meta: JSON = {"generateName": f"{name}-" if index is None else f"{name}-{index}-"}
        for field in ("labels", "annotations", "finalizers"):
            if meta.get(field):
                pod_meta[field] = meta[field]
        if index is not None:
            pod_meta["labels"] = {**as_dict(pod_meta.get("labels")), COMPLETION_INDEX: str(index)}
            pod_meta["annotations"] = {
                **as_dict(pod_meta.get("annotations")),
                COMPLETION_INDEX: str(index),
            }
        pod_meta["ownerReferences"] = [owner_reference(job)]
        spec = as_dict(template.get("spec"))
        if index is not None:
            spec = {**spec, "hostname": f"{name}-{index}"}
        return {"metadata": pod_meta, "spec": spec}

    def _delete(self, job: JSON, pod: JSON) -> None:
        self.controllers.delete_recorded(job, self.pods, pod, "Deleted pod: {name}")

    # -- status -----------------------------------------------------------------------------
    def _write_status(
        self,
        job: JSON,
        status: JSON,
        conditions: list[JSON],
        pods: list[JSON],
        active: list[JSON],
        succeeded: list[JSON],
        failed: list[JSON],
    ) -> None:
        current = self.server.storage.get(
            self.jobs, (job["metadata"]["namespace"], job["metadata"]["name"])
        )
        if current is None:
            return
        spec = as_dict(job.get("spec"))
        counts = {
            "active": len([p for p in active if not deleting(p)]),
            "succeeded": len(succeeded),
            "failed": len(failed),
        }
        for field, count in counts.items():
            if count:
                status[field] = count
            else:
                status.pop(field, None)
        status["ready"] = sum(1 for p in active if is_ready(p))
        status["terminating"] = sum(1 for p in pods if deleting(p) and _phase(p) not in _TERMINAL)
        status["uncountedTerminatedPods"] = {}
        if _indexed(spec):
            completed = _ranges(sorted(_indexes(succeeded)))
            if completed:
                status["completedIndexes"] = completed
            else:
                status.pop("completedIndexes", None)
        if conditions:
            status["conditions"] = conditions
        ordered = {k: status[k] for k in _STATUS_ORDER if k in status}
        ordered.update((k, v) for k, v in status.items() if k not in ordered)
        self.controllers.write_status(self.jobs, current.obj, ordered)


def _phase(pod: JSON) -> Any:
    return as_dict(pod.get("status")).get("phase")


def _indexed(spec: JSON) -> bool:
    return spec.get("completionMode") == "Indexed"


def _indexes(pods: list[JSON]) -> set[int]:
    found = set()
    for pod in pods:
        value = as_dict(pod["metadata"].get("annotations")).get(COMPLETION_INDEX)
        if isinstance(value, str) and value.isdigit():
            found.add(int(value))
    return found


def _ranges(indexes: list[int]) -> str:
    """An Indexed Job's completedIndexes: runs of consecutive indexes as ``a-b``."""
    runs: list[list[int]] = []
    for index in indexes:
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _created(pod: JSON) -> tuple[str, str]:
    return (str(pod["metadata"].get("creationTimestamp", "")), str(pod["metadata"]["name"]))


def _finished(job: JSON) -> bool:
    return any(
        isinstance(c, dict)
        and c.get("type") in ("Complete", "Failed")
        and c.get("status") == "True"
        for c in as_dict(job.get("status")).get("conditions") or []
    )


def _set_condition(
    conditions: list[JSON], kind: str, state: str, reason: str, message: str, now: str
) -> bool:
    """Set the ``kind`` condition (a ``Suspended=False`` only replaces a ``True`` one).
    Returns whether it changed."""
    for condition in conditions:
        if condition.get("type") == kind:
            if condition.get("status") == state:
                return False
            condition.update(
                status=state,
                reason=reason,
                message=message,
                lastProbeTime=now,
                lastTransitionTime=now,
            )
            return True
    if kind == "Suspended" and state == "False":
        return False  # never suspended: no condition to flip
    conditions.append(
        {
            "type": kind,
            "status": state,
            "lastProbeTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
    )
    return True


__all__ = ["COMPLETION_INDEX", "Jobs"]
