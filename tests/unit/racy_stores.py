"""A small corpus of racy and correct stores for the scheduler tests (traced at opcode level)."""

from __future__ import annotations

import threading
import time
from typing import Any


def _writer_in_place(obj: dict[str, Any]) -> None:
    for n in range(1, 4):
        obj["labels"][f"extra{n}"] = "y"
        obj["labels"]["gen"] = str(n)
        obj["rv"] = n
        obj["labels"].pop(f"extra{n - 1}", None)


def _reader(get: Any, out: list[tuple[str | None, int]]) -> None:
    for _ in range(3):
        obj = get()
        snap = {}
        for key, value in obj["labels"].items():
            snap[key] = value
        out.append((snap.get("gen"), obj["rv"]))


def _check(out: list[tuple[str | None, int]]) -> None:
    for gen, rv in out:
        assert gen == str(rv), f"torn read: labels say gen={gen} but rv={rv}"


def _run(writer: Any, reader: Any) -> None:
    w = threading.Thread(target=writer, name="writer")
    r = threading.Thread(target=reader, name="reader")
    w.start()
    r.start()
    w.join()
    r.join()


def in_place_scenario() -> None:
    """The writer mutates the shared object in place while the reader iterates it."""
    obj: dict[str, Any] = {"labels": {"gen": "0"}, "rv": 0}
    out: list[tuple[str | None, int]] = []
    _run(lambda: _writer_in_place(obj), lambda: _reader(lambda: obj, out))
    _check(out)


def copy_on_write_scenario() -> None:
    """The writer publishes a fresh object with one reference store: never torn."""
    box: dict[str, Any] = {"obj": {"labels": {"gen": "0"}, "rv": 0}}
    out: list[tuple[str | None, int]] = []

    def writer() -> None:
        for n in range(1, 4):
            labels = dict(box["obj"]["labels"])
            labels[f"extra{n}"] = "y"
            labels["gen"] = str(n)
            labels.pop(f"extra{n - 1}", None)
            box["obj"] = {"labels": labels, "rv": n}

    _run(writer, lambda: _reader(lambda: box["obj"], out))
    _check(out)


def locked_scenario() -> None:
    """Both sides hold one lock (patched to the simulated lock during the run)."""
    obj: dict[str, Any] = {"labels": {"gen": "0"}, "rv": 0}
    lock = threading.RLock()
    out: list[tuple[str | None, int]] = []

    def writer() -> None:
        for n in range(1, 4):
            with lock:
                obj["labels"][f"extra{n}"] = "y"
                obj["labels"]["gen"] = str(n)
                obj["rv"] = n
                obj["labels"].pop(f"extra{n - 1}", None)

    def reader() -> None:
        for _ in range(3):
            with lock:
                snap = dict(obj["labels"].items())
                out.append((snap.get("gen"), obj["rv"]))

    _run(writer, reader)
    _check(out)


def spin_scenario() -> None:
    """A thread that waits for a flag nobody sets, by spinning."""
    flag = {"set": False}

    def spin() -> None:
        while not flag["set"]:
            pass

    t = threading.Thread(target=spin, name="spinner")
    t.start()
    t.join()


def lost_update_scenario() -> None:
    """Two unnamed threads each add one to a shared count: ``d["n"] += 1`` is a read, an add and
    a store, so a preemption between the read and the store loses an update."""
    counts = {"n": 0}

    def bump() -> None:
        counts["n"] += 1

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts["n"] == 2, f"lost update: 2 threads added 1 each, the count is {counts['n']}"


def ticking_forever_scenario() -> None:
    """A thread that sleeps in a loop forever: only a virtual-time bound (max_time) ends it."""

    def tick() -> None:
        while True:
            time.sleep(1)

    t = threading.Thread(target=tick, name="ticker")
    t.start()
    t.join()


def check_then_act_scenario() -> None:
    """Two unnamed threads claim a job: each checks that nobody has, then claims it. A
    preemption between the check and the claim lets both claim; the message names them."""
    claimed: list[str] = []

    def claim() -> None:
        if not claimed:
            claimed.append(threading.current_thread().name)

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(claimed) == 1, f"claimed twice, by {claimed}"
