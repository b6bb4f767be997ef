"""Workloads: the objects and activity a scenario applies to the server."""

from kubesim.workload.pods import make_pod, populate_pods

__all__ = ["make_pod", "populate_pods"]
