import requests  # noqa: F401  (kubesim routes requests sessions for kubesim.invalid)
from kuryr_kubernetes import clients, config, watcher
from kuryr_kubernetes.cni.handlers import CNIPipeline
from kuryr_kubernetes.handlers.k8s_base import ResourceEventHandler


def key(pod):
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


class PodRegistry(ResourceEventHandler):
    OBJECT_KIND = "Pod"

    def __init__(self):
        super().__init__()
        self.pods = {}

    def on_present(self, pod, *args, **kwargs):
        self.pods[key(pod)] = pod

    on_finalize = on_present  # a pod being deleted (deletionTimestamp) is still there

    def on_deleted(self, pod, *args, **kwargs):
        self.pods.pop(key(pod), None)


class KuryrPods:
    def __init__(self):
        config.CONF.set_override("api_root", "http://kubesim.invalid", group="kubernetes")
        config.CONF.set_override("token_file", "", group="kubernetes")
        clients.setup_kubernetes_client()
        self.registry = PodRegistry()  # the CNI daemon's lives in its manager process

    def run(self):
        while True:
            pipeline = CNIPipeline()
            pipeline.register(self.registry)
            w = watcher.Watcher(pipeline)
            w.add("/api/v1/pods")
            try:
                w.start()
            except SystemExit:  # the watcher gave up: cotyledon starts its worker again
                if w.is_alive():
                    raise

    def view(self):
        return dict(self.registry.pods)


def factory(api_client):
    return KuryrPods()
