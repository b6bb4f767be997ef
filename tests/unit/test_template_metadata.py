"""Embedded ObjectMeta: a template's zero ``creationTimestamp`` is written as null, as Go's JSON
encoder writes a zero ``metav1.Time`` (a struct, which ``omitempty`` never drops)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import APIServer
from kubesim.cluster import Cluster

NS = "default"
POD_SPEC = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
SELECTOR = {"matchLabels": {"app": "a"}}
TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "a"}}, "spec": POD_SPEC}


@pytest.mark.parametrize(
    ("plural", "spec", "path"),
    [
        ("deployments", {"selector": SELECTOR, "template": TEMPLATE}, ("spec", "template")),
        ("replicasets", {"selector": SELECTOR, "template": TEMPLATE}, ("spec", "template")),
        ("daemonsets", {"selector": SELECTOR, "template": TEMPLATE}, ("spec", "template")),
        (
            "statefulsets",
            {"selector": SELECTOR, "template": TEMPLATE, "serviceName": "s"},
            ("spec", "template"),
        ),
        ("replicationcontrollers", {"template": TEMPLATE}, ("spec", "template")),
        ("jobs", {"template": {"spec": POD_SPEC}}, ("spec", "template")),
        ("podtemplates", None, ("template",)),
    ],
)
def test_a_template_shows_a_null_creation_timestamp_first_in_go_order(
    plural: str, spec: dict[str, Any] | None, path: tuple[str, ...]
) -> None:
    server = APIServer()
    body: dict[str, Any] = {"metadata": {"name": "x"}}
    if spec is None:
        body["template"] = TEMPLATE
    else:
        body["spec"] = spec
    sent = repr(body)
    created = server.create(plural, body, namespace=NS)
    assert repr(body) == sent  # the caller's body is left as it was
    holder = created
    for key in path:
        holder = holder[key]
    assert next(iter(holder)) == "metadata"
    meta = holder["metadata"]
    assert next(iter(meta)) == "creationTimestamp"
    assert meta["creationTimestamp"] is None
    # An update keeps it; the pods made from a template never get it.
    again = server.update(plural, created, namespace=NS)
    holder = again
    for key in path:
        holder = holder[key]
    assert holder["metadata"]["creationTimestamp"] is None


def test_a_cron_jobs_job_template_and_its_pod_template_both_have_one() -> None:
    server = APIServer()
    job_template = {"spec": {"template": {"spec": POD_SPEC}}}
    created = server.create(
        "cronjobs",
        {"metadata": {"name": "c"}, "spec": {"schedule": "* * * * *", "jobTemplate": job_template}},
        namespace=NS,
    )
    made = created["spec"]["jobTemplate"]
    assert made["metadata"] == {"creationTimestamp": None}
    assert made["spec"]["template"]["metadata"] == {"creationTimestamp": None}
    assert list(made) == ["metadata", "spec"]


def test_pods_made_from_a_template_have_a_real_creation_timestamp() -> None:
    server = Cluster(seed=1, controllers=True)
    server.create(
        "replicasets",
        {"metadata": {"name": "rs"}, "spec": {"selector": SELECTOR, "template": TEMPLATE}},
        namespace=NS,
    )
    (pod,) = server.list("pods", namespace=NS)
    assert pod["metadata"]["creationTimestamp"] == server.clock.timestamp()
