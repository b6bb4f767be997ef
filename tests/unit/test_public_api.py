"""The façade exports exactly what __all__ lists (Hypothesis' strategies/__init__ habit)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kubesim


def test_all_names_exist_and_nothing_public_is_missing() -> None:
    exported = set(kubesim.__all__)
    assert all(hasattr(kubesim, name) for name in exported)
    public = {
        name
        for name, value in vars(kubesim).items()
        if not name.startswith("_")
        # pytest rewrites asserts in an installed plugin's distribution, adding "@py_builtins"
        and name.isidentifier()
        and not getattr(value, "__name__", "").startswith("kubesim.")
        and name not in ("annotations",)
    }
    assert public <= exported, f"public but not in __all__: {sorted(public - exported)}"
    assert sorted(kubesim.__all__) == list(kubesim.__all__), "keep __all__ sorted"


def test_kubesim_testing_exports_exactly_what_all_lists() -> None:
    import kubesim.testing as testing

    exported = set(testing.__all__)
    assert len(exported) == len(testing.__all__), "a name is listed twice in __all__"
    assert all(getattr(testing, name) is not None for name in exported)
    assert exported == set(testing._EXPORTS), "the lazy table and __all__ disagree"
    assert exported <= set(dir(testing))
    with pytest.raises(AttributeError, match="has no attribute 'check_stores'"):
        _ = testing.check_stores  # type: ignore[attr-defined]


@pytest.mark.parametrize("package", ["kubesim", "kubesim.testing", "kubesim.checks"])
def test_importing_a_facade_imports_nothing_until_a_name_is_used(package: str) -> None:
    # pytest imports kubesim.testing.pytest_plugin (hence these packages) in every run where
    # kubesim is installed: they must not pull in the server, the simulation or Hypothesis.
    probe = (
        f"import sys, {package}; "
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in "
        "('kubesim', 'hypothesis', 'kubernetes', 'orjson')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    loaded = set(done.stdout.split())
    assert loaded <= {"kubesim", "kubesim._lazy", "kubesim.checks", "kubesim.testing"}, loaded
