"""Replay tokens: one failing example, as a string a person pastes into a shell.

A token holds everything :func:`kubesim.scenario.run.run_scenario` needs to run the same
example again: the factory spec, the steps (as data), the thread schedule, the seed, the setup
and the traced modules, plus the kubesim version and Python version it was found with (a replay
on another version still runs, and says so, since opcode-level schedules do not carry across
Python versions). It is base64url of compressed JSON: short enough for an issue comment.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
import zlib
from dataclasses import dataclass
from typing import Any

from kubesim.scenario.run import Setup
from kubesim.scenario.steps import Step, step_from_json

TOKEN_PREFIX = "ks1."


class InvalidReplayToken(ValueError):
    """The text is not a kubesim replay token (or was cut when copied)."""


@dataclass(frozen=True)
class Replay:
    """One example, everything needed to run it again; :meth:`token` and :meth:`command`."""

    factory: str
    steps: tuple[Step, ...]
    schedule: tuple[int, ...]
    seed: int | str
    setup: Setup
    traced: tuple[str, ...] = ()
    kubesim_version: str = ""
    python: str = ""
    # The oracles the campaign judged by (``check_store(oracles=...)``); None: every one.
    oracles: tuple[str, ...] | None = None

    def token(self) -> str:
        """The ``ks1.`` token: base64url of compressed JSON."""
        data = {
            "factory": self.factory,
            "steps": [step.to_json() for step in self.steps],
            "schedule": list(self.schedule),
            "seed": self.seed,
            "setup": {
                "pods": self.setup.pods,
                "namespaces": self.setup.namespaces,
                "tail_rounds": self.setup.tail_rounds,
                **self.setup.world_json(),
                # The instruments a campaign turned off, which change the run (the fresh
                # store's threads) and what judges it: only when off, so older tokens stay.
                **({} if self.setup.memory else {"memory": False}),
                **({} if self.setup.fresh else {"fresh": False}),
            },
            **({} if self.oracles is None else {"oracles": list(self.oracles)}),
            "traced": list(self.traced),
            "kubesim": self.kubesim_version,
            "python": self.python,
        }
        raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
        packed = base64.urlsafe_b64encode(zlib.compress(raw, 9)).rstrip(b"=").decode()
        return TOKEN_PREFIX + packed

    def command(self) -> str:
        """The replay line: ``kubesim replay ks1....``."""
        return f"kubesim replay {self.token()}"

    def run(self, *, timeline: bool = False) -> Any:
        """Run the example again, as ``kubesim replay`` does: the factory and the traced
        modules imported by name (a :class:`~kubesim.sim.store.StoreContractError` if one
        cannot be), the same steps, schedule, seed and setup. Returns the
        :class:`~kubesim.scenario.run.ScenarioResult`."""
        import importlib

        from kubesim.scenario.run import run_scenario
        from kubesim.sim.store import StoreContractError, load_factory

        factory = load_factory(self.factory)
        traced = []
        for name in self.traced:
            try:
                traced.append(importlib.import_module(name))
            except ImportError as exc:
                raise StoreContractError(f"cannot import traced module {name!r}: {exc}") from exc
        return run_scenario(
            factory,
            self.steps,
            seed=self.seed,
            setup=self.setup,
            schedule=self.schedule,
            traced=traced,
            spec=self.factory,
            timeline=timeline,
        )


def python_version() -> str:
    return ".".join(str(part) for part in sys.version_info[:3])


def parse_token(token: str) -> Replay:
    """The :class:`Replay` a token describes; :class:`InvalidReplayToken` if it is not one."""
    text = token.strip()
    if not text.startswith(TOKEN_PREFIX):
        raise InvalidReplayToken(
            f"a replay token starts with {TOKEN_PREFIX!r}; got {text[:20]!r}... (was it cut?)"
        )
    body = text[len(TOKEN_PREFIX) :]
    try:
        raw = zlib.decompress(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        data: Any = json.loads(raw)
        steps = tuple(step_from_json(item) for item in data["steps"])
        setup = Setup(**data["setup"])
        return Replay(
            factory=str(data["factory"]),
            steps=steps,
            schedule=tuple(int(p) for p in data["schedule"]),
            seed=data["seed"],
            setup=setup,
            traced=tuple(data.get("traced", ())),
            kubesim_version=str(data.get("kubesim", "")),
            python=str(data.get("python", "")),
            oracles=None if data.get("oracles") is None else tuple(data["oracles"]),
        )
    except (binascii.Error, zlib.error, ValueError, KeyError, TypeError) as exc:
        raise InvalidReplayToken(f"not a valid kubesim replay token ({exc}); was it cut?") from exc
