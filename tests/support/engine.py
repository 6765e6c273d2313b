"""Run the real engine on a snippet: findings, then the text after every fix."""

from __future__ import annotations

import textwrap

from mplint.engine.engine import FileSettings, check_document, lint
from mplint.inputs.source import decode_python


def lint_and_fix(source: str, codes: frozenset[str], target: str, extended: bool = False):
    """(findings before fixing, text after `--fix --unsafe-fixes`); the fixed text must
    compile and the run must produce no MP000/MP900."""
    source = textwrap.dedent(source)
    settings = FileSettings(codes=codes, target=target, extended=extended)
    doc = decode_python("m.py", source.encode())
    findings = lint(doc, settings, "m.py")
    outcome = check_document(doc, settings, "m.py", fix=True, unsafe=True)
    assert not [f for f in outcome.findings if f.code in ("MP000", "MP900")], outcome.findings
    compile(outcome.text, "m.py", "exec")
    return findings, outcome.text
