"""`--output-format sarif`: SARIF 2.1.0 for GitHub code scanning and other viewers.

One run; the driver lists every rule (id, name, descriptions, help text from the
rule's docs); results carry regions and, for Python files, fixes as replacements.
Notebook findings name their cell in the message and a `cell` property (their rows
are cell-relative, so they carry no region in file coordinates).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from mplint import __version__
from mplint.codes import ENGINE_CODES, RULES
from mplint.diagnostics import Finding, Severity

if TYPE_CHECKING:
    from mplint.reporters import ReportContext
    from mplint.runner import RunResult

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(filename: str) -> str:
    path = filename
    if os.path.isabs(path):
        try:
            path = os.path.relpath(path)
        except ValueError:
            pass
    path = path.replace(os.sep, "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def _rule_descriptor(code: str) -> dict[str, Any]:
    from mplint.registry import rule_class

    rule = rule_class(code)
    doc = rule.doc()
    return {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary() or rule.name},
        "fullDescription": {"text": doc or rule.name},
        "help": {"text": doc or rule.name, "markdown": doc or rule.name},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"fixAvailability": rule.fix_availability.value},
    }


def _engine_descriptor(code: str, name: str) -> dict[str, Any]:
    text = {
        "MP000": "The file could not be read or parsed as Python, so it was not checked.",
        "MP900": "mplint hit an internal error or discarded a fix that would break the code.",
    }[code]
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": text},
        "fullDescription": {"text": text},
        "help": {"text": text},
        "defaultConfiguration": {"level": "error"},
    }


def _region(f: Finding) -> dict[str, int]:
    return {
        "startLine": f.location.row,
        "startColumn": f.location.column,
        "endLine": f.end_location.row,
        "endColumn": f.end_location.column,
    }


def _result(f: Finding, rule_index: dict[str, int]) -> dict[str, Any]:
    message = f.message if f.cell is None else f"cell {f.cell}:{f.location.row}:{f.location.column}: {f.message}"
    location: dict[str, Any] = {"artifactLocation": {"uri": _uri(f.filename)}}
    if f.cell is None:
        location["region"] = _region(f)
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index[f.code],
        "level": _LEVEL[f.severity],
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
    }
    if f.cell is not None:
        result["properties"] = {"cell": f.cell}
    if f.fix is not None and f.cell is None:
        result["fixes"] = [
            {
                "description": {"text": f"{f.fix.message} ({f.fix.applicability.value} fix)"},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(f.filename)},
                        "replacements": [
                            {
                                "deletedRegion": {
                                    "startLine": e.location.row,
                                    "startColumn": e.location.column,
                                    "endLine": e.end_location.row,
                                    "endColumn": e.end_location.column,
                                },
                                "insertedContent": {"text": e.content},
                            }
                            for e in f.fix.edits
                        ],
                    }
                ],
            }
        ]
    return result


def render(result: "RunResult", context: "ReportContext") -> str:
    rules = [_engine_descriptor(code, name) for code, name in sorted(ENGINE_CODES.items())]
    rules += [_rule_descriptor(code) for code in sorted(RULES)]
    rule_index = {rule["id"]: i for i, rule in enumerate(rules)}
    sarif = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mplint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": rules,
                    }
                },
                "results": [_result(f, rule_index) for f in result.findings],
            }
        ],
    }
    return json.dumps(sarif, indent=2) + "\n"
