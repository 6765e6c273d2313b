"""Fix vetting compiles only the top-level statements a fix edits (a 50,000-line file
has thousands of fixes): it must decide exactly as compiling the whole fixed file does."""

from __future__ import annotations

import pytest

from mplint.core.diagnostics import Applicability, Edit, Fix, Location
from mplint.engine.fix_vetting import FixVetting, apply_edits, compiles
from mplint.inputs.source import decode_python

LINES = [f"value_{i} = {i}\n" for i in range(40)]
TEXT = (
    '"""A module."""\n'
    + "".join(LINES[:20])
    + "\n\ndef helper(x):\n    # a comment\n    return x + 1\n\n\n"
    + "@decorator\nclass Thing:\n    size = 3\n"
    + "".join(LINES[20:])
    + "with open(path) as handle:\n  data = handle.read()\nafter_with = 1\n"
)
HERE = Location(1, 0)


def _fix(*edits: tuple[str, int, int]) -> Fix:
    return Fix(Applicability.SAFE, "a fix", tuple(Edit(c, s, e, HERE, HERE) for c, s, e in edits))


def _at(snippet: str) -> int:
    return TEXT.index(snippet)


CASES = {
    "valid replacement in a function": _fix(("x + 2", _at("x + 1"), _at("x + 1") + 5)),
    "unclosed parenthesis in a function": _fix(("(x + 1", _at("x + 1"), _at("x + 1") + 5)),
    "insertion without a newline joins the next statement": _fix(("y = 1", _at("value_5 ="), _at("value_5 ="))),
    "insertion with a newline at a statement boundary": _fix(("y = 1\n", _at("value_5 ="), _at("value_5 ="))),
    "from __future__ after other statements": _fix(("from __future__ import annotations\n",
                                                    _at("value_3 ="), _at("value_3 ="))),
    "dedent that breaks a class body": _fix(("size = 3\n", _at("    size = 3\n"), _at("    size = 3\n") + 13)),
    "return at module level": _fix(("return 1\n", _at("value_30 ="), _at("value_30 ="))),
    "edits in two distant statements, both valid": _fix(("1", _at("= 2\n") + 2, _at("= 2\n") + 3),
                                                        ("9", _at("= 35\n") + 2, _at("= 35\n") + 4)),
    "edits in two distant statements, the second broken": _fix(("1", _at("= 2\n") + 2, _at("= 2\n") + 3),
                                                               ("9 +", _at("= 35\n") + 2, _at("= 35\n") + 4)),
    "appended at the end without a newline first": _fix(("z = 1", len(TEXT), len(TEXT))),
    "decorator removed": _fix(("", _at("@decorator\n"), _at("@decorator\n") + 11)),
    # the last line of a two-space `with` body, inserted where the next statement starts
    "insertion that ends the block before": _fix(("  size = len(data)\n", _at("after_with"), _at("after_with"))),
    "insertion indented unlike the block before": _fix(("   size = 1\n", _at("after_with"), _at("after_with"))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_regions_decide_like_the_whole_file(name: str) -> None:
    doc = decode_python("m.py", TEXT.encode())
    assert compiles(doc, TEXT)
    fix = CASES[name]
    whole = compiles(doc, apply_edits(TEXT, list(fix.edits)))
    assert FixVetting(doc, facts=None)._still_compiles(fix) is whole  # type: ignore[arg-type]


def test_the_cases_cover_both_outcomes() -> None:
    doc = decode_python("m.py", TEXT.encode())
    outcomes = {compiles(doc, apply_edits(TEXT, list(f.edits))) for f in CASES.values()}
    assert outcomes == {True, False}
