"""The fix loop: convergence, chains, discarded broken fixes, crashes, applicability."""

from __future__ import annotations

from mplint.engine.engine import FileSettings, check_document
from mplint.inputs.source import decode_python

HEADER = "# mixed_float16\n"  # gets the file past the pre-filter


def _run(text: str, codes: set[str], fix: bool = True, unsafe: bool = False):
    doc = decode_python("t.py", text.encode())
    return check_document(doc, FileSettings(codes=frozenset(codes)), "t.py", fix=fix, unsafe=unsafe)


def test_safe_fix_applied_and_reported_as_fixed(test_rules):
    out = _run(HEADER + "old_name = 1\nprint(old_name)\n", {"MP990"})
    assert out.text == HEADER + "new_name = 1\nprint(new_name)\n"
    assert out.fixed == 2 and out.findings == []


def test_check_without_fix_changes_nothing(test_rules):
    text = HEADER + "old_name = 1\n"
    out = _run(text, {"MP990"}, fix=False)
    assert out.text == text
    assert [f.code for f in out.findings] == ["MP990"]
    assert out.findings[0].fix is not None


def test_fix_that_enables_another_rule_converges_in_later_rounds(test_rules):
    out = _run(HEADER + "older_name = 2\n", {"MP990", "MP995"})
    assert out.text == HEADER + "new_name = 2\n"
    # One finding was there, and it is fixed: the MP990 edit that follows in the next
    # round finishes its fix, so the count matches the "1 fixable" a check reports.
    assert out.fixed == 1
    assert out.fixed_codes == {"MP995": 1}


def test_fix_breaking_the_code_is_discarded_and_reported(test_rules):
    text = HEADER + "breakme = 1\nold_name = 2\n"
    out = _run(text, {"MP990", "MP991"})
    # The good fix is kept, the breaking one thrown away, the original kept for it.
    assert out.text == HEADER + "breakme = 1\nnew_name = 2\n"
    codes = [f.code for f in out.findings]
    assert "MP900" in codes and "MP991" in codes
    error = next(f for f in out.findings if f.code == "MP900")
    assert "MP991" in error.message and "test-breaking-fix" in error.message
    assert "would make the code invalid" in error.message


def test_fix_breaking_the_code_is_not_advertised_when_only_checking(test_rules):
    """Decided at lint time: a plain check already shows the finding without a fix."""
    out = _run(HEADER + "breakme = 1\n", {"MP991"}, fix=False)
    finding = next(f for f in out.findings if f.code == "MP991")
    assert finding.fix is None and "no automatic fix" in finding.detail
    assert any(f.code == "MP900" and "MP991" in f.message for f in out.findings)


def test_unsafe_fix_needs_unsafe(test_rules):
    text = HEADER + "lower_me = 1\n"
    assert _run(text, {"MP994"}).text == text
    assert _run(text, {"MP994"}, unsafe=True).text == HEADER + "LOWER_ME = 1\n"


def test_rule_exception_becomes_mp900_naming_rule_and_file(test_rules):
    out = _run(HEADER + "crash_here = 1\nold_name = 1\n", {"MP990", "MP992"}, fix=False)
    error = next(f for f in out.findings if f.code == "MP900")
    assert "MP992" in error.message and "test-crashes" in error.message
    assert "t.py" in error.message and "ZeroDivisionError" in error.message
    # The other rule still ran.
    assert any(f.code == "MP990" for f in out.findings)


def test_fixes_that_never_converge_keep_the_original(test_rules):
    text = HEADER + "grow = 1\n"
    out = _run(text, {"MP993"})
    assert out.text == text
    assert out.fixed == 0
    error = next(f for f in out.findings if f.code == "MP900")
    assert "did not converge" in error.message and "MP993" in error.message


def test_second_fix_run_changes_nothing(test_rules):
    first = _run(HEADER + "older_name = old_name\n", {"MP990", "MP995"})
    second = _run(first.text, {"MP990", "MP995"})
    assert second.text == first.text and second.fixed == 0


def test_overlapping_fixes_are_applied_over_rounds(test_rules):
    # Both rules target the same name node; one waits for the next round.
    out = _run(HEADER + "older_name = 1\n", {"MP995", "MP990"})
    assert out.text == HEADER + "new_name = 1\n"


def _finding(code: str, edits, group: str | None = None):
    from mplint.core.diagnostics import Applicability, Edit, Finding, Fix, Location, Severity

    here = Location(1, 1)
    fix = Fix(Applicability.SAFE, "fix", tuple(Edit(text, start, end, here, here) for start, end, text in edits), group)
    return Finding(code, "name", "message", Severity.ERROR, "t.py", here, here, fix)


def test_a_fix_group_waits_whole_for_a_later_round():
    """When one edit of a group overlaps a fix chosen before it, no member is chosen in
    this round: the group never goes in half (the next round lints it again)."""
    from mplint.engine.engine import select_fixes

    group = [(10, 12, "aa"), (30, 32, "bb")]
    first, second = _finding("MP404", group, "g1"), _finding("MP404", group, "g1")
    other = _finding("MP201", [(5, 31, "x")])
    assert select_fixes([first, second, other]) == [other]
    assert select_fixes([first, second]) == [first, second]
