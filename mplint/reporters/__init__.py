"""Output formats: text (ruff-like), json, github (workflow annotations), sarif."""

from __future__ import annotations

from typing import Callable

from mplint.runner import RunResult

FORMATS = ("text", "json", "sarif", "github")


def get_reporter(name: str) -> Callable[[RunResult, "ReportContext"], str]:
    if name == "json":
        from mplint.reporters.json_format import render
    elif name == "sarif":
        from mplint.reporters.sarif import render
    elif name == "github":
        from mplint.reporters.github import render
    else:
        from mplint.reporters.text import render
    return render


class ReportContext:
    """What a reporter needs besides the results."""

    def __init__(self, fix: bool, unsafe: bool, diff: bool, quiet: bool) -> None:
        self.fix = fix
        self.unsafe = unsafe
        self.diff = diff
        self.quiet = quiet
