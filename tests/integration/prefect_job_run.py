"""prefect-kubernetes' ``KubernetesJobRun.wait_for_completion`` as a store for ``kubesim check``.

In prefect-kubernetes 0.8.0 the worker no longer follows its Job (``KubernetesWorker.run``
creates it and returns; the observer, a kopf operator that needs a Prefect events server,
reports what happens to it). The loop left that follows a Job to its end is the ``KubernetesJob``
block's: ``run_namespaced_job`` calls ``KubernetesJob.trigger()`` and then
``KubernetesJobRun.wait_for_completion()``, which reads the Job and lists its pods every
``interval_seconds`` until a ``Complete`` or ``Failed`` condition.

Here one ``KubernetesJobRun`` waits on each Job of the simulated world, as ``trigger()`` would
have returned it (the run holds the manifest; it reads the Job by name), with the block's
defaults (``interval_seconds=5``, ``delete_after_completion=True``). The store finds the Jobs
by listing them every 10 seconds (kubesim's workload creates them, not ``trigger()``). Its
effects are the outcomes: ``(uid, "Complete")`` when ``wait_for_completion`` returns,
``(uid, "Failed")`` when it raises the ``RuntimeError`` it raises for a failed Job,
``(uid, "deleted")`` for a 404 (the Job is gone). Any other exception is the flow run failing:
``run()`` raises it, as ``run_namespaced_job`` does. ``expects()`` asks for the outcome of
every Job that ended (its last state, or its deletion, which carries it): kubesim asks it about
the Jobs of the store's lists (it polls, it never watches).
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes_asyncio import client, config
from prefect_kubernetes.jobs import KubernetesJob, KubernetesJobRun


class JobRuns:
    def __init__(self) -> None:
        self.outcomes: list[tuple[str, str]] = []
        self.waiting: dict[str, asyncio.Task[None]] = {}

    async def wait(self, job: dict[str, Any]) -> None:
        meta = job["metadata"]
        block = KubernetesJob(v1_job=job, namespace=meta["namespace"])
        run = KubernetesJobRun(kubernetes_job=block, v1_job_model=job)
        try:
            await run.await_for_completion()
            outcome = "Complete"
        except RuntimeError:  # "Job ... failed due to ...": the Job failed
            outcome = "Failed"
        except client.ApiException as exc:
            if exc.status != 404:
                raise  # the flow run fails: run() re-raises it
            outcome = "deleted"  # the Job is gone: nothing left to wait for
        self.outcomes.append((meta["uid"], outcome))

    async def run(self) -> None:
        await config.load_kube_config()
        async with client.ApiClient() as api:
            batch = client.BatchV1Api(api)
            while True:
                try:
                    listed = await batch.list_job_for_all_namespaces()
                except Exception:  # list again in 10 s
                    listed = None
                for task in self.waiting.values():
                    if task.done():
                        task.result()  # a wait that raised: the flow run failed
                if listed is not None:
                    jobs = {job.metadata.uid: job for job in listed.items}
                    self.waiting = {uid: self.waiting[uid] for uid in jobs if uid in self.waiting}
                    for uid, job in jobs.items():
                        if uid not in self.waiting:
                            manifest = api.sanitize_for_serialization(job)
                            self.waiting[uid] = asyncio.create_task(self.wait(manifest))
                await asyncio.sleep(10)

    def effects(self) -> list[tuple[str, str]]:
        done, self.outcomes = self.outcomes, []
        return done

    def expects(self, event: dict[str, Any]) -> tuple[str, str] | None:
        job = event["object"]
        if job.get("kind") != "Job":
            return None
        for condition in (job.get("status") or {}).get("conditions") or ():
            if condition["type"] in ("Complete", "Failed") and condition["status"] == "True":
                return (job["metadata"]["uid"], condition["type"])
        return None


async def factory(api_client: Any) -> JobRuns:
    return JobRuns()
