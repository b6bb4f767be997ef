"""Collect and validate the named mutants from ``tests/mutation/mutants_*.py``.

Each of those files defines ``MUTANTS``, a list of dicts with exactly these keys:

- ``name``: short kebab-case name, unique across all files;
- ``path``: the file to patch, relative to the repository root, inside ``kubesim/``;
- ``old``: text that occurs exactly once in ``path``;
- ``new``: the weakened text that replaces it, or "" to delete it (the file must still compile);
- ``tests``: pytest node ids (``tests/<tier>/test_x.py::test_y``) that must fail with the patch;
- ``why``: one line saying what the mutant weakens.

Nothing here raises on a bad entry: every problem is recorded on the :class:`Mutant` (a file
that does not load becomes one entry named after the file), so that the test for that entry
fails with a message naming it while every other mutant still runs.
"""

from __future__ import annotations

import ast
import os
import re
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(os.path.abspath(__file__)).parents[2]  # as tests/conftest.py spells it
MUTATION_DIR = ROOT / "tests" / "mutation"
KEYS = ("name", "path", "old", "new", "tests", "why")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_PARAMS = re.compile(r"\[.*\]$")


@dataclass(frozen=True)
class Mutant:
    """One named mutant; ``problems`` is empty when the entry is valid and can be run."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str
    source: str  # the mutants_*.py file it came from, relative to the repository root
    problems: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.problems

    def patched_source(self, root: Path = ROOT) -> str:
        return (root / self.path).read_text().replace(self.old, self.new, 1)


def load_mutants(*, root: Path = ROOT, folder: Path = MUTATION_DIR) -> list[Mutant]:
    """Every mutant of every ``mutants_*.py`` in ``folder``, in file then list order."""
    mutants: list[Mutant] = []
    for file in sorted(folder.glob("mutants_*.py")):
        mutants.extend(_load_file(file, root))
    _mark_duplicate_names(mutants)
    return mutants


def _load_file(file: Path, root: Path) -> list[Mutant]:
    source = file.relative_to(root).as_posix()
    try:
        namespace = runpy.run_path(str(file))
    except Exception as exc:
        return [_broken(file.stem, source, f"{source} does not load: {exc!r}")]
    entries = namespace.get("MUTANTS")
    if not isinstance(entries, list) or not entries:
        return [_broken(file.stem, source, f"{source} must define MUTANTS, a non-empty list")]
    return [_entry(entry, index, source, root) for index, entry in enumerate(entries)]


def _broken(name: str, source: str, problem: str) -> Mutant:
    return Mutant(name, "", "", "", (), "", source, (problem,))


def _entry(entry: Any, index: int, source: str, root: Path) -> Mutant:
    where = f"{source} MUTANTS[{index}]"
    if not isinstance(entry, dict):
        return _broken(f"{Path(source).stem}-{index}", source, f"{where} is not a dict")
    problems: list[str] = []
    missing = [key for key in KEYS if key not in entry]
    unknown = sorted(set(entry) - set(KEYS))
    if missing:
        problems.append(f"{where} lacks {', '.join(missing)}")
    if unknown:
        problems.append(f"{where} has unknown keys {', '.join(unknown)} (expected {KEYS})")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        problems.append(f"{where}: name must be short kebab-case text, got {name!r}")
        name = f"{Path(source).stem}-{index}"
    texts = {key: entry.get(key) for key in ("path", "old", "new", "why")}
    for key, value in texts.items():
        # new may be empty: the mutant deletes old.
        if not isinstance(value, str) or (not value and key != "new"):
            problems.append(f"{where} ({name}): {key} must be non-empty text, got {value!r}")
    tests = entry.get("tests")
    if (
        not isinstance(tests, (list, tuple))
        or not tests
        or not all(isinstance(t, str) for t in tests)
    ):
        problems.append(f"{where} ({name}): tests must be a non-empty list of node ids")
        tests = ()
    mutant = Mutant(
        name=name,
        path=texts["path"] if isinstance(texts["path"], str) else "",
        old=texts["old"] if isinstance(texts["old"], str) else "",
        new=texts["new"] if isinstance(texts["new"], str) else "",
        tests=tuple(tests),
        why=texts["why"] if isinstance(texts["why"], str) else "",
        source=source,
    )
    if not problems:
        problems.extend(_patch_problems(mutant, root))
        problems.extend(p for test in mutant.tests for p in _test_problems(test, root))
    return Mutant(**{**mutant.__dict__, "problems": tuple(f"{name}: {p}" for p in problems)})


def _patch_problems(mutant: Mutant, root: Path) -> list[str]:
    path = mutant.path
    if Path(path).is_absolute() or not path.startswith("kubesim/") or not path.endswith(".py"):
        return [
            f"path must be a .py file inside kubesim/, relative to the repository, got {path!r}"
        ]
    file = root / path
    if not file.is_file():
        return [f"{path} does not exist"]
    count = file.read_text().count(mutant.old)
    if count != 1:
        return [f"old must occur exactly once in {path}, found {count} times: {mutant.old!r}"]
    if mutant.new == mutant.old:
        return ["new is the same as old: the mutant would change nothing"]
    try:
        compile(mutant.patched_source(root), path, "exec")
    except SyntaxError as exc:
        return [f"{path} does not compile with the patch: {exc}"]
    return []


def _test_problems(node_id: str, root: Path) -> list[str]:
    file_part, _, rest = node_id.partition("::")
    if not rest:
        return [f"test {node_id!r} must name a test function: path.py::test_name"]
    if not file_part.startswith("tests/") or file_part.startswith("tests/mutation/"):
        return [f"test {node_id!r} must be a test under tests/, outside tests/mutation/"]
    file = root / file_part
    if not file.is_file():
        return [f"test file {file_part} of {node_id!r} does not exist"]
    scope: list[ast.stmt] = ast.parse(file.read_text()).body
    for part in _PARAMS.sub("", rest).split("::"):
        found = _definition(scope, part)
        if found is None:
            return [f"test {node_id!r} does not exist: no {part!r} in {file_part}"]
        if isinstance(found, ast.Assign):
            return []  # an assigned test class (Machine.TestCase): its methods are generated
        scope = found.body if isinstance(found, ast.ClassDef) else []
    return []


def _definition(body: list[ast.stmt], name: str) -> ast.stmt | None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return node
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in node.targets
        ):
            return node  # e.g. TestMachine = Machine.TestCase
    return None


def _mark_duplicate_names(mutants: list[Mutant]) -> None:
    first: dict[str, Mutant] = {}
    for index, mutant in enumerate(mutants):
        other = first.setdefault(mutant.name, mutant)
        if other is not mutant:
            problem = f"{mutant.name}: name also used in {other.source}; names must be unique"
            mutants[index] = Mutant(**{**mutant.__dict__, "problems": (*mutant.problems, problem)})
