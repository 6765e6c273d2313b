"""`--statistics`: how many findings each rule has, instead of the findings.

Text (the concise, text and grouped formats), as ruff and flake8 print it: count, code,
`[*]` when `--fix` would fix some of them (`[ ]` when not, shown only if any row is
fixable), name; then the summary. JSON: an array of
`{"code", "name", "count", "fixable", "fixable_count"}`. Most findings first.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mplint.frontends.reporters.text import with_summary

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult

FORMATS = ("concise", "text", "grouped", "json")


def rows(result: "RunResult", unsafe: bool) -> list[dict]:
    by_code: dict[str, dict] = {}
    for f in result.findings:
        row = by_code.setdefault(f.code, {"code": f.code, "name": f.name, "count": 0, "fixable": False,
                                          "fixable_count": 0})
        row["count"] += 1
        if f.fix is not None and f.fix.applies(unsafe):
            row["fixable"] = True
            row["fixable_count"] += 1
    return sorted(by_code.values(), key=lambda r: (-r["count"], r["code"]))


def render(result: "RunResult", context: "ReportContext", output_format: str) -> str:
    table = rows(result, context.unsafe)
    if output_format == "json":
        return json.dumps(table, indent=2) + "\n"
    style = context.style
    lines = []
    if table:
        count_width = max(len(str(r["count"])) for r in table)
        code_width = max(len(r["code"]) for r in table)
        any_fixable = any(r["fixable"] for r in table)
        for r in table:
            marker = (f"[{style.punctuation('*')}] " if r["fixable"] else "[ ] ") if any_fixable else ""
            code = style.code(f"{r['code']:<{code_width}}")
            lines.append(f"{style.bold(str(r['count']).rjust(count_width))}\t{code}\t{marker}{r['name']}")
    return with_summary(lines, result, context)
