"""Output formats, as ruff names them.

concise (also `text`, the default), grouped: for people, with a summary and colour
on a terminal; json, sarif, github, gitlab, junit, pylint: for tools, exactly the
report and never coloured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Callable

from mplint.frontends.reporters.style import PLAIN, Style

if TYPE_CHECKING:
    from mplint.engine.runner import RunResult

_MODULES = {
    "concise": "text", "text": "text", "grouped": "grouped", "json": "json_format", "sarif": "sarif",
    "github": "github", "gitlab": "gitlab", "junit": "junit", "pylint": "pylint",
}
FORMATS = tuple(_MODULES)
HUMAN_FORMATS = ("concise", "text", "grouped")  # with a summary; coloured on a terminal


def get_reporter(name: str) -> Callable[["RunResult", "ReportContext"], str]:
    return import_module(f"mplint.frontends.reporters.{_MODULES[name]}").render


@dataclass(frozen=True)
class ReportContext:
    """What a reporter needs besides the results."""

    fix: bool = False
    unsafe: bool = False
    diff: bool = False
    quiet: bool = False
    show_fixes: bool = False
    style: Style = field(default=PLAIN)
