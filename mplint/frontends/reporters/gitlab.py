"""`--output-format gitlab`: a GitLab Code Quality report (a JSON array).

Each finding is `{"description", "check_name", "fingerprint", "severity",
"location": {"path", "lines": {"begin", "end"}}}`. Severities: error -> major,
warning -> minor, info -> info. Paths are relative to `CI_PROJECT_DIR` (GitLab sets
it to the checkout) or else the working directory. The fingerprint hashes the code,
the path and the message, not the line, so it stays the same across runs and when
code above the finding moves; identical findings in one file are told apart by their
order.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

from mplint.core.diagnostics import Severity
from mplint.frontends.reporters.locations import FilePositions, message_with_cell, relative_path

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult

_SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def render(result: "RunResult", context: "ReportContext") -> str:
    base = os.environ.get("CI_PROJECT_DIR") or None
    positions = FilePositions()
    seen: dict[str, int] = {}
    issues = []
    for f in result.findings:
        path = relative_path(f.filename, base)
        message = message_with_cell(f)
        identity = f"{f.code}\0{path}\0{f.cell or ''}\0{f.message}"
        repeat = seen[identity] = seen.get(identity, -1) + 1
        fingerprint = hashlib.sha256(f"{identity}\0{repeat}".encode()).hexdigest()
        begin = (positions.start(f) or (1, 1))[0]
        end = f.end_location.row if f.cell is None else (positions.end(f) or (begin, 1))[0]
        issues.append({
            "description": f"{f.code} {message}",
            "check_name": f.code,
            "fingerprint": fingerprint,
            "severity": _SEVERITY[f.severity],
            "location": {"path": path, "lines": {"begin": begin, "end": max(begin, end)}},
        })
    return json.dumps(issues, indent=2) + "\n"
