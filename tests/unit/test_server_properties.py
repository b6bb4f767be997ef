"""Hypothesis properties of the fake API server, driven through ``routes.handle`` in process.

A :class:`ServerMachine` sends random pod writes (create, label patch, optimistic update,
delete, finalizer removal, and writes to another resource as RV noise) across three namespaces
with a small name pool, and keeps its own model: the current pods and every pod event with its
RV. Against that model it checks, after every step, the properties list/watch clients rely on
(k8s-wire.md §1-2, §6):

- a list at any RV r of the history window (``resourceVersionMatch=Exact``) is the state at r,
  and a watch from r delivers exactly the events with RV > r, each once, in increasing RV
  order, so list + watch reconstructs the current state, with or without a label selector;
- a selector-filtered watcher's view (ADDED/MODIFIED upsert, DELETED remove) equals a filtered
  list at the same RV after every write, across watch expiry, drops and compaction (a client
  resumes from its last RV, or relists after a 410);
- a watch with RV unset or "0" starts with a synthetic ADDED for every object that existed
  when it opened, in etcd key order, each with its own RV, even when writes land before the
  client reads;
- paging (``limit`` + ``continue``) gives a consistent snapshot at one list RV even with writes
  between pages, or a 410 exactly when that RV has left the window.

A separate property runs one random request script twice per seed and compares every response
byte and the trace hash.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from kubesim import APIServer
from kubesim.apiserver.server import AutojumpWait
from kubesim.apiserver.watch import WatchDropped, WatchStream
from kubesim.wire.routes import Request, Response, handle

JSON = dict[str, Any]
Key = tuple[str, str]
Labels = frozenset[tuple[str, str]]
Row = tuple[str, str, int, Labels]  # (namespace, name, resourceVersion, labels)
Line = tuple[str, Row]  # (event type, object row)

# "team" is a prefix of "team-a": etcd key order ("team-a/x" < "team/x") differs from tuple order.
NAMESPACES = ("default", "team", "team-a")
NAMES = ("db", "web", "web-1")
LABEL_KEYS = ("app", "tier")
LABEL_VALUES = ("a", "b", "c")
FINALIZER = "kubesim.test/hold"

# Selector text -> an independent reference predicate (not kubesim's selector engine).
SELECTORS: dict[str, Callable[[Mapping[str, str]], bool]] = {
    "": lambda labels: True,
    "app=a": lambda labels: labels.get("app") == "a",
    "app!=a": lambda labels: labels.get("app") != "a",
    "app in (a,b)": lambda labels: labels.get("app") in ("a", "b"),
    "tier notin (b)": lambda labels: labels.get("tier") != "b",
    "tier": lambda labels: "tier" in labels,
    "!tier": lambda labels: "tier" not in labels,
    "app=a,tier=b": lambda labels: labels.get("app") == "a" and labels.get("tier") == "b",
}

namespaces = st.sampled_from(NAMESPACES)
names = st.sampled_from(NAMES)
label_sets = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=2)
label_patches = st.dictionaries(
    st.sampled_from(LABEL_KEYS), st.none() | st.sampled_from(LABEL_VALUES), min_size=1, max_size=2
)
selectors = st.sampled_from(sorted(SELECTORS))
scopes = st.none() | namespaces

WriteOp = tuple[Any, ...]
write_ops: st.SearchStrategy[WriteOp] = st.one_of(
    st.tuples(st.just("create"), namespaces, names, label_sets, st.booleans()),
    st.tuples(st.just("patch"), namespaces, names, label_patches),
    st.tuples(st.just("update"), namespaces, names, label_sets, st.booleans()),
    st.tuples(st.just("delete"), namespaces, names),
    st.tuples(st.just("unfinalize"), namespaces, names),
    st.tuples(st.just("noise"), namespaces),
)


# -- requests ------------------------------------------------------------------------------------
def call(
    server: APIServer,
    method: str,
    target: str,
    body: Any = None,
    content_type: str = "application/json",
) -> Response:
    headers = {"Content-Type": content_type} if body is not None else {}
    raw = orjson.dumps(body) if body is not None else b""
    return handle(server, Request.from_target(method, target, headers, raw))


def pods_path(namespace: str | None, name: str | None = None) -> str:
    base = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    return f"{base}/{name}" if name else base


def with_query(path: str, **params: str | int | None) -> str:
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return f"{path}?{query}" if query else path


def pod_body(namespace: str, name: str, labels: Mapping[str, str], finalizer: bool) -> JSON:
    metadata: JSON = {"name": name, "namespace": namespace, "labels": dict(labels)}
    if finalizer:
        metadata["finalizers"] = [FINALIZER]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def server_state(server: APIServer) -> tuple[int, int]:
    """(current RV, compacted RV) as the admin endpoint reports them."""
    state = call(server, "GET", "/kubesim/state").json()
    return int(state["resourceVersion"]), int(state["compactedResourceVersion"])


def row_of(obj: JSON) -> Row:
    meta = obj["metadata"]
    labels: Labels = frozenset((meta.get("labels") or {}).items())
    return meta["namespace"], meta["name"], int(meta["resourceVersion"]), labels


def key_order(row: Row | Key) -> str:
    """etcd key order: the registry key ``<namespace>/<name>`` compared as a string."""
    return f"{row[0]}/{row[1]}"


def open_stream(server: APIServer, target: str) -> WatchStream:
    """GET a watch target; a watch is admitted with 200 (later errors come in the stream)."""
    response = call(server, "GET", target)
    assert response.status == 200, response.body
    assert isinstance(response.body, WatchStream)
    return response.body


def read_lines(stream: WatchStream) -> tuple[list[JSON], str]:
    """Every complete line ready now, and "open", "closed" (clean end) or "dropped"."""
    events: list[JSON] = []
    while True:
        try:
            chunk = stream.poll()
        except WatchDropped:
            return events, "dropped"
        if chunk is None:
            return events, "open"
        if chunk == b"":
            return events, "closed"
        assert chunk.endswith(b"\n"), chunk
        for line in chunk[:-1].split(b"\n"):
            assert line, f"blank line in watch chunk {chunk!r}"
            events.append(orjson.loads(line))


def line_of(event: JSON) -> Line:
    return event["type"], row_of(event["object"])


def assert_expired_error(event: JSON, requested: int) -> None:
    assert event["type"] == "ERROR", event
    status = event["object"]
    assert status["kind"] == "Status"
    assert status["code"] == 410
    assert status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {requested} ("), status


# -- the model ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelEvent:
    """One pod write as the model saw it. ``labels`` of a DELETED are the previous state's."""

    rv: int
    type: str
    key: Key
    labels: Labels
    old: Labels | None


@dataclass
class PodModel:
    rv: int
    labels: Labels
    finalizers: bool
    deleting: bool


def selected(selector: str, namespace: str | None, key: Key, labels: Labels) -> bool:
    return (namespace is None or key[0] == namespace) and SELECTORS[selector](dict(labels))


@dataclass
class OpenWatch:
    """A client-side watcher: the view it built from its lines, and how far it has read."""

    selector: str
    namespace: str | None
    stream: WatchStream
    view: dict[Key, Row]
    last_rv: int
    pending_initial: list[Row] | None = None
    seen: int = field(default=0)


class ServerMachine(RuleBasedStateMachine):
    """Random pod writes, faults, lists, pages and watches, checked against a model."""

    def __init__(self) -> None:
        super().__init__()
        self.server = APIServer(seed=0)
        self.pods: dict[Key, PodModel] = {}
        self.history: list[ModelEvent] = []
        self.watches: list[OpenWatch] = []

    @initialize(seed=st.integers(0, 3), window=st.sampled_from([2, 5, 10_000]))
    def start(self, seed: int, window: int) -> None:
        self.server = APIServer(seed=seed, history_window=window)
        for namespace in NAMESPACES:
            if namespace != "default":
                response = call(
                    self.server, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}}
                )
                assert response.status == 201, response.json()

    # -- model helpers ---------------------------------------------------------------------------
    def rows_at(
        self, rv: int | None, selector: str = "", namespace: str | None = None
    ) -> list[Row]:
        """The pods at ``rv`` (None: now) in etcd key order, replayed from the model history."""
        state: dict[Key, Row] = {}
        for change in self.history:
            if rv is not None and change.rv > rv:
                break
            if change.type == "DELETED":
                state.pop(change.key, None)
            else:
                state[change.key] = (*change.key, change.rv, change.labels)
        rows = [r for k, r in state.items() if selected(selector, namespace, k, r[3])]
        return sorted(rows, key=key_order)

    def lines_after(self, rv: int, selector: str, namespace: str | None) -> list[Line]:
        """What a watch from ``rv`` must deliver: cache_watcher.go convertToWatchEvent."""
        lines: list[Line] = []
        for change in self.history:
            if change.rv <= rv:
                continue
            key, old = change.key, change.old
            was = old is not None and selected(selector, namespace, key, old)
            now = change.type != "DELETED" and selected(selector, namespace, key, change.labels)
            if now:
                kind = "MODIFIED" if was else "ADDED"
                lines.append((kind, (*key, change.rv, change.labels)))
            elif was:
                assert old is not None
                lines.append(("DELETED", (*key, change.rv, old)))
        return lines

    def record(self, key: Key, obj: JSON, *, deleted: bool) -> None:
        """Fold a successful write's response into the model (no new RV: a no-op write)."""
        namespace, name, rv, labels = row_of(obj)
        assert (namespace, name) == key
        before = self.pods.get(key)
        if before is not None and rv == before.rv:
            return
        assert not self.history or rv > self.history[-1].rv, "RVs must strictly increase"
        meta = obj["metadata"]
        if deleted:
            assert before is not None
            self.history.append(ModelEvent(rv, "DELETED", key, before.labels, before.labels))
            del self.pods[key]
            return
        kind = "ADDED" if before is None else "MODIFIED"
        self.history.append(ModelEvent(rv, kind, key, labels, before.labels if before else None))
        self.pods[key] = PodModel(
            rv, labels, bool(meta.get("finalizers")), bool(meta.get("deletionTimestamp"))
        )

    # -- writes ----------------------------------------------------------------------------------
    def write(self, op: WriteOp) -> None:
        server, kind = self.server, op[0]
        if kind == "noise":
            # Another resource's write: takes an RV that no pod watch or list may show.
            body = {"metadata": {"generateName": "noise-"}, "data": {"k": "v"}}
            response = call(server, "POST", f"/api/v1/namespaces/{op[1]}/configmaps", body)
            assert response.status in (201, 409), response.json()
            return
        namespace, name = op[1], op[2]
        key, path = (namespace, name), pods_path(namespace, name)
        exists = key in self.pods
        if kind == "create":
            response = call(
                server, "POST", pods_path(namespace), pod_body(namespace, name, op[3], op[4])
            )
            if exists:
                assert response.status == 409, response.json()
                assert response.json()["reason"] == "AlreadyExists"
                return
            assert response.status == 201, response.json()
            self.record(key, response.json(), deleted=False)
            return
        if kind == "update":
            current = call(server, "GET", path)
            if not exists:
                assert current.status == 404
                body = pod_body(namespace, name, op[3], False)
            else:
                body = current.json()
                body["metadata"]["labels"] = dict(op[3])
                if op[4]:
                    body["metadata"]["resourceVersion"] = "1"  # a namespace's RV: always stale
            response = call(server, "PUT", path, body)
            if exists and op[4]:
                assert response.status == 409, response.json()
                assert response.json()["reason"] == "Conflict"
                return
        elif kind == "patch":
            patch = {"metadata": {"labels": op[3]}}
            response = call(server, "PATCH", path, patch, "application/merge-patch+json")
        elif kind == "unfinalize":
            patch = {"metadata": {"finalizers": None}}
            response = call(server, "PATCH", path, patch, "application/merge-patch+json")
        else:
            assert kind == "delete"
            response = call(server, "DELETE", path)
        if not exists:
            assert response.status == 404, response.json()
            assert response.json()["reason"] == "NotFound"
            return
        assert response.status == 200, response.json()
        obj = response.json()
        meta = obj["metadata"]
        if kind == "delete":
            deleted = not meta.get("finalizers")
        elif kind == "unfinalize" and meta.get("deletionTimestamp"):
            # Removing the last finalizer of a deleted object deletes it; the answer is the
            # last stored state (store.go deleteWithoutFinalizers), finalizers and all, so
            # whether it is gone is asked of the server.
            deleted = call(server, "GET", path).status == 404
        else:
            deleted = False
        self.record(key, obj, deleted=deleted)

    @rule(op=write_ops)
    def write_then_check(self, op: WriteOp) -> None:
        self.write(op)
        self.check_lists_and_watches()

    @rule(
        namespace=namespaces,
        name=names,
        labels=label_sets,
        finalizer=st.sampled_from([False, False, True]),
    )
    def create_then_check(
        self, namespace: str, name: str, labels: dict[str, str], finalizer: bool
    ) -> None:
        """Creates, more often than the other writes: lists, pages and watches need objects."""
        self.write(("create", namespace, name, labels, finalizer))
        self.check_lists_and_watches()

    # -- the checks run after every write --------------------------------------------------------
    def check_lists_and_watches(self) -> None:
        response = call(self.server, "GET", pods_path(None))
        assert response.status == 200
        body = response.json()
        rows = [row_of(item) for item in body["items"]]
        assert rows == self.rows_at(None), "list differs from the model (or not in key order)"
        assert all("kind" not in item for item in body["items"]), "typed list items carry a kind"
        list_rv = int(body["metadata"]["resourceVersion"])
        assert list_rv == server_state(self.server)[0]
        for watch in list(self.watches):
            self.sync(watch, list_rv)

    def filtered_list(
        self, selector: str, namespace: str | None, rv: int | None
    ) -> tuple[int, list[Row]]:
        params: dict[str, str | int | None] = {"labelSelector": selector}
        if rv is not None:
            params.update(resourceVersion=rv, resourceVersionMatch="Exact")
        response = call(self.server, "GET", with_query(pods_path(namespace), **params))
        assert response.status == 200, response.json()
        body = response.json()
        return int(body["metadata"]["resourceVersion"]), [row_of(i) for i in body["items"]]

    def sync(self, watch: OpenWatch, now: int) -> None:
        """Read what the watcher has, apply it, and compare with a filtered list at ``now``."""
        while True:
            events, how = read_lines(watch.stream)
            if any(e["type"] == "ERROR" for e in events):
                assert len(events) == 1, "an ERROR comes alone"
                assert how == "closed", "an ERROR is followed by a clean end"
                assert_expired_error(events[0], watch.last_rv)
                event(f"watcher {how}, then relist after 410")
                self.reopen(watch, relist=True)
                continue
            lines = [line_of(e) for e in events]
            if watch.pending_initial is not None:
                expected = [("ADDED", row) for row in watch.pending_initial]
                head = lines[: len(expected)]
                assert head == expected[: len(head)], (
                    "a watch with RV unset/0 must start with an ADDED per existing object, in key "
                    "order, each with its own RV, before any live event"
                )
                if len(head) < len(expected):
                    assert how != "open"
                    self.reopen(watch, relist=True)
                    continue
                watch.view = {r[:2]: r for r in watch.pending_initial}
                watch.pending_initial = None
                lines = lines[len(expected) :]
                event(f"initial ADDED then {'live events' if lines else 'nothing'} on first read")
            for kind, row in lines:
                assert kind in ("ADDED", "MODIFIED", "DELETED"), kind
                assert row[2] > watch.last_rv, f"event RV {row[2]} not after {watch.last_rv}"
                watch.last_rv = row[2]
                if kind == "DELETED":
                    assert watch.view.pop(row[:2], None) is not None, "DELETED of an unseen object"
                else:
                    assert (kind == "ADDED") == (row[:2] not in watch.view), (kind, row)
                    watch.view[row[:2]] = row
            if how == "open":
                break
            event(f"watcher {how}, then resume from last RV")
            self.reopen(watch, relist=False)
        list_rv, rows = self.filtered_list(watch.selector, watch.namespace, now)
        assert list_rv == now
        assert sorted(watch.view.values(), key=key_order) == rows, "watch view != filtered list"
        assert rows == self.rows_at(now, watch.selector, watch.namespace)

    def reopen(self, watch: OpenWatch, *, relist: bool) -> None:
        """A client resumes from its last RV after a clean end or a drop; relists after a 410."""
        watch.stream.close()
        if relist:
            list_rv, rows = self.filtered_list(watch.selector, watch.namespace, None)
            watch.view = {r[:2]: r for r in rows}
            watch.last_rv = list_rv
            watch.pending_initial = None
        target = with_query(
            pods_path(watch.namespace),
            watch=1,
            resourceVersion=watch.last_rv,
            labelSelector=watch.selector,
        )
        watch.stream = open_stream(self.server, target)

    # -- watchers --------------------------------------------------------------------------------
    @precondition(lambda self: len(self.watches) < 3)
    @rule(selector=selectors, namespace=scopes, mode=st.sampled_from(["unset", "0", "list"]))
    def open_watch(self, selector: str, namespace: str | None, mode: str) -> None:
        """Open a watch and deliberately read nothing until the next write lands."""
        now = server_state(self.server)[0]
        pending: list[Row] | None = None
        view: dict[Key, Row] = {}
        if mode == "list":
            now, rows = self.filtered_list(selector, namespace, None)
            view = {r[:2]: r for r in rows}
        else:
            pending = self.rows_at(None, selector, namespace)
        rv = {"unset": None, "0": "0", "list": now}[mode]
        target = with_query(
            pods_path(namespace), watch="true", resourceVersion=rv, labelSelector=selector
        )
        stream = open_stream(self.server, target)
        self.watches.append(OpenWatch(selector, namespace, stream, view, now, pending))

    @precondition(lambda self: bool(self.watches))
    @rule(index=st.integers(0, 2))
    def close_watch(self, index: int) -> None:
        watch = self.watches.pop(index % len(self.watches))
        watch.stream.close()

    @rule(
        faults=st.lists(
            st.sampled_from(["expire_watches", "drop_watches", "compact"]), min_size=1, max_size=2
        )
    )
    def inject_faults(self, faults: list[str]) -> None:
        for fault in faults:
            getattr(self.server, fault)()
        self.check_lists_and_watches()

    # -- list + watch from any RV ----------------------------------------------------------------
    @rule(data=st.data(), selector=selectors, namespace=scopes)
    def list_and_watch_from_any_rv_in_the_window(
        self, data: st.DataObject, selector: str, namespace: str | None
    ) -> None:
        now, compacted = server_state(self.server)
        r = data.draw(st.integers(max(1, compacted), now), label="r")
        list_rv, rows = self.filtered_list(selector, namespace, r)
        assert list_rv == r
        assert rows == self.rows_at(r, selector, namespace), "list at RV r is not the state at r"
        target = with_query(
            pods_path(namespace), watch=1, resourceVersion=r, labelSelector=selector
        )
        stream = open_stream(self.server, target)
        events, how = read_lines(stream)
        stream.close()
        assert how == "open"
        lines = [line_of(e) for e in events]
        assert lines == self.lines_after(r, selector, namespace), "watch from r != events after r"
        event(f"watch from r replayed {min(len(lines), 5)}{'+' if len(lines) >= 5 else ''} events")
        rvs = [row[2] for _, row in lines]
        assert rvs == sorted(set(rvs))
        assert all(rv > r for rv in rvs)
        state = {row[:2]: row for row in rows}
        for kind, row in lines:
            if kind == "DELETED":
                del state[row[:2]]
            else:
                state[row[:2]] = row
        assert sorted(state.values(), key=key_order) == self.rows_at(None, selector, namespace)

    @precondition(lambda self: server_state(self.server)[1] > 1)
    @rule(data=st.data())
    def list_and_watch_before_the_window_are_410(self, data: st.DataObject) -> None:
        _, compacted = server_state(self.server)
        r = data.draw(st.integers(1, compacted - 1), label="r")
        listed = call(
            self.server,
            "GET",
            with_query(pods_path(None), resourceVersion=r, resourceVersionMatch="Exact"),
        )
        assert listed.status == 410
        assert listed.json()["reason"] == "Expired"
        assert listed.json()["message"] == "The resourceVersion for the provided list is too old."
        stream = open_stream(self.server, with_query(pods_path(None), watch=1, resourceVersion=r))
        events, how = read_lines(stream)
        assert len(events) == 1, events
        assert how == "closed"
        assert_expired_error(events[0], r)
        assert events[0]["object"]["message"] == f"too old resource version: {r} ({compacted})"

    # -- synthetic ADDED -------------------------------------------------------------------------
    @rule(rv=st.sampled_from([None, "0"]), namespace=scopes, op=write_ops)
    def watch_from_rv_0_or_unset_starts_with_every_object(
        self, rv: str | None, namespace: str | None, op: WriteOp
    ) -> None:
        before = self.rows_at(None, "", namespace)
        start = len(self.history)
        stream = open_stream(
            self.server, with_query(pods_path(namespace), watch=1, resourceVersion=rv)
        )
        self.write(op)  # lands before the client reads a byte
        events, how = read_lines(stream)
        stream.close()
        assert how == "open"
        lines = [line_of(e) for e in events]
        assert lines[: len(before)] == [("ADDED", row) for row in before]
        live = [e for e in self.history[start:] if namespace in (None, e.key[0])]
        assert [row[2] for _, row in lines[len(before) :]] == [e.rv for e in live]
        self.check_lists_and_watches()

    # -- pages -----------------------------------------------------------------------------------
    @rule(
        limit=st.integers(1, 3),
        selector=selectors,
        namespace=scopes,
        # Half noise: writes that always take an RV, so the list RV can leave a small window.
        batches=st.lists(
            st.lists(write_ops | st.just(("noise", "default")), max_size=3), max_size=3
        ),
    )
    def pages_form_one_consistent_list(
        self, limit: int, selector: str, namespace: str | None, batches: list[list[WriteOp]]
    ) -> None:
        """Page through a list with a batch of writes before each continue request."""
        pending = list(batches)
        first = call(
            self.server,
            "GET",
            with_query(pods_path(namespace), limit=limit, labelSelector=selector),
        )
        assert first.status == 200, first.json()
        body = first.json()
        list_rv = body["metadata"]["resourceVersion"]
        pages = [body]
        while pages[-1]["metadata"].get("continue"):
            token = pages[-1]["metadata"]["continue"]
            for op in pending.pop(0) if pending else []:
                self.write(op)
            _, compacted = server_state(self.server)
            target = with_query(
                pods_path(namespace), limit=limit, labelSelector=selector, **{"continue": token}
            )
            response = call(self.server, "GET", target)
            if int(list_rv) < compacted:
                event("continue token expired between pages")
                assert response.status == 410, response.json()
                assert response.json()["reason"] == "Expired"
                assert response.json()["message"].startswith(
                    "The provided continue parameter is too old"
                )
                break
            assert response.status == 200, response.json()
            pages.append(response.json())
        else:
            items = [row_of(item) for page in pages for item in page["items"]]
            assert items == self.rows_at(int(list_rv), selector, namespace), (
                "pages != list at list RV"
            )
            assert len({row[:2] for row in items}) == len(items), "an object on two pages"
            for index, page in enumerate(pages):
                meta = page["metadata"]
                assert meta["resourceVersion"] == list_rv, "pages of one list carry one RV"
                assert 0 < len(page["items"]) <= limit or (index == 0 and not items)
                later = sum(len(p["items"]) for p in pages[index + 1 :])
                if selector or "continue" not in meta:
                    assert "remainingItemCount" not in meta
                else:
                    assert meta["remainingItemCount"] == later
            assert pages[-1]["metadata"].get("continue") is None
            event(f"list in {min(len(pages), 3)}{'+' if len(pages) > 3 else ''} pages")
        for op in (op for batch in pending for op in batch):
            self.write(op)
        self.check_lists_and_watches()

    @invariant()
    def rvs_strictly_increase(self) -> None:
        rvs = [change.rv for change in self.history]
        assert rvs == sorted(set(rvs))

    def teardown(self) -> None:
        for watch in self.watches:
            watch.stream.close()
        assert self.server.open_watches == 0


# One bug at a time: shrinking several distinct failures of a 30-step machine takes minutes,
# one takes seconds and ends in a short list of steps.
ServerMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=30,
    deadline=None,
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestListsWatchesAndPagesAgreeWithAModel = ServerMachine.TestCase


# -- pages, standalone ----------------------------------------------------------------------------
WRITE_KINDS = ("create", "update", "patch", "unfinalize", "delete", "noise")


def blind_write(server: APIServer, op: WriteOp) -> Response:
    """Send one write op without a model (an update is unconditional: no resourceVersion)."""
    kind = op[0]
    if kind == "create":
        return call(server, "POST", pods_path(op[1]), pod_body(op[1], op[2], op[3], op[4]))
    if kind == "update":
        return call(server, "PUT", pods_path(op[1], op[2]), pod_body(op[1], op[2], op[3], False))
    if kind in ("patch", "unfinalize"):
        patch = {"metadata": {"labels": op[3]} if kind == "patch" else {"finalizers": None}}
        return call(server, "PATCH", pods_path(op[1], op[2]), patch, "application/merge-patch+json")
    if kind == "delete":
        return call(server, "DELETE", pods_path(op[1], op[2]))
    assert kind == "noise"
    return call(
        server,
        "POST",
        f"/api/v1/namespaces/{op[1]}/configmaps",
        {"metadata": {"generateName": "n-"}},
    )


def new_server(seed: int, window: int) -> APIServer:
    server = APIServer(seed=seed, history_window=window)
    for namespace in NAMESPACES[1:]:
        assert (
            call(server, "POST", "/api/v1/namespaces", {"metadata": {"name": namespace}}).status
            == 201
        )
    return server


creates = st.tuples(st.just("create"), namespaces, names, label_sets, st.just(False))


@settings(max_examples=150, deadline=None, report_multiple_bugs=False)
@given(
    seed=st.integers(0, 3),
    window=st.sampled_from([2, 10_000]),
    setup=st.lists(creates, min_size=3, max_size=9, unique_by=lambda op: op[1:3]),
    more=st.lists(write_ops, max_size=5),
    limit=st.integers(1, 3),
    selector=selectors,
    namespace=scopes,
    batches=st.lists(st.lists(write_ops | st.just(("noise", "team")), max_size=4), max_size=4),
)
def test_pages_form_the_full_list_at_one_rv_even_with_writes_between_pages(
    seed: int,
    window: int,
    setup: list[WriteOp],
    more: list[WriteOp],
    limit: int,
    selector: str,
    namespace: str | None,
    batches: list[list[WriteOp]],
) -> None:
    server = new_server(seed, window)
    for op in setup + more:
        blind_write(server, op)
    path = pods_path(namespace)
    full = call(server, "GET", with_query(path, labelSelector=selector)).json()
    expected = [row_of(item) for item in full["items"]]
    pages = [call(server, "GET", with_query(path, limit=limit, labelSelector=selector)).json()]
    list_rv = pages[0]["metadata"]["resourceVersion"]
    assert list_rv == full["metadata"]["resourceVersion"]
    while "continue" in pages[-1]["metadata"]:
        for op in batches.pop(0) if batches else []:
            blind_write(server, op)
        _, compacted = server_state(server)
        token = pages[-1]["metadata"]["continue"]
        response = call(
            server,
            "GET",
            with_query(path, limit=limit, labelSelector=selector, **{"continue": token}),
        )
        if int(list_rv) < compacted:  # the list RV left the window: 410, never a mixed answer
            event("continue token expired between pages")
            assert response.status == 410, response.json()
            assert response.json()["reason"] == "Expired"
            return
        assert response.status == 200, response.json()
        pages.append(response.json())
    event(f"list in {min(len(pages), 4)}{'+' if len(pages) > 4 else ''} pages")
    items = [row_of(item) for page in pages for item in page["items"]]
    assert items == expected, (
        "the pages are not the full list at the list RV, once each, in key order"
    )
    assert [page["metadata"]["resourceVersion"] for page in pages] == [list_rv] * len(pages)
    assert all(len(page["items"]) <= limit for page in pages)
    _, compacted = server_state(server)
    if int(list_rv) >= compacted:
        exact = call(
            server,
            "GET",
            with_query(
                path, labelSelector=selector, resourceVersion=list_rv, resourceVersionMatch="Exact"
            ),
        ).json()
        assert [row_of(item) for item in exact["items"]] == expected


# -- determinism -----------------------------------------------------------------------------------
ScriptOp = tuple[Any, ...]
script_ops: st.SearchStrategy[ScriptOp] = st.one_of(
    write_ops,
    st.tuples(st.just("generate"), namespaces),
    st.tuples(st.just("watch"), selectors, st.sampled_from([None, "0", "now"]), st.booleans()),
    st.tuples(st.just("drain")),
    st.tuples(st.just("list"), st.integers(0, 3), selectors),
    st.tuples(st.just("advance"), st.integers(0, 4000)),
    st.tuples(st.just("fault"), st.sampled_from(["expire_watches", "drop_watches", "compact"])),
)


def run_script(seed: int, script: Iterable[ScriptOp]) -> tuple[list[bytes], str]:
    """Send the script's requests to a fresh server; every byte it answered, and its trace hash."""
    # One thread sends and drains: draining to the end jumps virtual time to the watch's end.
    server = APIServer(seed=seed, history_window=6, wait_policy=AutojumpWait())
    out: list[bytes] = []
    streams: list[WatchStream] = []

    def send(method: str, target: str, body: Any = None, ctype: str = "application/json") -> None:
        response = call(server, method, target, body, ctype)
        if isinstance(response.body, WatchStream):
            streams.append(response.body)
            out.append(b"%d watch %d" % (response.status, response.body.ident))
        else:
            out.append(b"%d " % response.status + response.body)

    def drain(stream: WatchStream, *, to_the_end: bool) -> None:
        try:
            while True:
                chunk = stream.next_chunk() if to_the_end else stream.poll()
                out.append(
                    b"chunk %d " % stream.ident + (chunk if chunk is not None else b"<none>")
                )
                if not chunk:
                    return
        except WatchDropped:
            out.append(b"dropped %d" % stream.ident)

    for op in script:
        kind = op[0]
        if kind in WRITE_KINDS:
            response = blind_write(server, op)
            assert isinstance(response.body, bytes)
            out.append(b"%d " % response.status + response.body)
        elif kind == "generate":
            body = pod_body(op[1], "", {}, False)
            body["metadata"] = {"generateName": "gen-"}
            send("POST", pods_path(op[1]), body)
        elif kind == "watch":
            rv = str(server.resource_version) if op[2] == "now" else op[2]
            send(
                "GET",
                with_query(
                    pods_path(None),
                    watch=1,
                    resourceVersion=rv,
                    labelSelector=op[1],
                    allowWatchBookmarks="true" if op[3] else None,
                ),
            )
        elif kind == "drain":
            for stream in streams:
                drain(stream, to_the_end=False)
        elif kind == "list":
            send("GET", with_query(pods_path(None), limit=op[1] or None, labelSelector=op[2]))
        elif kind == "advance":
            send("POST", f"/kubesim/advance?seconds={op[1]}")
        else:
            send("POST", "/kubesim/" + op[1].replace("_", "-"))
    for stream in streams:
        drain(stream, to_the_end=True)  # autojump to each watch's (seeded) default timeout
    send("GET", "/kubesim/state")
    return out, server.trace.hexdigest()


@settings(max_examples=40, deadline=None, report_multiple_bugs=False)
@given(seed=st.integers(0, 2**32), script=st.lists(script_ops, max_size=25))
def test_the_same_seed_and_requests_give_byte_identical_responses(
    seed: int, script: list[ScriptOp]
) -> None:
    first_bytes, first_hash = run_script(seed, script)
    second_bytes, second_hash = run_script(seed, script)
    assert first_bytes == second_bytes
    assert first_hash == second_hash
