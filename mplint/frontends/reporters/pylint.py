"""`--output-format pylint`: `path:line: [CODE] message`, as ruff and pylint's
parseable format print it. Notebook findings are placed on the line of the `.ipynb`
file that holds their source (line 1 when mplint cannot map it) and name their cell
in the message."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mplint.frontends.reporters.locations import FilePositions, message_with_cell

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult


def render(result: "RunResult", context: "ReportContext") -> str:
    positions = FilePositions()
    lines = []
    for f in result.findings:
        line = (positions.start(f) or (1, 1))[0]
        lines.append(f"{f.filename}:{line}: [{f.code}] {message_with_cell(f)}")
    return "\n".join(lines) + ("\n" if lines else "")
