"""`--output-format github`: GitHub Actions workflow commands (annotations).

    ::error file=model.py,line=12,col=5,endLine=12,endColumn=40,title=MP101::MP101 ...

Errors become `::error`, warnings `::warning`, info `::notice`. Notebook findings are
annotated on the file (their rows are cell-relative) with the cell in the message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mplint.diagnostics import Severity

if TYPE_CHECKING:
    from mplint.reporters import ReportContext
    from mplint.runner import RunResult

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def render(result: "RunResult", context: "ReportContext") -> str:
    lines = []
    for f in result.findings:
        props = [f"file={_escape_property(f.filename)}"]
        message = f"{f.code} {f.message}"
        if f.cell is None:
            props += [
                f"line={f.location.row}",
                f"col={f.location.column}",
                f"endLine={f.end_location.row}",
                f"endColumn={f.end_location.column}",
            ]
        else:
            message = f"cell {f.cell}:{f.location.row}:{f.location.column}: {message}"
        props.append(f"title={_escape_property(f.code)}")
        lines.append(f"::{_COMMAND[f.severity]} {','.join(props)}::{_escape_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")
