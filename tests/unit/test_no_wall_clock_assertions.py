"""No test asserts on wall-clock durations: time in tests is virtual, speed is for bench/.

An AST scan of tests/: a name bound from ``time.time()``, ``time.monotonic()``,
``time.perf_counter()`` (or their ``_ns`` forms), or from an expression using such a name, is
wall time; so is the matching element of a tuple returned by a function of the same module
that computes one. An ``assert`` that uses wall time fails this test. Inside a controlled
scheduler or a simulation ``time.monotonic()`` is virtual: mark such a line with
``# virtual time``. Hang guards (``if time.monotonic() > deadline: pytest.fail(...)``) are not
assertions about speed and are not flagged.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
WALL_CLOCK = {"time", "monotonic", "perf_counter", "time_ns", "monotonic_ns", "perf_counter_ns"}
# Files other branches were changing when this test was written; each entry must still offend,
# so the list only shrinks.
PENDING: set[str] = set()


def _is_clock_call(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in WALL_CLOCK
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "time"
    )


def _uses_wall_time(node: ast.AST, tainted: set[str]) -> bool:
    return any(
        _is_clock_call(n) or (isinstance(n, ast.Name) and n.id in tainted) for n in ast.walk(node)
    )


def _bind(
    target: ast.AST, value: ast.AST, tainted: set[str], wall_returns: dict[str, set[int]]
) -> None:
    if isinstance(target, ast.Name):
        if _uses_wall_time(value, tainted):
            tainted.add(target.id)
        return
    if isinstance(target, ast.Tuple):
        if isinstance(value, ast.Tuple):
            for t, v in zip(target.elts, value.elts, strict=False):
                _bind(t, v, tainted, wall_returns)
        elif (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in wall_returns
        ):
            for index, t in enumerate(target.elts):
                # "_" is the throwaway name; it is reused in comprehensions below.
                if index in wall_returns[value.func.id] and isinstance(t, ast.Name) and t.id != "_":
                    tainted.add(t.id)


def _scan_function(
    func: ast.FunctionDef | ast.AsyncFunctionDef, wall_returns: dict[str, set[int]]
) -> tuple[set[str], list[ast.Assert], set[int]]:
    """Tainted names, offending asserts, and which returned tuple elements are wall time."""
    tainted: set[str] = set()
    for _ in range(2):  # twice: a name may be tainted after its first use in source order
        for node in ast.walk(func):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    _bind(target, node.value, tainted, wall_returns)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign) and node.value is not None:
                _bind(node.target, node.value, tainted, wall_returns)
    asserts = [
        n for n in ast.walk(func) if isinstance(n, ast.Assert) and _uses_wall_time(n.test, tainted)
    ]
    returned: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Return) and node.value is not None:
            elements = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            returned |= {i for i, e in enumerate(elements) if _uses_wall_time(e, tainted)}
    return tainted, asserts, returned


def wall_clock_assertions(source: str) -> list[int]:
    """Line numbers of asserts on wall time in ``source`` (a test module)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    wall_returns: dict[str, set[int]] = {}
    for func in functions:
        _, _, returned = _scan_function(func, {})
        if returned:
            wall_returns[func.name] = returned
    found = set()
    for func in functions:
        for node in _scan_function(func, wall_returns)[1]:
            if "# virtual time" not in lines[node.lineno - 1]:
                found.add(node.lineno)
    return sorted(found)


def test_the_scan_finds_wall_clock_assertions() -> None:
    bad = [
        "import time\ndef t():\n    s = time.perf_counter()\n    f()\n"
        "    assert time.perf_counter() - s < 1.0\n",
        "import time\ndef t():\n    s = time.time()\n    f()\n"
        "    e = time.time() - s\n    assert e < 2\n",
        "import time\ndef h():\n    s = time.monotonic()\n    return 1, time.monotonic() - s\n"
        "def t():\n    n, wall = h()\n    assert n == 1\n    assert wall < 3.0\n"
        "    m, _ = h()\n    assert [_ for _ in range(m)]\n",
    ]
    assert [wall_clock_assertions(code) for code in bad] == [
        [5],
        [6],
        [8],
    ]  # not line 7: n is not wall time
    fine = [
        "import time\ndef t():\n    d = time.monotonic() + 30\n    while not ok():\n"
        "        if time.monotonic() > d:\n            raise AssertionError('hang')\n",
        "import time\ndef t():\n    assert time.monotonic() >= 3600  # virtual time\n",
        "def t(loop):\n    start = loop.time()\n    assert start == 0.0\n",
    ]
    assert [wall_clock_assertions(code) for code in fine] == [[], [], []]


def test_no_test_asserts_on_wall_time() -> None:
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        lines = wall_clock_assertions(path.read_text(encoding="utf-8"))
        if lines:
            offenders[path.relative_to(TESTS).as_posix()] = lines
    assert set(offenders) - PENDING == set(), f"asserts on wall time (file: lines): {offenders}"
    assert PENDING - set(offenders) == set(), (
        f"no longer asserting on wall time, remove from PENDING: {sorted(PENDING - set(offenders))}"
    )
