"""Colour for the human-readable formats, and when to use it (`--color`).

`--color auto` (the default) colours only output written to a terminal, unless the
environment says otherwise: `NO_COLOR` (any non-empty value) turns colour off and wins
over `FORCE_COLOR`, which turns it on for stdout and stderr when they are not a
terminal (a CI log). A report written with `--output-file` is not coloured.
`--color always` and `--color never` decide regardless of the terminal and the
environment. Machine-readable formats (json, sarif, github, gitlab, junit, pylint)
are never coloured.
"""

from __future__ import annotations

import os
from typing import IO

CHOICES = ("auto", "always", "never")

_BOLD, _RED, _YELLOW, _BLUE, _CYAN, _RESET = "\x1b[1m", "\x1b[31m", "\x1b[33m", "\x1b[34m", "\x1b[36m", "\x1b[0m"
_SEVERITY_COLOURS = {"error": _RED, "warning": _YELLOW, "info": _BLUE}


def use_color(choice: str, stream: IO | None) -> bool:
    """Whether to colour output written to `stream` (None: a file, not a terminal)."""
    if choice != "auto":
        return choice == "always"
    if stream is None or os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Style:
    """ANSI styling that is the identity when colour is off."""

    def __init__(self, color: bool = False) -> None:
        self.color = color

    def _wrap(self, codes: str, text: str) -> str:
        return f"{codes}{text}{_RESET}" if self.color and text else text

    def bold(self, text: str) -> str:
        return self._wrap(_BOLD, text)

    def code(self, text: str) -> str:
        """A rule code: bold red, as ruff prints it."""
        return self._wrap(_BOLD + _RED, text)

    def severity(self, text: str) -> str:
        """A severity word: red errors, yellow warnings, blue infos, as compilers print them."""
        return self._wrap(_SEVERITY_COLOURS.get(text, ""), text)

    def punctuation(self, text: str) -> str:
        """Separators and the fix marker: cyan."""
        return self._wrap(_CYAN, text)


PLAIN = Style(False)
