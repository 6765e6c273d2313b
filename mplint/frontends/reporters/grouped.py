"""`--output-format grouped`: findings under their file, as ruff's grouped format.

    model.py:
      3:1  MP103 warning: global policy 'float16' keeps the variables in float16; ...
     12:5  MP101 [*] error: the output of model `model` is float16 ...

Rows and columns are aligned within each file; notebook findings lead with their cell
(`cell 3:2:9`). The summary follows, as in the concise format.
"""

from __future__ import annotations

from itertools import groupby
from typing import TYPE_CHECKING

from mplint.frontends.reporters.text import labelled_message, with_summary

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult


def render(result: "RunResult", context: "ReportContext") -> str:
    style = context.style
    lines: list[str] = []
    for filename, group in groupby(result.findings, key=lambda f: f.filename):
        findings = list(group)
        places = [(f"cell {f.cell}:" if f.cell is not None else "") + str(f.location.row) for f in findings]
        place_width = max(len(p) for p in places)
        column_width = max(len(str(f.location.column)) for f in findings)
        lines.append(f"{style.bold(filename)}{style.punctuation(':')}")
        for place, f in zip(places, findings):
            where = f"{place:>{place_width}}{style.punctuation(':')}{f.location.column:<{column_width}}"
            lines.append(f"  {where} {style.code(f.code)} {labelled_message(f, context.unsafe, style)}")
        lines.append("")
    return with_summary(lines, result, context)
