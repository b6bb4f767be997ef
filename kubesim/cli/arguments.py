"""What every ``kubesim`` subcommand shares: exit codes and the parsing of its arguments."""

from __future__ import annotations

import argparse
from typing import Any

EXIT_OK = 0
EXIT_EXPECTATION_FAILED = 1
EXIT_USAGE = 2


def load_factory(spec: str) -> Any:
    """Resolve a factory spec (``module:attribute`` or ``path/to/file.py:attribute``).

    The CLI face of :func:`kubesim.sim.store.load_factory`: a bad spec raises
    ``argparse.ArgumentTypeError`` with the same message, for a usage error (exit 2).
    """
    from kubesim.sim.store import StoreContractError
    from kubesim.sim.store import load_factory as resolve

    try:
        return resolve(spec)
    except StoreContractError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def seed(text: str) -> int | str:
    """A ``--seed``: an integer, or any other text (hashed by the choice source)."""
    return int(text) if text.lstrip("-").isdigit() else text
