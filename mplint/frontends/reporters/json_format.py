"""`--output-format json`: exactly a JSON array of finding objects."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult


def render(result: "RunResult", context: "ReportContext") -> str:
    return json.dumps([f.to_json() for f in result.findings], indent=2) + "\n"
