"""Apache Airflow's ``KubernetesJobWatcher`` as a store for ``kubesim check``.

What runs is Airflow's own code, unchanged (apache-airflow-providers-cncf-kubernetes,
``airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils``): the watcher the
KubernetesExecutor starts for its namespace. It builds its own client from Airflow's
configuration (``get_kube_client()``: ``load_incluster_config()``, which kubesim points at the
simulation), watches the pods labelled ``airflow-worker=<scheduler_job_id>`` and not yet
``airflow_executor_done=True``, and puts a ``KubernetesWatch`` on its queue when a pod
succeeds, fails, is deleted while running, or disappears without a graceful deletion (taken
to be adopted by another scheduler).

In Airflow the watcher is a ``multiprocessing.Process``; here its ``run()`` is called in
kubesim's controlled thread (no process is started). The watcher dies on any error it does not
handle (``run()`` re-raises after setting the resource version to "0"); the executor's
``AirflowKubernetesScheduler._health_check_kube_watchers()``, at its next ``sync()``, finds the
process dead and starts a new one from resource version "0" (``_make_kube_watcher``). The
store's ``run()`` does the same, one scheduler loop (a virtual second) later.

The watcher keeps no cache, so there is no ``view()``: a record of what it reported holds only
finished pods, never the running ones the server has. Its output is effects: ``effects()``
drains the queue into ``(namespace/name, state, resourceVersion)`` keys, and ``expects()``
says which key Airflow's ``process_status`` produces for a change (terminal phases, a deletion
of a running pod, a deletion with no deletionTimestamp), so kubesim checks that every pod's
end is reported (effects-expected), and once per change (effects-once).
"""

from __future__ import annotations

import queue
import time
from typing import Any

from airflow.providers.cncf.kubernetes.executors.kubernetes_executor_types import (
    ADOPTED,
    POD_REVOKED_KEY,
)
from airflow.providers.cncf.kubernetes.executors.kubernetes_executor_utils import (
    KubernetesJobWatcher,
)
from airflow.providers.cncf.kubernetes.kube_config import KubeConfig

SCHEDULER_JOB_ID = "1"


def _state(state: Any) -> str:
    """A queue entry's state as a name: None is how the watcher says a pod succeeded."""
    if state is None:
        return "succeeded"
    return str(getattr(state, "value", state))


class AirflowJobWatcher:
    def __init__(self, namespace: str, kube_config: Any) -> None:
        self.namespace = namespace
        self.kube_config = kube_config
        self.results: queue.Queue[Any] = queue.Queue()
        self.restarts = 0

    def watcher(self) -> KubernetesJobWatcher:
        """What ``AirflowKubernetesScheduler._make_kube_watcher`` builds (it then starts it)."""
        return KubernetesJobWatcher(
            namespace=self.namespace,
            watcher_queue=self.results,
            resource_version="0",
            scheduler_job_id=SCHEDULER_JOB_ID,
            kube_config=self.kube_config,
        )

    def run(self) -> None:
        while True:
            try:
                self.watcher().run()
            except Exception:  # the process died; the scheduler's next sync() starts another
                self.restarts += 1
                time.sleep(1)

    def effects(self) -> list[tuple[str, str, str]]:
        done = []
        while True:
            try:
                result = self.results.get_nowait()
            except queue.Empty:
                return done
            key = f"{result.namespace}/{result.pod_name}"
            done.append((key, _state(result.state), result.resource_version))

    def expects(self, event: dict[str, Any]) -> tuple[str, str, str] | None:
        """The key Airflow's ``process_status`` puts on the queue for this change, if any."""
        pod = event["object"]
        meta = pod["metadata"]
        if POD_REVOKED_KEY in (meta.get("labels") or {}):
            return None
        phase = (pod.get("status") or {}).get("phase")
        key = f"{meta['namespace']}/{meta['name']}"
        if event["type"] == "DELETED" and not meta.get("deletionTimestamp"):
            return (key, ADOPTED, meta["resourceVersion"])
        state = {"Succeeded": "succeeded", "Failed": "failed"}.get(phase or "")
        if event["type"] == "DELETED" and phase == "Running":
            state = "failed"  # deleted before it could complete
        return None if state is None else (key, state, meta["resourceVersion"])


def factory(api_client: Any) -> AirflowJobWatcher:
    kube_config = KubeConfig()  # [kubernetes_executor] from Airflow's configuration
    return AirflowJobWatcher(kube_config.kube_namespace, kube_config)
