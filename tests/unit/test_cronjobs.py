"""CronJobs: schedules parsed as robfig/cron parses them (kubesim.apiserver.cron), validated as
the API server validates them, and the CronJob controller (kubesim.cluster.cronjobs) making a
Job at each scheduled time of the server's virtual clock."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from kubesim import APIServer
from kubesim.apiserver import status as st
from kubesim.apiserver.cron import ScheduleError, parse
from kubesim.cluster import Cluster

NS = "default"
JSON = dict[str, Any]
UTC = dt.timezone.utc
START = dt.datetime(2024, 1, 1, 0, 0, 30, tzinfo=UTC)  # a Monday


# -- schedules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "after", "fires"),
    [
        ("*/5 * * * *", START, "2024-01-01 00:05"),
        ("5/15 * * * *", START, "2024-01-01 00:05"),
        ("1-5/2 * * * *", START, "2024-01-01 00:01"),
        ("0 9 * * MON-FRI", START, "2024-01-01 09:00"),
        ("0 0 * * sat", START, "2024-01-06 00:00"),
        ("0 0 1 JAN,jul *", START, "2024-07-01 00:00"),
        ("@hourly", START, "2024-01-01 01:00"),
        ("@daily", START, "2024-01-02 00:00"),
        ("@weekly", START, "2024-01-07 00:00"),
        ("@monthly", START, "2024-02-01 00:00"),
        ("@yearly", START, "2025-01-01 00:00"),
        ("@every 90s", START, "2024-01-01 00:02"),
        # Day of month and day of week both restricted: either matches.
        ("0 0 13 * 5", START, "2024-01-05 00:00"),
        # One of them a star: the other decides (13th of the month only).
        ("0 0 13 * *", START, "2024-01-13 00:00"),
        # A stepped star is no star: the 3rd, or any Friday.
        ("0 0 */2 * 5", dt.datetime(2024, 1, 1, 1, tzinfo=UTC), "2024-01-03 00:00"),
        ("0 0 29 2 *", START, "2024-02-29 00:00"),
    ],
)
def test_a_schedule_fires_at_the_first_matching_minute_after(
    schedule: str, after: dt.datetime, fires: str
) -> None:
    when = parse(schedule).next(after)
    assert when is not None
    assert when.strftime("%Y-%m-%d %H:%M") == fires


def test_a_schedule_that_never_fires_has_no_next_time() -> None:
    assert parse("0 0 30 2 *").next(START) is None


@pytest.mark.parametrize(
    ("schedule", "error"),
    [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("*/2/3 * * * *", "too many slashes: */2/3"),
        ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
        ("@fortnightly", "unrecognized descriptor: @fortnightly"),
        ("@every soon", 'failed to parse duration @every soon: time: invalid duration "soon"'),
    ],
)
def test_a_bad_schedule_is_refused_with_robfigs_message(schedule: str, error: str) -> None:
    with pytest.raises(ScheduleError) as refused:
        parse(schedule)
    assert str(refused.value) == error


def cron_job(name: str = "hello", schedule: str = "*/1 * * * *", **spec: Any) -> JSON:
    template = {
        "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}
    }
    job_template = {"metadata": {"labels": {"app": name}}, "spec": {"template": template}}
    return {
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": job_template, **spec},
    }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"schedule": "* * *"},
            'spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]',
        ),
        (
            {"schedule": "TZ=UTC 0 0 * * *"},
            'spec.schedule: Invalid value: "TZ=UTC 0 0 * * *": cannot use TZ or CRON_TZ in '
            "schedule, use timeZone field instead",
        ),
        (
            {"timeZone": "Mars/Base"},
            'spec.timeZone: Invalid value: "Mars/Base": unknown time zone Mars/Base',
        ),
        ({"schedule": ""}, "spec.schedule: Required value"),
    ],
)
def test_the_server_refuses_a_bad_schedule_or_time_zone(spec: JSON, message: str) -> None:
    server = APIServer()
    body = cron_job()
    body["spec"].update(spec)
    with pytest.raises(st.StatusError) as refused:
        server.create("cronjobs", body, namespace=NS)
    assert refused.value.code == 422
    assert refused.value.status["message"] == f'CronJob.batch "hello" is invalid: {message}'


# -- the controller -----------------------------------------------------------------------


def job_names(server: APIServer) -> list[str]:
    return [j["metadata"]["name"] for j in server.list("jobs", namespace=NS)]


def events(server: APIServer) -> list[tuple[str, str]]:
    return [
        (e["reason"], e["message"])
        for e in server.list("events", namespace=NS)
        if e["involvedObject"]["kind"] == "CronJob"
    ]


def complete(server: APIServer, name: str) -> None:
    """What the Job controller writes when the Job's pods have succeeded."""
    job = server.get("jobs", name, namespace=NS)
    now = server.clock.timestamp()
    job["status"] = {
        "conditions": [{"type": "Complete", "status": "True"}],
        "completionTime": now,
        "startTime": now,
    }
    server.update("jobs", job, namespace=NS, subresource="status")


def test_a_cron_job_makes_a_job_at_each_scheduled_minute_of_the_clock() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("cronjobs", cron_job(), namespace=NS)
    assert job_names(server) == []
    server.clock.advance_to(59)
    assert job_names(server) == []  # not yet the minute
    server.clock.advance_to(60)
    minute = 28401121  # 2024-01-01T00:01:00Z in minutes since the Unix epoch
    assert job_names(server) == [f"hello-{minute}"]
    job = server.get("jobs", f"hello-{minute}", namespace=NS)
    assert job["metadata"]["labels"]["app"] == "hello"
    assert job["metadata"]["annotations"] == {
        "batch.kubernetes.io/cronjob-scheduled-timestamp": "2024-01-01T00:01:00Z"
    }
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("CronJob", "hello", True)
    status = server.get("cronjobs", "hello", namespace=NS)["status"]
    assert status["lastScheduleTime"] == "2024-01-01T00:01:00Z"
    assert [(r["kind"], r["name"], r["uid"]) for r in status["active"]] == [
        ("Job", f"hello-{minute}", job["metadata"]["uid"])
    ]
    assert ("SuccessfulCreate", f"Created job hello-{minute}") in events(server)
    # Its Job ran its pod (the Job controller).
    assert len(server.list("pods", namespace=NS)) == 1
    server.clock.advance_to(180)
    assert job_names(server) == [f"hello-{minute}", f"hello-{minute + 1}", f"hello-{minute + 2}"]


def test_completed_jobs_leave_active_and_old_ones_go_past_the_history_limit() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("cronjobs", cron_job(successfulJobsHistoryLimit=1), namespace=NS)
    server.clock.advance_to(60)
    (first,) = job_names(server)
    complete(server, first)
    status = server.get("cronjobs", "hello", namespace=NS)["status"]
    assert "active" not in status
    assert status["lastSuccessfulTime"] == "2024-01-01T00:01:00Z"
    assert ("SawCompletedJob", f"Saw completed job: {first}, condition: Complete") in events(server)
    server.clock.advance_to(120)
    second = job_names(server)[-1]
    complete(server, second)
    # Two completed, a limit of one: the older goes, with its pods.
    assert job_names(server) == [second]
    assert ("SuccessfulDelete", f"Deleted job {first}") in events(server)
    assert {p["metadata"]["labels"]["job-name"] for p in server.list("pods", namespace=NS)} == {
        second
    }


def test_forbid_skips_a_time_while_a_job_runs_and_replace_deletes_it() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("cronjobs", cron_job("forbid", concurrencyPolicy="Forbid"), namespace=NS)
    server.create("cronjobs", cron_job("replace", concurrencyPolicy="Replace"), namespace=NS)
    server.clock.advance_to(60)
    server.clock.advance_to(120)
    names = job_names(server)
    assert [n for n in names if n.startswith("forbid-")] == ["forbid-28401121"]
    assert [n for n in names if n.startswith("replace-")] == ["replace-28401122"]
    reasons = [reason for reason, _ in events(server)]
    assert "JobAlreadyActive" in reasons
    assert ("SuccessfulDelete", "Deleted job replace-28401121") in events(server)


def test_a_suspended_cron_job_runs_nothing_and_a_late_one_misses_its_deadline() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("cronjobs", cron_job(suspend=True), namespace=NS)
    server.clock.advance_to(600)
    assert job_names(server) == []
    # Resumed 10 minutes in: the most recent time (00:10) is run once, not the ten missed.
    server.patch("cronjobs", "hello", {"spec": {"suspend": False}}, namespace=NS)
    assert job_names(server) == ["hello-28401130"]
    # With a deadline that time is past, it is missed.
    server.create(
        "cronjobs", cron_job("late", startingDeadlineSeconds=10, suspend=True), namespace=NS
    )
    server.clock.advance_to(700)  # 00:11:40, 40 s after the 00:11 time
    server.patch("cronjobs", "late", {"spec": {"suspend": False}}, namespace=NS)
    assert [n for n in job_names(server) if n.startswith("late-")] == []
    missed = (
        "MissSchedule",
        "Missed scheduled time to start a job: Mon, 01 Jan 2024 00:11:00 +0000",
    )
    assert missed in events(server)


def test_a_time_zone_moves_the_schedule_and_the_scheduled_timestamp() -> None:
    server = Cluster(seed=1, controllers=True)
    # 09:00 in Tokyo is 00:00 UTC.
    server.create("cronjobs", cron_job(schedule="0 9 * * *", timeZone="Asia/Tokyo"), namespace=NS)
    server.clock.advance_to(24 * 3600)
    (name,) = job_names(server)
    job = server.get("jobs", name, namespace=NS)
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == (
        "2024-01-02T09:00:00+09:00"
    )


def test_a_schedule_that_never_fires_is_reported_and_a_deleted_cron_job_stops() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create("cronjobs", cron_job("never", schedule="0 0 30 2 *"), namespace=NS)
    assert (
        "InvalidSchedule",
        "invalid schedule: 0 0 30 2 * : time difference between two schedules is less than 1 "
        "second",
    ) in events(server)
    server.create("cronjobs", cron_job(), namespace=NS)
    server.clock.advance_to(60)
    server.delete("cronjobs", "hello", namespace=NS)
    # Its Job goes with it (a CronJob's dependents are deleted in the background), and its
    # timer with it: no Job is made after.
    assert [n for n in job_names(server) if n.startswith("hello-")] == []
    server.clock.advance_to(600)
    assert [n for n in job_names(server) if n.startswith("hello-")] == []


def test_the_same_seed_and_clock_make_the_same_jobs() -> None:
    def run() -> list[tuple[str, str]]:
        server = Cluster(seed=7, controllers=True)
        server.create("cronjobs", cron_job(schedule="*/2 * * * *"), namespace=NS)
        server.clock.advance_to(600)
        return [(j["metadata"]["name"], j["metadata"]["uid"]) for j in server.list("jobs")]

    first = run()
    assert len(first) == 5
    assert run() == first
