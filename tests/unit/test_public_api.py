"""The façade exports exactly what __all__ lists (Hypothesis' strategies/__init__ habit)."""

from __future__ import annotations

import kubesim


def test_all_names_exist_and_nothing_public_is_missing() -> None:
    exported = set(kubesim.__all__)
    assert all(hasattr(kubesim, name) for name in exported)
    public = {
        name
        for name, value in vars(kubesim).items()
        if not name.startswith("_")
        and not getattr(value, "__name__", "").startswith("kubesim.")
        and name not in ("annotations",)
    }
    assert public <= exported, f"public but not in __all__: {sorted(public - exported)}"
    assert sorted(kubesim.__all__) == list(kubesim.__all__), "keep __all__ sorted"
