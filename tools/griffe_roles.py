"""A griffe extension for the API reference: Sphinx roles in docstrings become inline code.

kubesim's docstrings cross-reference with reStructuredText roles (:class:`Found`,
:func:`~kubesim.scenario.run.run_scenario`); mkdocstrings renders docstrings as Markdown, where
those would print as ``:class:`` followed by the name. This turns each into the name as code,
shortened to its last part when the role asks for it with ``~``. Loaded by mkdocs.yml.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc|obj):`(?P<tilde>~?)(?P<target>[^`]+)`")


def plain(text: str) -> str:
    """``text`` with every role replaced by its target as inline code."""

    def code(match: re.Match[str]) -> str:
        target = match["target"]
        return f"`{target.rsplit('.', 1)[-1] if match['tilde'] else target}`"

    return ROLE.sub(code, text)


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
