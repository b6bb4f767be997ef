"""Words for messages: a count with its noun, and the close match for a misspelt name.

In one place so that every message says them the same way: "1 example", "2 examples";
"(did you mean 'reflector'?)" for a factory's attribute, a step kind, an oracle or a resource.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 example``, ``2 examples`` (``plural`` for nouns that do not just take an s)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to ``word``, or ``""``.

    :func:`difflib.get_close_matches` at its default cutoff: a transposition or a missing
    letter matches, an unrelated word does not.
    """
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
