"""The documentation runs: every code block in docs/ and README.md is executed or visibly excused.

- Every fenced block says what it is: ``python``, ``sh``, ``text`` (output, diagrams,
  synopses: never run) or ``yaml`` (a configuration file such as a CI workflow: never run,
  but it must parse; tests/docs/test_ci_workflow.py checks the workflow's commands).
- ``python`` blocks of one page run in order in one namespace, so a page builds on its earlier
  blocks. A block whose first line is ``# file: NAME.py`` is the user's own module: it is written
  into a temporary directory on ``sys.path`` (and the working directory of the page's commands)
  instead of being executed, so a page can show a store module and then use it. A ``yaml``
  block with such a header (``# file: world.yaml``) is written there too, for the commands.
- ``python`` blocks import only from the public path (``kubesim``, ``kubesim.sched``,
  ``kubesim.sched.aio``, ``kubesim.checks``, ``kubesim.testing``, and only names in their
  ``__all__``), the standard library, installed third-party packages, and the page's own
  ``# file:`` modules. Attribute access such as ``kubesim.sim.threads`` counts as an import.
- ``sh`` blocks run: ``pip install`` steps are skipped (the test runs in an installed
  environment), each ``kubesim ...`` command runs as ``python -m kubesim.cli.main ...`` with its
  sizes capped (``SIZE_CAPS``) and must exit 0. Any other command fails the test unless the
  block is preceded by ``<!-- not-run: REASON -->``; such blocks are reported as skipped, with
  the reason, in pytest's summary.
- A ``text`` block preceded by ``<!-- output -->`` is the output of the ``sh`` or ``python``
  block before it: the test compares it with what the command or the code prints (times,
  rates, trace hashes and replay tokens masked, as they vary with the machine and the
  Python), so a page's sample output cannot drift from what kubesim or a script prints.
  ``KUBESIM_REGENERATE_DOCS=1 python -m pytest tests/docs/test_docs.py`` writes the new
  output into the page instead.
- A page that shows a third-party store (kopf, kubespawner) says so with
  ``<!-- requires: MODULE[, MODULE] -->``: its blocks are skipped, with the reason, where such a
  module cannot be imported (kopf needs Python 3.11+), and run everywhere else.
- Every relative link resolves to a file in the repository (and a ``#heading`` anchor in a
  Markdown target to one of its headings); inline-code paths into the repository exist.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")),
    "README.md",
]
KINDS = ("python", "sh", "text", "yaml")
PUBLIC_MODULES = (
    "kubesim",
    "kubesim.sched",
    "kubesim.sched.aio",
    "kubesim.checks",
    "kubesim.testing",
)
# Top-level folders of the repository that a user's code does not have.
REPO_ONLY = {"models", "tests", "bench"}
# Commands run with these options capped so the whole page runs in seconds; the verdicts the
# docs describe hold at these sizes (the quality tests check the full sizes).
SIZE_CAPS = {"--pods": 10, "--restarts": 4, "--examples": 60}
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<reason>[^>]*?)\s*-->")
# A block that shows a failure on purpose: its commands must exit with this code, not 0.
EXITS = re.compile(r"<!--\s*exits:\s*(?P<code>\d+)\s*-->")
REQUIRES = re.compile(r"<!--\s*requires:\s*(?P<modules>[\w., ]+?)\s*-->")
OUTPUT = re.compile(r"<!--\s*output\s*-->")
# What varies between machines in a command's output (times and rates), masked before comparing.
VOLATILE = ((re.compile(r"\(\d+(?:\.\d+)? s, \d+(?:\.\d+)? examples/s\)"), "(T s, R examples/s)"),)
TRACE = re.compile(r"trace [0-9a-f]{16}")
TOKEN = re.compile(r"ks1\.[A-Za-z0-9_-]+")
# What varies between Pythons: a replay token carries the Python version, and a trace hash
# depends on where the interpreter stops. The sample outputs are generated with DOCS_PYTHON (the
# default interpreter, CI's): on it they are compared as printed, so that a page's hashes and
# tokens cannot drift; on any other Python they are masked.
DOCS_PYTHON = "3.11.7"
PER_PYTHON = ((TRACE, "trace HASH"), (TOKEN, "ks1.TOKEN"))
FILE_HEADER = re.compile(r"#\s*file:\s*(?P<name>[A-Za-z_][A-Za-z0-9_-]*\.(?:py|yaml))\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    kind: str
    code: str
    not_run: str | None  # the reason, when the block is marked not-run
    exits: int = 0  # the exit code its commands must end with (<!-- exits: N -->)
    output: bool = False  # a text block marked <!-- output -->: the sh block before it prints it

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def module_file(self) -> str | None:
        first = self.code.split("\n", 1)[0]
        match = FILE_HEADER.match(first)
        return match["name"] if match else None


def blocks_of(page: str) -> list[Block]:
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if not stripped.startswith("```"):
            index += 1
            continue
        fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
        kind = stripped[len(fence) :].strip()
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index].strip() != fence:
            body.append(lines[index])
            index += 1
        index += 1  # the closing fence
        previous = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        marker = NOT_RUN.search(previous)
        reason = marker["reason"] if marker else None
        exits = EXITS.search(previous)
        code = int(exits["code"]) if exits else 0
        output = bool(OUTPUT.search(previous))
        found.append(Block(page, start + 1, kind, "\n".join(body) + "\n", reason, code, output))
    return found


ALL_BLOCKS = [block for page in PAGES for block in blocks_of(page)]


def test_the_collector_sees_the_docs() -> None:
    # Guards the collector itself: the README alone has python-free sh blocks, the how-to pages
    # have python blocks; an empty collection would make every test below vacuous.
    assert "docs/how-to/test-a-store.md" in PAGES
    kinds = {b.kind for b in ALL_BLOCKS}
    assert {"python", "sh"} <= kinds
    assert sum(b.kind == "python" for b in ALL_BLOCKS) >= 5


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: b.where)
def test_every_block_says_what_it_is(block: Block) -> None:
    assert block.kind in KINDS, (
        f"{block.where}: a fenced block must be one of {KINDS} (```text for output and "
        f"diagrams), got {block.kind!r}"
    )
    if block.not_run is not None:
        assert block.kind == "sh", f"{block.where}: only sh blocks may be marked not-run"
        assert block.not_run, f"{block.where}: a not-run marker needs a reason"


@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.kind == "yaml"], ids=lambda b: b.where
)
def test_yaml_blocks_parse(block: Block) -> None:
    import yaml

    documents = list(yaml.safe_load_all(block.code))  # a manifest file may hold several
    assert documents, f"{block.where}: no YAML document"
    for document in documents:
        assert isinstance(document, dict), f"{block.where}: not a YAML mapping"


# -- imports -----------------------------------------------------------------------------------
def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _public_names(module: str) -> set[str]:
    import importlib

    return set(importlib.import_module(module).__all__)


def import_problems(code: str, own_modules: set[str]) -> list[str]:
    """What in ``code`` reaches past the public path (empty when nothing does)."""
    problems: list[str] = []
    tree = ast.parse(code)
    _set_parents(tree)
    kubesim_aliases: dict[str, str] = {}  # local name -> public module it is bound to

    def check_module(module: str) -> None:
        top = module.split(".")[0]
        if top == "kubesim":
            if module not in PUBLIC_MODULES:
                problems.append(f"imports {module}, not a public module {PUBLIC_MODULES}")
        elif top in REPO_ONLY:
            problems.append(f"imports {module}, which only exists in kubesim's repository")
        elif top not in own_modules and top.startswith("_"):
            problems.append(f"imports the private module {module}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                check_module(alias.name)
                if alias.name in PUBLIC_MODULES:
                    kubesim_aliases[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else "kubesim"
                    )
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                problems.append(f"relative import from {module!r}")
                continue
            check_module(module)
            if module in PUBLIC_MODULES:
                public = _public_names(module)
                for alias in node.names:
                    if alias.name == "aio" and module == "kubesim.sched":
                        kubesim_aliases[alias.asname or "aio"] = "kubesim.sched.aio"
                    elif alias.name not in public:
                        problems.append(f"imports {alias.name} from {module}, not in its __all__")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or isinstance(
            getattr(node, "parent", None), ast.Attribute
        ):
            continue
        dotted = _dotted(node)
        if dotted is None:
            continue
        head, _, rest = dotted.partition(".")
        if head not in kubesim_aliases:
            continue
        module = kubesim_aliases[head]
        for part in rest.split("."):
            if f"{module}.{part}" in PUBLIC_MODULES:
                module = f"{module}.{part}"
                continue
            if part not in _public_names(module):
                problems.append(f"uses {module}.{part}, not in {module}.__all__")
            break
    return problems


def _set_parents(tree: ast.AST) -> None:
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            child.parent = parent  # type: ignore[attr-defined]


def test_the_import_rule_catches_internal_paths() -> None:
    # The rule itself can fail: each of these reaches past the public path.
    bad = [
        "from kubesim.sched.explore import explore",
        "from kubesim.sim.threads import controlled_server",
        "import kubesim.sched.scheduler",
        "from kubesim.sched import scheduler",
        "import kubesim\nkubesim.sched.scheduler.active()",
        "import kubesim\nkubesim.workload.make_pod('p', 'default')",
        "from kubesim import _core",
        "import models.kubearmor",
    ]
    for code in bad:
        assert import_problems(code, set()), code
    good = "import kubesim\nfrom kubesim.sched import Preemptions, aio\nkubesim.make_pod('p', 'x')"
    assert import_problems(good, set()) == []


PY_PAGES = sorted({b.page for b in ALL_BLOCKS if b.kind == "python"})


@pytest.mark.parametrize("page", PY_PAGES)
def test_python_blocks_import_only_the_public_path(page: str) -> None:
    blocks = [b for b in ALL_BLOCKS if b.page == page and b.kind == "python"]
    own = {b.module_file[: -len(".py")] for b in blocks if b.module_file}
    problems = []
    for block in blocks:  # the page's own modules are checked the same way
        try:
            ast.parse(block.code)
        except SyntaxError as exc:
            problems.append(f"{block.where}: does not parse: {exc}")
            continue
        problems += [f"{block.where}: {p}" for p in import_problems(block.code, own)]
    assert not problems, "\n".join(problems)


# -- running -----------------------------------------------------------------------------------
def _skip_without_requirements(page: str) -> None:
    import importlib.util

    text = (ROOT / page).read_text(encoding="utf-8")
    for marker in REQUIRES.finditer(text):
        for module in filter(None, (m.strip() for m in marker["modules"].split(","))):
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"{page} not run: it requires {module}, not importable here")


@contextlib.contextmanager
def _page_dir(tmp_path: Path) -> Iterator[Path]:
    before = set(sys.modules)
    old_cwd = os.getcwd()
    sys.path.insert(0, str(tmp_path))
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old_cwd)
        sys.path.remove(str(tmp_path))
        for name in set(sys.modules) - before:
            module = sys.modules.get(name)
            if str(tmp_path) in str(getattr(module, "__file__", "") or ""):
                del sys.modules[name]


def _write_modules(page: str, directory: Path) -> None:
    for block in ALL_BLOCKS:
        if block.page == page and block.kind in ("python", "yaml") and block.module_file:
            (directory / block.module_file).write_text(block.code, encoding="utf-8")


@pytest.mark.parametrize("page", PY_PAGES)
def test_python_blocks_run(page: str, tmp_path: Path) -> None:
    _skip_without_requirements(page)
    blocks = [b for b in ALL_BLOCKS if b.page == page and b.kind == "python"]
    namespace: dict[str, Any] = {"__name__": f"docs_{Path(page).stem.replace('-', '_')}"}
    environ = dict(os.environ)  # a plain script may point KUBECONFIG at its own server
    with _page_dir(tmp_path):
        _write_modules(page, tmp_path)
        try:
            for block in blocks:
                if block.module_file:
                    continue
                code = compile("\n" * (block.line) + block.code, str(ROOT / page), "exec")
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    exec(code, namespace)
                _compare_output(block, printed.getvalue())
        finally:
            os.environ.clear()
            os.environ.update(environ)


def _commands(code: str) -> list[str]:
    """The commands of an sh block: continuation lines joined, comments dropped, && split."""
    joined = code.replace("\\\n", " ")
    commands: list[str] = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        commands += [part.strip() for part in line.split("&&")]
    return commands


def _capped(args: list[str]) -> list[str]:
    out = list(args)
    for i, arg in enumerate(out[:-1]):
        if arg in SIZE_CAPS:
            out[i + 1] = str(min(int(out[i + 1]), SIZE_CAPS[arg]))
    return out


SH_BLOCKS = [b for b in ALL_BLOCKS if b.kind == "sh"]


@pytest.mark.parametrize("block", SH_BLOCKS, ids=lambda b: b.where)
def test_sh_blocks_run(block: Block, tmp_path: Path) -> None:
    if block.not_run is not None:
        pytest.skip(f"{block.where} not run: {block.not_run}")
    _skip_without_requirements(block.page)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path), str(ROOT), *filter(None, [env.get("PYTHONPATH")])]
    )
    _write_modules(block.page, tmp_path)
    ran = 0
    for command in _commands(block.code):
        args = shlex.split(command)
        if args[:2] == ["pip", "install"]:
            continue
        assert args[0] == "kubesim", (
            f"{block.where}: `{command}` is not run by the docs test; mark the block with "
            "<!-- not-run: REASON --> if it cannot run here"
        )
        proc = subprocess.run(
            [sys.executable, "-m", "kubesim.cli.main", *_capped(args[1:])],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert proc.returncode == block.exits, (
            f"{block.where}: `{command}` exited {proc.returncode}, expected {block.exits}\n"
            + proc.stdout[-2000:]
            + proc.stderr[-2000:]
        )
        ran += 1
        printed = proc.stdout
    assert ran, f"{block.where}: an sh block with nothing to run"
    _compare_output(block, printed)


def _compare_output(block: Block, printed: str) -> None:
    """The ``<!-- output -->`` text block after ``block``, if any, is what it printed."""
    shown = _output_block(block)
    if shown is not None:
        compare_shown(shown, printed)


def compare_shown(shown: Block, printed: str) -> None:
    """The text block ``shown`` is ``printed`` (masked as the module docstring says), or, with
    ``KUBESIM_REGENERATE_DOCS``, becomes it."""
    if os.environ.get("KUBESIM_REGENERATE_DOCS"):
        _rewrite(shown, printed)
        return
    exact = platform.python_version() == DOCS_PYTHON
    assert _masked(printed, exact=exact) == _masked(shown.code, exact=exact), (
        f"{shown.where}: the output shown is not what the block prints now "
        "(KUBESIM_REGENERATE_DOCS=1 rewrites it):\n" + printed
    )


def _output_block(block: Block) -> Block | None:
    """The text block marked ``<!-- output -->`` right after ``block``, if any."""
    page = [b for b in ALL_BLOCKS if b.page == block.page]
    following = page[page.index(block) + 1 :]
    if following and following[0].kind == "text" and following[0].output:
        return following[0]
    return None


def _masked(text: str, *, exact: bool = False) -> str:
    for pattern, replacement in VOLATILE if exact else VOLATILE + PER_PYTHON:
        text = pattern.sub(replacement, text)
    return text.rstrip("\n")


@pytest.mark.parametrize("page", PAGES)
def test_a_command_replays_a_token_the_page_printed(page: str) -> None:
    """A ``kubesim replay TOKEN`` the page runs replays what the page shows printed: a tutorial
    whose check was re-run must not leave the reader replaying an older example (the outputs
    are compared as printed on DOCS_PYTHON, but a command's token is only run, and an older
    example may fail as well)."""
    blocks = [b for b in ALL_BLOCKS if b.page == page]
    # Outputs, and the text blocks a findings page quotes from its campaigns.
    printed = "".join(b.code for b in blocks if b.kind == "text")
    for block in blocks:
        if block.kind != "sh" or block.not_run is not None:
            continue
        for token in TOKEN.findall(block.code):
            assert token in printed, (
                f"{block.where}: replays {token[:24]}..., which no output on the page prints; "
                "copy the token from the output it follows"
            )


def _rewrite(block: Block, printed: str) -> None:
    # Located again by its position among the page's blocks: an earlier rewrite may have moved
    # the lines since the collection.
    ordinal = [b for b in ALL_BLOCKS if b.page == block.page].index(block)
    current = blocks_of(block.page)[ordinal]
    path = ROOT / block.page
    lines = path.read_text(encoding="utf-8").split("\n")
    start = current.line  # the line after the opening fence (fence lines are 1-based)
    body = current.code.rstrip("\n")
    end = start + (len(body.split("\n")) if body else 0)  # an empty block has no line to replace
    lines[start:end] = printed.rstrip("\n").split("\n")
    path.write_text("\n".join(lines), encoding="utf-8")


# -- references --------------------------------------------------------------------------------
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")
INLINE_CODE = re.compile(r"`(?P<code>[^`\n]+)`")
REPO_PATH = re.compile(r"^(?P<path>[\w.-]+(?:/[\w.-]+)+\.(?:md|py|png|toml|ini|txt|json))\b")
# Paths a command writes (git-ignored outputs), named in the docs but not in the repository.
GENERATED = {"bench/results/kmock.json"}


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {
        _slug(line.lstrip("#"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def _prose(page: str) -> str:
    """The page without its fenced blocks."""
    text = (ROOT / page).read_text(encoding="utf-8")
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


@pytest.mark.parametrize("page", PAGES)
def test_references_resolve_inside_the_repository(page: str) -> None:
    problems = []
    prose = _prose(page)
    base = (ROOT / page).parent
    for match in LINK.finditer(prose):
        target = match["target"]
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (base / path).resolve() if path else ROOT / page
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            problems.append(f"link {target!r} does not resolve to a file in the repository")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            problems.append(f"link {target!r}: no heading #{anchor} in {path or page}")
    for match in INLINE_CODE.finditer(prose):
        code = match["code"]
        if "shared/" in code or "ARCHITECTURE.md" in code:
            problems.append(f"`{code}` names a file outside the repository")
            continue
        found = REPO_PATH.match(code)
        if found and found["path"] not in GENERATED and not (ROOT / found["path"]).exists():
            problems.append(f"`{code}`: no such file in the repository")
    assert not problems, f"{page}:\n" + "\n".join(problems)


def test_reference_rule_catches_missing_files(tmp_path: Path) -> None:
    assert REPO_PATH.match("shared/reference/k8s-wire.md")
    assert not (ROOT / "shared/reference/k8s-wire.md").exists()
    assert _slug("## The determinism contract".lstrip("#")) == "the-determinism-contract"
