"""`--output-format sarif`: SARIF 2.1.0 for GitHub code scanning and other viewers.

One run; the driver lists every rule (id, name, descriptions, help text and markdown
from the rule's docs, `helpUri` under the declared documentation URL); results carry
regions (columns in Unicode code points, `columnKind` says so) and fixes as
replacements. Notebook findings name their cell in the message and a `cell`
property; their region is the place in the `.ipynb` file's JSON where that source
text sits, when mplint can map it (see `mplint.inputs.notebook.FileLocator`), and they carry
no fixes (an edit of a cell is not an edit of the JSON text). Paths that could not be
read become tool execution notifications and make `executionSuccessful` false.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mplint import __version__
from mplint.core.codes import ENGINE_CODES, RULES
from mplint.core.diagnostics import Finding, Severity
from mplint.frontends.reporters.locations import FilePositions, message_with_cell, relative_path

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(filename: str) -> str:
    """A relative URI reference (percent-encoded, `/`-separated) for a reported path."""
    path = relative_path(filename)
    while path.startswith("./"):
        path = path[2:]
    if path.startswith("/"):
        return "file://" + quote(path)
    return quote(path)


def _rule_descriptor(code: str) -> dict[str, Any]:
    from mplint.catalogue.registry import rule_class
    from mplint.catalogue.ruledocs import web_doc_url

    rule = rule_class(code)
    doc = rule.doc() or rule.name
    descriptor: dict[str, Any] = {
        "id": code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary() or rule.name},
        "fullDescription": {"text": rule.doc_sections().get("What it does", doc)},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"fixAvailability": rule.fix_availability.value},
    }
    url = web_doc_url(code)
    if url:
        descriptor["helpUri"] = url
    return descriptor


def _engine_descriptor(code: str, name: str) -> dict[str, Any]:
    text = {
        "MP000": "The file could not be read or parsed as Python, so it was not checked.",
        "MP900": "mplint hit an internal error or discarded a fix that would break the code.",
    }[code]
    from mplint.catalogue.ruledocs import ENGINE_DOCS

    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": text},
        "fullDescription": {"text": text},
        "help": {"text": ENGINE_DOCS[code], "markdown": ENGINE_DOCS[code]},
        "defaultConfiguration": {"level": "error"},
    }


def _notebook_region(f: Finding, positions: FilePositions) -> dict[str, int] | None:
    start, end = positions.start(f), positions.end(f)
    if start is None:
        return None
    region = {"startLine": start[0], "startColumn": start[1]}
    if end is not None and end >= start:
        region.update(endLine=end[0], endColumn=end[1])
    return region


def _region(f: Finding) -> dict[str, int]:
    return {
        "startLine": f.location.row,
        "startColumn": f.location.column,
        "endLine": f.end_location.row,
        "endColumn": f.end_location.column,
    }


def _fixes(f: Finding) -> list[dict[str, Any]]:
    assert f.fix is not None
    return [
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
            "properties": {"applicability": f.fix.applicability.value},
        }
    ]


def _result(f: Finding, rule_index: dict[str, int], positions: FilePositions) -> dict[str, Any]:
    message = message_with_cell(f)
    location: dict[str, Any] = {"artifactLocation": {"uri": _uri(f.filename)}}
    region = _region(f) if f.cell is None else _notebook_region(f, positions)
    if region is not None:
        location["region"] = region
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index[f.code],
        "level": _LEVEL[f.severity],
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
    }
    properties: dict[str, Any] = {}
    if f.cell is not None:
        properties = {"cell": f.cell, "cellLocation": {"row": f.location.row, "column": f.location.column}}
    if f.detail:
        properties["detail"] = f.detail
    if f.premises:
        # How sure mplint is (the tier and each premise's status), apart from how bad it is (`level`).
        properties["tier"] = f.tier
        properties["premises"] = [p.to_json() for p in f.premises]
    if properties:
        result["properties"] = properties
    if f.fix is not None and f.cell is None:
        result["fixes"] = _fixes(f)
    return result


def _notifications(result: "RunResult") -> list[dict[str, Any]]:
    notes = []
    for problem in result.problems:
        notes.append({
            "level": "error",
            "message": {"text": f"{problem.path}: {problem.message}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(problem.path)}}}],
        })
    for warning in result.warnings:
        notes.append({"level": "warning", "message": {"text": warning}})
    return notes


def render(result: "RunResult", context: "ReportContext") -> str:
    rules = [_engine_descriptor(code, name) for code, name in sorted(ENGINE_CODES.items())]
    rules += [_rule_descriptor(code) for code in sorted(RULES)]
    rule_index = {rule["id"]: i for i, rule in enumerate(rules)}
    positions = FilePositions()
    invocation: dict[str, Any] = {"executionSuccessful": not result.problems and not result.internal_errors}
    notifications = _notifications(result)
    if notifications:
        invocation["toolExecutionNotifications"] = notifications
    from mplint.catalogue.ruledocs import homepage_url

    driver: dict[str, Any] = {"name": "mplint", "version": __version__, "semanticVersion": __version__}
    if homepage_url():
        driver["informationUri"] = homepage_url()
    driver["rules"] = rules
    sarif = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": driver},
                "invocations": [invocation],
                "columnKind": "unicodeCodePoints",
                "results": [_result(f, rule_index, positions) for f in result.findings],
            }
        ],
    }
    return json.dumps(sarif, indent=2) + "\n"
