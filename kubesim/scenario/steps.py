"""Scenario steps: the property layer's one data structure.

A scenario is a plain list of steps. A step is a small frozen object with one verb and its
arguments; ``str(step)`` is one line a person reads (``expire watches``, ``compact history``,
``patch labels of 40 pods (app=v3)``). Steps pick their targets by *position* among the live
objects in key order (``index`` modulo how many there are), never by name: a scenario stays
valid however Hypothesis shrinks the steps before it, and a smaller index is a simpler case.
When a step is applied it returns the *resolved* line (``delete team-0/web-7 while
disconnected``), which is what failure reports print.

Steps act on a :class:`World`: the server plus the few things only the run can do (start a
reader thread, crash and restart the store, let virtual time pass). The runner
(:mod:`kubesim.scenario.run`) implements it; the steps know nothing else about the run.

Every fault of the vocabulary has a step (the ``fault`` column of :data:`STEP_KINDS`), and every
step is also a documented verb on the server or the simulation, for people who drive scenarios
by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from kubesim.apiserver.faults import FAILABLE_VERBS
from kubesim.apiserver.server import APIServer

Key = tuple[str, str]


class World(Protocol):
    """What steps act on. Implemented by the scenario runner."""

    server: APIServer

    def live_pods(self) -> list[Key]:
        """The pods on the server, (namespace, name), in key order."""
        ...

    def new_pod_key(self) -> Key:
        """A fresh pod key: a name never used before in this run, in one of the namespaces."""
        ...

    def fresh_value(self) -> int:
        """A number never handed out before in this run (for label and annotation values)."""
        ...

    def start_reader(self) -> str | None:
        """Start a controlled thread that calls the store's ``read()`` while the store reacts
        to the next step; returns its name (None when the store has no ``read()``)."""
        ...

    def crash_and_restart_store(self) -> None:
        """End the store's threads where they are; build a fresh store and run it again."""
        ...

    def stop_and_restart_store(self, *, during_list: bool, during_event: bool = False) -> str:
        """Call the store's ``stop()`` (now, while its next list is in flight, or as it reads
        its next watch event), judge that its threads end, then start it again; returns what
        happened."""
        ...

    def advance(self, seconds: float) -> None:
        """Let virtual time pass, timer by timer, the store reacting after each."""
        ...

    def resources(self) -> list[str]:
        """The resources the workload writes (``pods``, ``jobs.batch``): the ones declared,
        else the ones the store watches, else pods (:mod:`kubesim.scenario.workload`)."""
        ...

    def live(self, resource: str) -> list[Key]:
        """The objects of ``resource`` on the server, (namespace, name), in key order."""
        ...

    def deletable(self, resource: str) -> list[Key]:
        """:meth:`live` but the pinned objects (``Setup(pinned=...)``): those a step may
        delete or terminate."""
        ...

    def new_key(self, resource: str) -> Key:
        """A fresh key for a new object of ``resource`` (namespace "" if cluster-scoped)."""
        ...

    def new_object(self, resource: str, key: Key) -> Any:
        """A new object of ``resource`` for ``key``, in the store's scope."""
        ...


class Step:
    """Base of every step: ``kind`` names it in :data:`STEP_KINDS`; ``apply`` runs it."""

    kind: ClassVar[str]

    def apply(self, world: World) -> str:
        """Do the step; return the resolved line (targets named)."""
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **vars(self)}


def _pick(world: World, index: int, *, ending: bool = False) -> Key | None:
    """The pod at ``index`` (modulo) among the live ones; ``ending``: among those a step may
    delete or terminate (not the pinned)."""
    live = world.deletable("pods") if ending else world.live_pods()
    return live[index % len(live)] if live else None


def _pod_on(world: World, key: Key, ip: str | None) -> Any:
    """A new pod for ``key`` that comes up on ``ip`` (an address another pod had)."""
    pod = world.new_object("pods", key)
    if ip:  # a clone of the user's pod may come without a status
        pod.setdefault("status", {})["podIP"] = ip
    return pod


def _create(world: World, resource: str, keys: list[Key]) -> None:
    for key in keys:
        world.server.create(
            resource, world.new_object(resource, key), namespace=key[0] or None, copy=False
        )


def _of_each(world: World, count: int) -> list[tuple[str, list[Key]]]:
    """The first ``count`` live objects of each of the workload's resources."""
    return [(resource, world.live(resource)[:count]) for resource in world.resources()]


def _counts(chosen: list[tuple[str, list[Key]]]) -> str:
    """``3 pods``, or ``3 pods, 2 jobs``: how many objects of each resource."""
    return ", ".join(_count(len(keys), _singular(resource)) for resource, keys in chosen)


def _singular(resource: str) -> str:
    plural = resource.partition(".")[0]
    if plural.endswith(("ses", "xes")):
        return plural[:-2]  # statuses, ingresses, boxes
    if plural.endswith("ies"):
        return plural[:-3] + "y"  # policies
    return plural[:-1] if plural.endswith("s") else plural


# -- workload ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreatePods(Step):
    """``count`` new pods, under names never used before in the run."""

    count: int
    kind: ClassVar[str] = "create"

    def apply(self, world: World) -> str:
        lines = []
        for resource in world.resources():
            keys = [world.new_key(resource) for _ in range(self.count)]
            _create(world, resource, keys)
            lines.append(f"create {_names(keys)}")
        return "; ".join(lines)

    def __str__(self) -> str:
        return f"create {_count(self.count, 'pod')}"


@dataclass(frozen=True)
class DeletePods(Step):
    """Delete ``count`` live pods, from position ``index`` among them in key order."""

    count: int
    index: int = 0
    kind: ClassVar[str] = "delete"

    def apply(self, world: World) -> str:
        lines = []
        for resource in world.resources():
            chosen = self.chosen(world, resource)
            if not chosen:
                lines.append(f"delete {resource.partition('.')[0]}: none left")
                continue
            for namespace, name in chosen:
                world.server.delete(resource, name, namespace=namespace or None)
            lines.append(f"delete {_names(chosen)}")
        return "; ".join(lines)

    def chosen(self, world: World, resource: str = "pods") -> list[Key]:
        """The objects this step deletes: ``count`` from position ``index``, in key order
        (the pinned ones left out)."""
        live = world.deletable(resource)
        return [live[(self.index + i) % len(live)] for i in range(min(self.count, len(live)))]

    def __str__(self) -> str:
        return f"delete {_count(self.count, 'pod')} from position {self.index}"


@dataclass(frozen=True)
class ChurnPods(Step):
    """A rollout: delete ``count`` pods and create as many under new names."""

    count: int
    kind: ClassVar[str] = "churn"

    def apply(self, world: World) -> str:
        deleted = DeletePods(self.count).apply(world)
        created = CreatePods(self.count).apply(world)
        return f"churn: {deleted}; {created}"

    def __str__(self) -> str:
        return f"churn {_count(self.count, 'pod')} (delete, create new names)"


# The label keys a scenario churns: the ones every pod carries (app, tier), one added later
# (version) and one no pod has at first (team). A store indexing any of them sees it change.
LABEL_KEYS = ("version", "app", "tier", "team")


@dataclass(frozen=True)
class PatchLabels(Step):
    """Label storm (F11): ``count`` pods get label ``key``: one shared value, unique values (a
    fresh value per pod, never seen before), or the key removed."""

    count: int
    value: str = "v2"
    unique: bool = False
    key: str = "version"
    remove: bool = False
    kind: ClassVar[str] = "labels"

    def apply(self, world: World) -> str:
        chosen = _of_each(world, self.count)
        for resource, live in chosen:
            for number, (namespace, name) in enumerate(live):
                if self.remove:
                    value: str | None = None
                elif self.unique:
                    value = f"{self.value}-{world.fresh_value()}-{number}"
                else:
                    value = self.value
                world.server.patch(
                    resource,
                    name,
                    {"metadata": {"labels": {self.key: value}}},
                    namespace=namespace or None,
                    copy=False,
                )
        return f"patch labels of {_counts(chosen)} ({self._what()})"

    def _what(self) -> str:
        if self.remove:
            return f"{self.key} removed"
        return f"{self.key}: unique values" if self.unique else f"{self.key}={self.value}"

    def __str__(self) -> str:
        return f"patch labels of {_count(self.count, 'pod')} ({self._what()})"


@dataclass(frozen=True)
class PatchMetadata(Step):
    """Annotations and owners change: ``count`` pods get annotation ``key`` (a fresh value, or
    removed), or, ``owner``, a new ownerReference (a ReplicaSet that adopted them)."""

    count: int
    key: str = "example.com/revision"
    remove: bool = False
    owner: bool = False
    kind: ClassVar[str] = "annotate"

    def apply(self, world: World) -> str:
        chosen = _of_each(world, self.count)
        number = world.fresh_value()
        value = f"r{number}"
        for resource, namespace, name in [(r, ns, n) for r, keys in chosen for ns, n in keys]:
            if self.owner:
                patch: dict[str, Any] = {
                    "metadata": {
                        "ownerReferences": [
                            {
                                "apiVersion": "apps/v1",
                                "kind": "ReplicaSet",
                                "name": f"web-{number}",
                                "uid": f"00000000-0000-4000-8000-{number:012d}",
                                "controller": True,
                            }
                        ]
                    }
                }
            else:
                patch = {"metadata": {"annotations": {self.key: None if self.remove else value}}}
            world.server.patch(resource, name, patch, namespace=namespace or None, copy=False)
        return self._what(_counts(chosen))

    def _what(self, objects: int | str) -> str:
        pods = _count(objects, "pod") if isinstance(objects, int) else objects
        if self.owner:
            return f"a new owner for {pods} (ReplicaSet web-N)"
        if self.remove:
            return f"remove annotation {self.key} of {pods}"
        return f"annotate {pods} ({self.key}: a fresh value)"

    def __str__(self) -> str:
        return self._what(self.count)


# What a status update does to a pod, as the kubelet reports its lifecycle.
STATUS_CHANGES = ("terminate", "not-ready", "ready", "restart")


@dataclass(frozen=True)
class UpdatePodStatus(Step):
    """A status update of the pod at position ``index``:

    - ``terminate`` (F10): the phase goes to ``phase`` and podIP is cleared in the same
      MODIFIED, as the kubelet coalesces them;
    - ``not-ready`` / ``ready``: the Ready condition (and the containers' readiness) flips;
    - ``restart``: a container restarts, the pod comes back on a new podIP (a sandbox
      recreated), the old IP free for another pod.
    """

    index: int
    phase: str = "Failed"
    change: str = "terminate"
    kind: ClassVar[str] = "status"

    def apply(self, world: World) -> str:
        if self.change not in STATUS_CHANGES:
            raise ValueError(f"change must be one of {STATUS_CHANGES}, got {self.change!r}")
        lines = [self._pod(world)]
        ending = self.change == "terminate"
        for resource in world.resources():
            if resource in _OTHER_STATUS:
                live = world.deletable(resource) if ending else world.live(resource)
                if live:
                    key = live[self.index % len(live)]
                    lines.append(_OTHER_STATUS[resource](world, key, self.change, self.phase))
        return "; ".join(lines)

    def _pod(self, world: World) -> str:
        key = _pick(world, self.index, ending=self.change == "terminate")
        if key is None:
            return "update status: no pods"
        namespace, name = key
        status: dict[str, Any]
        if self.change == "terminate":
            status = {"phase": self.phase, "podIP": None, "podIPs": None}
            what = f"phase {self.phase}, podIP cleared"
        elif self.change in ("ready", "not-ready"):
            ready = "True" if self.change == "ready" else "False"
            status = {"conditions": [{"type": "Ready", "status": ready}]}
            what = f"Ready={ready}"
        else:
            ip = f"10.2.{world.fresh_value() % 256}.{world.fresh_value() % 256}"
            status = {"podIP": ip, "podIPs": [{"ip": ip}]}
            what = f"restarted on podIP {ip}"
        world.server.patch(
            "pods", name, {"status": status}, namespace=namespace, subresource="status", copy=False
        )
        return f"update status of {namespace}/{name}: {what}"

    def __str__(self) -> str:
        what = {
            "terminate": f"phase {self.phase}, podIP cleared",
            "ready": "Ready=True",
            "not-ready": "Ready=False",
            "restart": "restarted on a new podIP",
        }.get(self.change, self.change)
        return f"update status of pod at position {self.index}: {what}"


@dataclass(frozen=True)
class ReusePodIP(Step):
    """IP reuse (F10), as a node's IPAM does it: the pod at position ``index`` terminates (phase
    Succeeded, podIP cleared in the same update) and a new pod gets its IP. ``racing``: the new
    pod is reported first, before the old one's status catches up (the kubelet's status update
    is late; for a moment two pods claim the IP). ``delete_old``: the terminated pod is then
    deleted (garbage-collected after the new one started); racing, it is deleted before its
    termination was ever reported (force-deleted, evicted), still showing the IP."""

    index: int
    delete_old: bool = False
    racing: bool = False
    kind: ClassVar[str] = "ip-reuse"

    def apply(self, world: World) -> str:
        key = _pick(world, self.index, ending=True)
        if key is None:
            return "reuse a pod IP: no pods"
        namespace, name = key
        ip = world.server.get("pods", name, namespace=namespace).get("status", {}).get("podIP")
        new = world.new_pod_key()

        def terminate() -> None:
            world.server.patch(
                "pods",
                name,
                {"status": {"phase": "Succeeded", "podIP": None, "podIPs": None}},
                namespace=namespace,
                subresource="status",
                copy=False,
            )

        if not self.racing:
            terminate()
        world.server.create(
            "pods", _pod_on(world, new, ip or "10.9.9.9"), namespace=new[0], copy=False
        )
        if self.racing and not self.delete_old:
            terminate()
        first = "reported after" if self.racing else "terminates"
        line = f"{namespace}/{name} {first}; {new[0]}/{new[1]} gets its podIP ({ip})"
        if self.racing:
            line = f"{new[0]}/{new[1]} gets the podIP of {namespace}/{name} ({ip}), whose "
            line += (
                "termination is never reported"
                if self.delete_old
                else ("termination is reported after")
            )
        if self.delete_old:
            world.server.delete("pods", name, namespace=namespace)
            line += f"; {namespace}/{name} deleted"
        return line

    def __str__(self) -> str:
        then = ", then it is deleted" if self.delete_old else ""
        if self.racing:
            return (
                f"a new pod gets the podIP of the pod at position {self.index} before its "
                f"termination is reported{then}"
            )
        return f"the pod at position {self.index} terminates and a new pod gets its podIP{then}"


def _job_status(world: World, key: Key, change: str, phase: str) -> str:
    """A Job's status as its pods end: ``terminate`` finishes it (``Complete`` after a pod
    Succeeded, else ``Failed``), ``ready``/``not-ready`` counts its pod ready or not,
    ``restart`` counts a failed pod and a new one active. Where the Job controller runs
    (``Setup(controllers=True)``) it owns the status: the step ends or readies one of the Job's
    pods instead, and the controller writes what follows."""
    namespace, name = key
    if getattr(world.server, "controllers", None) is not None:
        pods = [
            pod_key
            for pod_key in world.live("pods")
            if pod_key[0] == namespace and _owned_by_job(world, pod_key, name)
        ]
        if not pods:
            return f"job {namespace}/{name}: no pod to {change}"
        pod = pods[0][1]
        if change in ("terminate", "restart"):
            ended = phase if change == "terminate" else "Failed"
            status: dict[str, Any] = {"phase": ended}
            what = f"its pod {pod} {ended}"
        else:
            ready = "True" if change == "ready" else "False"
            status = {"conditions": [{"type": "Ready", "status": ready}]}
            what = f"its pod {pod} Ready={ready}"
        world.server.patch(
            "pods", pod, {"status": status}, namespace=namespace, subresource="status", copy=False
        )
        return f"job {namespace}/{name}: {what}"
    now = world.server.clock.timestamp()
    if change == "terminate":
        done = "Complete" if phase == "Succeeded" else "Failed"
        status = {
            "active": 0,
            "ready": 0,
            ("succeeded" if done == "Complete" else "failed"): 1,
            "startTime": now,
            "conditions": [{"type": done, "status": "True", "lastTransitionTime": now}],
        }
        if done == "Complete":
            status["completionTime"] = now
        what = done
    elif change in ("ready", "not-ready"):
        status = {"active": 1, "ready": 1 if change == "ready" else 0, "startTime": now}
        what = f"{status['ready']} ready"
    else:
        failed = world.server.get("jobs.batch", name, namespace=namespace).get("status", {})
        status = {"active": 1, "failed": int(failed.get("failed", 0)) + 1, "startTime": now}
        what = f"a pod failed ({status['failed']}), a new one active"
    world.server.patch(
        "jobs.batch",
        name,
        {"status": status},
        namespace=namespace,
        subresource="status",
        copy=False,
    )
    return f"update status of job {namespace}/{name}: {what}"


def _owned_by_job(world: World, pod: Key, job: str) -> bool:
    meta = world.server.get("pods", pod[1], namespace=pod[0])["metadata"]
    return any(
        ref.get("kind") == "Job" and ref.get("name") == job
        for ref in meta.get("ownerReferences", ())
    )


def _node_status(world: World, key: Key, change: str, phase: str) -> str:
    """A Node's Ready condition: ``terminate`` makes it ``Unknown`` (the kubelet stopped
    posting), ``not-ready`` ``False``, ``ready`` and ``restart`` ``True``."""
    name = key[1]
    ready = {"terminate": "Unknown", "not-ready": "False"}.get(change, "True")
    now = world.server.clock.timestamp()
    condition = {"type": "Ready", "status": ready, "lastHeartbeatTime": now}
    world.server.patch(
        "nodes", name, {"status": {"conditions": [condition]}}, subresource="status", copy=False
    )
    return f"update status of node {name}: Ready={ready}"


# The resources besides pods whose status a ``status`` step changes, and how.
_OTHER_STATUS = {"jobs.batch": _job_status, "nodes": _node_status}


# -- faults ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExpireWatches(Step):
    """F1 (clean end, as a server-side timeout) or, ``with_error``, F4 (in-stream 410)."""

    with_error: bool = False
    kind: ClassVar[str] = "expire"

    def apply(self, world: World) -> str:
        world.server.expire_watches(with_error=self.with_error)
        return str(self)

    def __str__(self) -> str:
        return "expire watches with a 410 ERROR event" if self.with_error else "expire watches"


@dataclass(frozen=True)
class DropWatches(Step):
    """F1, abrupt: the connection is cut with no terminating chunk."""

    kind: ClassVar[str] = "drop"

    def apply(self, world: World) -> str:
        world.server.drop_watches()
        return str(self)

    def __str__(self) -> str:
        return "drop watches (connections cut)"


@dataclass(frozen=True)
class DeleteWhileDisconnected(Step):
    """F3: the store's watches end, then pods are deleted (and, ``changed``, others rewritten,
    the last in key order first) before it can watch again.

    ``compacted`` (F5): the disconnect outlasts the history too, so the store's re-watch gets
    410 and only a relist, which differs from what it holds, can tell it what went away and
    what changed. Changes made in an order other than the list's are what make a relist that
    applies the list one object at a time show readers states that never existed.

    ``replaced``: each deleted pod is replaced by a new one that gets its podIP (a ReplicaSet
    replaces it and the node's IPAM hands out the freed address): the store's next list holds
    the new holder of an address it still files under the old one, which a relist that adds
    what it lists before it removes what went away gets wrong.
    """

    count: int = 1
    index: int = 0
    compacted: bool = False
    changed: int = 0
    replaced: bool = False
    kind: ClassVar[str] = "delete-in-gap"

    def apply(self, world: World) -> str:
        world.server.drop_watches()
        delete = DeletePods(self.count, self.index)
        chosen = delete.chosen(world)
        addresses = [
            world.server.get("pods", name, namespace=namespace).get("status", {}).get("podIP")
            for namespace, name in chosen
        ]
        deleted = delete.apply(world)
        if self.replaced and chosen:
            replacements = [world.new_pod_key() for _ in chosen]
            for key, ip in zip(replacements, addresses, strict=True):
                world.server.create("pods", _pod_on(world, key, ip), namespace=key[0], copy=False)
            one = len(replacements) == 1
            deleted += f"; {_names(replacements)} take{'s' if one else ''} over "
            deleted += "its podIP" if one else "their podIPs"
        if self.changed:
            rewritten = _of_each(world, self.changed)
            stamp = f"gap-{world.fresh_value()}"
            for resource, live in reversed(rewritten):
                for namespace, name in reversed(live):
                    world.server.patch(
                        resource,
                        name,
                        {"metadata": {"annotations": {"kubesim/changed": stamp}}},
                        namespace=namespace or None,
                        copy=False,
                    )
            deleted += f"; rewrite {_names([key for _, live in rewritten for key in live])}"
        if self.compacted:
            world.server.compact()
            return f"{deleted} while disconnected, history compacted"
        return f"{deleted} while disconnected"

    def __str__(self) -> str:
        gap = "while disconnected, history compacted" if self.compacted else "while disconnected"
        changed = f" (and rewrite {_count(self.changed, 'pod')})" if self.changed else ""
        replaced = ", new pods get their podIPs" if self.replaced else ""
        return f"delete {_count(self.count, 'pod')}{changed}{replaced} {gap}"


@dataclass(frozen=True)
class CompactHistory(Step):
    """F4/F9: watches and continue tokens from older RVs now get 410 Expired."""

    kind: ClassVar[str] = "compact"

    def apply(self, world: World) -> str:
        world.server.compact()
        return str(self)

    def __str__(self) -> str:
        return "compact history"


@dataclass(frozen=True)
class StallWatchCache(Step):
    """F6/F7: the watch cache stops; lists with RV 0 are stale, newer RVs are too large."""

    kind: ClassVar[str] = "stall"

    def apply(self, world: World) -> str:
        rv = world.server.stall_watch_cache()
        return f"stall the watch cache at resourceVersion {rv}"

    def __str__(self) -> str:
        return "stall the watch cache"


@dataclass(frozen=True)
class ResumeWatchCache(Step):
    """F6/F7 end: a stalled watch cache catches up and sends the events it held back."""

    kind: ClassVar[str] = "resume"

    def apply(self, world: World) -> str:
        held = world.server.resume_watch_cache()
        return f"resume the watch cache ({_count(held, 'held event')})"

    def __str__(self) -> str:
        return "resume the watch cache"


@dataclass(frozen=True)
class LagReplica(Step):
    """F14: a second API server replica behind the same endpoint lags ``events`` writes.

    Lists served from the watch cache (``resourceVersion=0``, NotOlderThan) and watches go to
    the replica (the client's connection is to it), or with ``spread`` to either, drawn per
    request as a load balancer spreads them; the replica answers with its past until the
    faults clear (kubernetes#59848)."""

    events: int = 5
    spread: bool = False
    kind: ClassVar[str] = "lagging-replica"

    def apply(self, world: World) -> str:
        rv = world.server.lag_replica(self.events, pinned=not self.spread)
        return f"{self}: its watch cache at resourceVersion {rv}"

    def __str__(self) -> str:
        behind = f"an API server replica lags {_count(self.events, 'write')} behind"
        return behind + (" (requests spread over both)" if self.spread else " (the client's)")


@dataclass(frozen=True)
class FailRequests(Step):
    """HTTP errors: the next ``count`` requests answer ``code``. Which requests: with ``verb``
    -1, lists and watches; otherwise those of one verb the store has sent so far (the
    ``verb``-th, modulo how many, in the order first sent: a poller's ``get``, a controller's
    ``patch``), or lists and watches if it has sent none yet."""

    count: int = 1
    code: int = 500
    verb: int = -1
    kind: ClassVar[str] = "http-error"

    def apply(self, world: World) -> str:
        verbs = self.verbs(world.server.verbs_sent())
        world.server.fail_requests(self.count, code=self.code, verbs=verbs)
        return _failing(self.count, verbs, self.code)

    def verbs(self, sent: Sequence[str]) -> tuple[str, ...]:
        """The verbs this step fails, given those the store has sent."""
        if self.verb < 0 or not sent:
            return LIST_AND_WATCH
        return (sent[self.verb % len(sent)],)

    def __str__(self) -> str:
        if self.verb < 0:
            return _failing(self.count, LIST_AND_WATCH, self.code)
        what = f"{_count(self.count, 'request')} of a verb the store sent (its #{self.verb})"
        return f"fail the next {what} with {self.code}"


LIST_AND_WATCH = ("list", "watch")


def _failing(count: int, verbs: Sequence[str], code: int) -> str:
    what = "list or watch request" if tuple(verbs) == LIST_AND_WATCH else f"{verbs[0]} request"
    return f"fail the next {_count(count, what)} with {code}"


@dataclass(frozen=True)
class SendBookmarks(Step):
    """F8: a BOOKMARK, carrying only a resourceVersion, on every watch that allows them."""

    kind: ClassVar[str] = "bookmark"

    def apply(self, world: World) -> str:
        sent = world.server.send_bookmarks()
        return f"send bookmarks ({_count(sent, 'watch', 'watches')})"

    def __str__(self) -> str:
        return "send bookmarks"


@dataclass(frozen=True)
class SlowConsumerBurst(Step):
    """F12: a burst of ``events`` writes while watches may buffer only ``buffer`` unread events."""

    events: int = 20
    buffer: int = 5
    kind: ClassVar[str] = "slow-consumer"

    def apply(self, world: World) -> str:
        world.server.set_watch_buffer(self.buffer)
        live = [(resource, key) for resource in world.resources() for key in world.live(resource)]
        for n in range(self.events if live else 0):
            resource, (namespace, name) = live[n % len(live)]
            world.server.patch(
                resource,
                name,
                {"metadata": {"annotations": {"kubesim/burst": str(n)}}},
                namespace=namespace or None,
                copy=False,
            )
        closed = world.server.set_watch_buffer(self.buffer)
        world.server.set_watch_buffer(None)
        return f"{self} ({_count(closed, 'watch', 'watches')} closed as unresponsive)"

    def __str__(self) -> str:
        return f"burst of {self.events} writes with a watch buffer of {self.buffer}"


@dataclass(frozen=True)
class AdvanceTime(Step):
    """Virtual time passes: watch timeouts, bookmarks, the store's own timers (F13 resyncs)."""

    seconds: int
    kind: ClassVar[str] = "advance"

    def apply(self, world: World) -> str:
        world.advance(self.seconds)
        return str(self)

    def __str__(self) -> str:
        return f"advance {self.seconds} s"


@dataclass(frozen=True)
class LastingErrors(Step):
    """HTTP errors that last: every request, whatever its verb, answers ``code`` for
    ``seconds`` of virtual time (a 429 storm from API Priority and Fairness, with Retry-After; a
    5xx outage), while the store retries. The ``progress`` oracle judges how hard it retried."""

    seconds: int = 30
    code: int = 429
    kind: ClassVar[str] = "outage"

    def apply(self, world: World) -> str:
        retry_after = {429: 1, 503: 5}.get(self.code)
        world.server.fail_requests(
            code=self.code, verbs=FAILABLE_VERBS, seconds=self.seconds, retry_after=retry_after
        )
        world.server.drop_watches()  # the outage cuts what was open; every retry now fails
        world.advance(self.seconds)
        return str(self)

    def __str__(self) -> str:
        what = "a storm of 429s (Retry-After: 1)" if self.code == 429 else f"a {self.code} outage"
        return f"{what} for {self.seconds} s: watches cut, every request fails"


@dataclass(frozen=True)
class ResetConnections(Step):
    """Connections reset mid-request: the next ``count`` requests (lists and watches, or one
    verb the store sent, drawn as :class:`FailRequests` draws it) are read and their
    connections reset with no answer, as when a load balancer or an API server replica dies.
    Nothing is served: a write is not made. Each client library raises its own error, after
    its own retries (urllib3 asks an idempotent request three more times, aiohttp once)."""

    count: int = 1
    verb: int = -1
    kind: ClassVar[str] = "reset"

    def apply(self, world: World) -> str:
        verbs = FailRequests(verb=self.verb).verbs(world.server.verbs_sent())
        world.server.reset_connections(self.count, verbs=verbs)
        what = "list or watch request" if tuple(verbs) == LIST_AND_WATCH else f"{verbs[0]} request"
        return f"reset the connection of the next {_count(self.count, what)}"

    def __str__(self) -> str:
        if self.verb < 0:
            return f"reset the connection of the next {_count(self.count, 'list or watch request')}"
        what = f"{_count(self.count, 'request')} of a verb the store sent (its #{self.verb})"
        return f"reset the connection of the next {what}"


@dataclass(frozen=True)
class RefuseConnections(Step):
    """The API server restarts: open watches are cut, and for ``seconds`` every connection is
    refused, whatever it asks (a client library's connection error, after its own retries).
    The ``progress`` oracle judges the store's retries as during an ``outage``."""

    seconds: int = 10
    kind: ClassVar[str] = "refused"

    def apply(self, world: World) -> str:
        world.server.refuse_connections(seconds=self.seconds)
        dropped = world.server.drop_watches()
        world.advance(self.seconds)
        return f"{self} ({_count(dropped, 'watch', 'watches')} cut)"

    def __str__(self) -> str:
        return f"the API server restarts: connections refused for {self.seconds} s"


@dataclass(frozen=True)
class SilenceWatches(Step):
    """Half-open connections: every open watch goes silent for ``seconds`` (no event, no
    bookmark, no end), then its connection is cut. Only a client read timeout notices sooner."""

    seconds: int = 120
    kind: ClassVar[str] = "silence"

    def apply(self, world: World) -> str:
        silenced = world.server.silence_watches(self.seconds)
        world.advance(self.seconds)
        return f"{self} ({_count(silenced, 'watch', 'watches')})"

    def __str__(self) -> str:
        return f"watch connections go silent for {self.seconds} s, then are cut"


@dataclass(frozen=True)
class ChangeServerVersion(Step):
    """The API server is now release ``version`` (an upgrade or a rollback under the store):
    the in-stream expiry's reason, bookmarks and watch-list as it has them
    (:mod:`kubesim.apiserver.versions`)."""

    version: str = "1.17"
    kind: ClassVar[str] = "server-version"

    def apply(self, world: World) -> str:
        from kubesim.apiserver.versions import server_version

        profile = server_version(self.version)
        profile.apply(world.server)
        return f"{self} ({profile.summary})"

    def __str__(self) -> str:
        return f"the API server is now version {self.version}"


# -- the store's side --------------------------------------------------------------------------
@dataclass(frozen=True)
class ReadConcurrently(Step):
    """A consumer thread calls the store's ``read()`` while the store works."""

    kind: ClassVar[str] = "read"

    def apply(self, world: World) -> str:
        name = world.start_reader()
        if name is None:
            return "reader thread: skipped (the store has no read() hook)"
        return f"reader thread {name!r}: read() while the store reacts to the next step"

    def __str__(self) -> str:
        return "reader thread: read()"


@dataclass(frozen=True)
class CrashAndRestart(Step):
    """The store process dies where it is and starts again; what it did outside stays done."""

    kind: ClassVar[str] = "crash"

    def apply(self, world: World) -> str:
        world.crash_and_restart_store()
        return str(self)

    def __str__(self) -> str:
        return "crash and restart the store"


@dataclass(frozen=True)
class StopStore(Step):
    """The store's ``stop()`` is called (a shutdown: a SIGTERM handler, a test's teardown), now
    or, ``during_list``, while its next list is in flight, or, ``during_event``, as the store
    reads its next watch event, so that stop() runs while the event is handled; its threads
    must end. It is then started again for the rest of the scenario."""

    during_list: bool = False
    during_event: bool = False
    kind: ClassVar[str] = "stop"

    def apply(self, world: World) -> str:
        if self.during_event and not self.during_list:
            return world.stop_and_restart_store(during_list=False, during_event=True)
        return world.stop_and_restart_store(during_list=self.during_list)

    def __str__(self) -> str:
        if self.during_list:
            return "stop() during a list, then start again"
        if self.during_event:
            return "stop() while the store handles a watch event, then start again"
        return "stop() the store, then start it again"


def _count(n: int, singular: str, plural: str | None = None) -> str:
    return f"{n} {singular if n == 1 else (plural or singular + 's')}"


def _names(keys: list[Key]) -> str:
    shown = ", ".join(f"{ns}/{name}" if ns else name for ns, name in keys[:4])
    more = f" and {len(keys) - 4} more" if len(keys) > 4 else ""
    return (shown + more) if keys else "nothing"


@dataclass(frozen=True)
class StepKind:
    """One row of the step table: the class, what it stands for, and its fault id if any.

    ``default``: drawn when no kinds are named. A kind that is not is drawn only when asked for
    (``kubesim check --faults``, ``kinds=``): new kinds start so, since any new kind among the
    defaults changes what every seed draws, until they are measured on the correct stores."""

    kind: str
    step: type[Step]
    fault: str
    summary: str
    default: bool = True


STEP_KINDS: tuple[StepKind, ...] = (
    StepKind("create", CreatePods, "", "create pods"),
    StepKind("delete", DeletePods, "", "delete pods"),
    StepKind("churn", ChurnPods, "", "delete pods and create new ones (a rollout)"),
    StepKind("labels", PatchLabels, "F11", "label storms: a key set, given fresh values, removed"),
    StepKind("annotate", PatchMetadata, "F11", "annotations and ownerReferences change"),
    StepKind("status", UpdatePodStatus, "F10", "status: terminate (podIP cleared), ready, restart"),
    StepKind("ip-reuse", ReusePodIP, "F10", "a pod terminates, a new one gets its IP"),
    StepKind("expire", ExpireWatches, "F1 F2 F4", "watches end cleanly, or with a 410 event"),
    StepKind("drop", DropWatches, "F1", "watch connections cut abruptly"),
    StepKind(
        "delete-in-gap", DeleteWhileDisconnected, "F3 F5", "deletes while disconnected (relist)"
    ),
    StepKind("compact", CompactHistory, "F4 F5 F9", "history compacted: 410 on old RVs"),
    StepKind("stall", StallWatchCache, "F6 F7", "watch cache stalls: stale lists, RV too large"),
    StepKind("resume", ResumeWatchCache, "F6 F7", "stalled watch cache catches up"),
    StepKind("lagging-replica", LagReplica, "F14", "a lagging replica serves some lists, watches"),
    StepKind("http-error", FailRequests, "HTTP", "HTTP 403/429/500/503/504 on list and watch"),
    StepKind("bookmark", SendBookmarks, "F8", "bookmarks carrying only an RV"),
    StepKind("slow-consumer", SlowConsumerBurst, "F12", "burst of writes, small watch buffer"),
    StepKind("advance", AdvanceTime, "F1 F8 F13", "virtual time passes (timeouts, resyncs)"),
    StepKind("outage", LastingErrors, "HTTP", "lasting errors: a 429 storm or a 5xx outage"),
    StepKind("silence", SilenceWatches, "F1", "half-open watches: silent, then cut"),
    StepKind(
        "server-version", ChangeServerVersion, "F4 F8", "server release: 410 reason, bookmarks"
    ),
    StepKind("read", ReadConcurrently, "", "a reader thread calls read()"),
    StepKind("crash", CrashAndRestart, "restart", "the store crashes and restarts"),
    StepKind("stop", StopStore, "restart", "stop() now or during a list, then restart"),
    StepKind("reset", ResetConnections, "HTTP", "connections reset mid-request", default=False),
    StepKind(
        "refused",
        RefuseConnections,
        "HTTP",
        "an API server restart: connections refused",
        default=False,
    ),
)
KINDS: dict[str, StepKind] = {row.kind: row for row in STEP_KINDS}


def step_from_json(data: dict[str, Any]) -> Step:
    """The inverse of :meth:`Step.to_json` (for replay tokens and the example database)."""
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        raise ValueError(f"not a kubesim step: {data!r}")
    fields = {k: v for k, v in data.items() if k != "kind"}
    return KINDS[data["kind"]].step(**fields)
