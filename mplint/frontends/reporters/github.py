"""`--output-format github`: GitHub Actions workflow commands (annotations).

    ::error file=model.py,line=12,col=5,endLine=12,endColumn=40,title=MP101::MP101 ...

Errors become `::error`, warnings `::warning`, info `::notice`. Paths are relative
to the working directory (where the workflow checked the repository out) when they
are below it. Notebook findings keep their cell in the message (`cell 3:2:9: ...`)
and are annotated on the line of the `.ipynb` file that holds that source text when
mplint can map it (see `mplint.inputs.notebook.FileLocator`), else on the file as a whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mplint.core.diagnostics import Finding, Severity
from mplint.frontends.reporters.locations import FilePositions, message_with_cell, relative_path

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def _position(f: Finding, positions: FilePositions) -> list[str]:
    start = positions.start(f)
    if start is None:
        return []
    if f.cell is not None:
        return [f"line={start[0]}", f"col={start[1]}"]
    return [
        f"line={start[0]}",
        f"col={start[1]}",
        f"endLine={f.end_location.row}",
        f"endColumn={f.end_location.column}",
    ]


def render(result: "RunResult", context: "ReportContext") -> str:
    lines = []
    positions = FilePositions()
    for f in result.findings:
        props = [f"file={_escape_property(relative_path(f.filename))}", *_position(f, positions)]
        message = message_with_cell(f, lead=f"{f.code} ")
        props.append(f"title={_escape_property(f.code)}")
        lines.append(f"::{_COMMAND[f.severity]} {','.join(props)}::{_escape_data(message)}")
    for problem in result.problems:
        lines.append(f"::error file={_escape_property(relative_path(problem.path))},title=mplint::"
                     f"{_escape_data(problem.message)}")
    return "\n".join(lines) + ("\n" if lines else "")
