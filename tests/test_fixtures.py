"""Every fixture case, through the real engine: findings, fix, idempotence, validity."""

from __future__ import annotations

import pytest

from mplint.core.codes import RULES
from mplint.engine.engine import check_document, lint
from mplint.engine.prefilter import worth_parsing
from mplint.inputs.documents import load_document
from tests.fixture_cases import Case, cases, format_finding, update_requested

ALL_CASES = cases()


def _lint(case: Case, text: str | None = None):
    doc = load_document(str(case.input), case.input.read_bytes() if text is None else text.encode())
    return doc, lint(doc, case.file_settings(), case.input.name)


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_findings_match_expected(case: Case) -> None:
    _, findings = _lint(case)
    actual = "".join(format_finding(f) + "\n" for f in findings)
    if update_requested():
        case.expected_path.write_text(actual, encoding="utf-8")
    assert case.expected_path.exists(), f"missing {case.expected_path.name}"
    assert actual == case.expected_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_fix_matches_expected_and_is_stable(case: Case) -> None:
    doc = load_document(str(case.input), case.input.read_bytes())
    outcome = check_document(doc, case.file_settings(), case.input.name, fix=True, unsafe=True)
    assert not [f for f in outcome.findings if f.code in ("MP900", "MP000")], outcome.findings
    fixed_bytes = doc.render(outcome.text) if outcome.text != doc.text else case.input.read_bytes()
    if update_requested():
        if outcome.text != doc.text:
            case.fixed_path.write_bytes(fixed_bytes)
        elif case.fixed_path.exists():
            case.fixed_path.unlink()
    if case.fixed_path.exists():
        assert outcome.text != doc.text, "expected a fix, none applied"
        assert fixed_bytes == case.fixed_path.read_bytes()
        fixed_doc = load_document(str(case.fixed_path), fixed_bytes)
        compile(fixed_doc.text, str(case.fixed_path), "exec", fixed_doc.compile_flags())
        again = check_document(fixed_doc, case.file_settings(), case.fixed_path.name, fix=True, unsafe=True)
        assert again.text == fixed_doc.text, "a second --fix changed the file"
    else:
        assert outcome.text == doc.text, f"unexpected fix; add {case.fixed_path.name}"


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_prefilter_lets_findings_through(case: Case) -> None:
    """The pre-filter (text scan, then Python's parser) must never hide a file where a
    rule fires."""
    _, findings = _lint(case)
    if findings:
        doc = load_document(str(case.input), case.input.read_bytes())
        assumed = case.options().get("assume-policy") is not None
        assert worth_parsing(doc.text, assumed, doc.compile_flags(), unreadable_parts=bool(doc.source_diagnostics()),
                             codes=case.file_settings().codes)


def test_every_rule_has_fixtures_that_fire_and_stay_silent() -> None:
    by_code: dict[str, list[Case]] = {}
    for case in ALL_CASES:
        by_code.setdefault(case.code, []).append(case)
    for code in RULES:
        assert code in by_code, f"no fixtures for {code}"
        firing = [c for c in by_code[code] if c.expected_path.read_text().strip()]
        silent = [c for c in by_code[code] if not c.expected_path.read_text().strip()]
        assert firing, f"{code}: no fixture where the rule fires"
        assert silent, f"{code}: no clean twin that must stay silent"
    for code in by_code:
        assert code in RULES or code == "combined", f"fixtures/{code}: not a rule code"
