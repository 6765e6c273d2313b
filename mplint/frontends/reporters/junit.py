"""`--output-format junit`: a JUnit XML report for CI test views.

One `<testsuite>` per file with findings (its name is the path), one failing
`<testcase>` per finding (name: the code and rule name; `file`, `line` and `column`
attributes; the message in `<failure>`). Paths that could not be read are `<error>`
test cases of their own suite. A run with nothing to report holds one passing test
case, so CI shows that mplint ran.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby
from typing import TYPE_CHECKING

from mplint.frontends.reporters.locations import FilePositions, message_with_cell, relative_path

if TYPE_CHECKING:
    from mplint.frontends.reporters import ReportContext
    from mplint.engine.runner import RunResult


def _suite(parent: ET.Element, name: str, tests: int, failures: int, errors: int) -> ET.Element:
    return ET.SubElement(parent, "testsuite", name=name, tests=str(tests), failures=str(failures),
                         errors=str(errors), skipped="0")


def render(result: "RunResult", context: "ReportContext") -> str:
    failures, errors = len(result.findings), len(result.problems)
    tests = failures + errors
    root = ET.Element("testsuites", name="mplint", tests=str(max(tests, 1)), failures=str(failures),
                      errors=str(errors))
    positions = FilePositions()
    for filename, group in groupby(result.findings, key=lambda f: f.filename):
        findings = list(group)
        path = relative_path(filename)
        suite = _suite(root, path, len(findings), len(findings), 0)
        for f in findings:
            line, column = positions.start(f) or (1, 1)
            case = ET.SubElement(suite, "testcase", name=f"{f.code} ({f.name})", classname=path, file=path,
                                 line=str(line), column=str(column))
            message = message_with_cell(f)
            failure = ET.SubElement(case, "failure", message=message, type=f.code)
            failure.text = f"{path}:{line}:{column}: {f.code} {message} [{f.severity.value}]"
    for problem in result.problems:
        path = relative_path(problem.path)
        suite = _suite(root, path, 1, 0, 1)
        case = ET.SubElement(suite, "testcase", name="mplint", classname=path, file=path)
        ET.SubElement(case, "error", message=problem.message).text = f"{path}: {problem.message}"
    if not tests:
        suite = _suite(root, "mplint", 1, 0, 0)
        ET.SubElement(suite, "testcase", name="no findings", classname="mplint")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
