"""Property tests: the engine never raises, every fix parses, a second fix changes
nothing, comments survive — on hypothesmith programs and on mutated fixtures."""

from __future__ import annotations

import io
import re
import tokenize

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mplint.core.codes import all_codes
from mplint.inputs.config import FileSettings
from mplint.engine.engine import check_document
from mplint.inputs.documents import load_document
from tests.fixture_cases import cases

ALL = frozenset(all_codes())
PY_CASES = [c for c in cases() if c.input.suffix == ".py"]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _comments(text: str) -> list[str]:
    try:
        return sorted(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError):
        return []


def _compiles(text: str) -> bool:
    try:
        compile(text, "<mutant>", "exec")
        return True
    except (SyntaxError, ValueError):
        return False


def check_invariants(text: str, target: str = "keras3", assume: str | None = None) -> None:
    doc = load_document("mutant.py", text.encode("utf-8"))
    file_settings = FileSettings(codes=ALL, target=target, assumed_policy=assume)
    outcome = check_document(doc, file_settings, "mutant.py", fix=True, unsafe=True)  # never raises
    internal = [f for f in outcome.findings if f.code == "MP900"]
    assert not internal, internal
    if outcome.text == text:
        return
    assert _compiles(outcome.text) or not _compiles(text)
    again = check_document(load_document("mutant.py", outcome.text.encode()), file_settings, "mutant.py", fix=True, unsafe=True)
    assert again.text == outcome.text, "a second --fix changed the file"
    before, after = _comments(text), _comments(outcome.text)
    assert all(after.count(c) >= before.count(c) for c in set(before)), "a fix dropped a comment"


@settings(max_examples=25, **SETTINGS)
@given(hypothesmith.from_grammar())
def test_engine_on_generated_programs(source):
    check_invariants("import tensorflow as tf  # mixed_float16\n" + source)


_IDENT = re.compile(r"\b[a-z_][a-z0-9_]{2,}\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")


@st.composite
def mutated_fixture(draw):
    case = draw(st.sampled_from(PY_CASES))
    text = case.source()
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["rename", "number", "comment", "blank", "duplicate", "delete", "crlf"]))
        if kind == "rename":
            names = sorted(set(_IDENT.findall(text)))
            if names:
                old = draw(st.sampled_from(names))
                text = re.sub(rf"\b{re.escape(old)}\b", old + "_m", text)
        elif kind == "number":
            numbers = _NUMBER.findall(text)
            if numbers:
                old = draw(st.sampled_from(numbers))
                text = re.sub(rf"(?<![\w.]){old}(?![\w.])", str(draw(st.integers(0, 5000))), text, count=1)
        else:
            lines = text.split("\n")
            at = draw(st.integers(0, max(0, len(lines) - 1)))
            indent = re.match(r"\s*", lines[at]).group(0) if lines else ""
            if kind == "comment":
                lines.insert(at, indent + "# a comment that must survive")
            elif kind == "blank":
                lines.insert(at, "")
            elif kind == "duplicate" and lines:
                lines.insert(at, lines[at])
            elif kind == "delete" and len(lines) > 1:
                del lines[at]
            text = "\n".join(lines)
            if kind == "crlf":
                text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return case, text


@settings(max_examples=60, **SETTINGS)
@given(mutated_fixture())
def test_engine_on_mutated_fixtures(mutant):
    case, text = mutant
    options = case.options()
    check_invariants(text, options.get("target", "keras3"), options.get("assume-policy"))


def test_every_fixture_unmutated_keeps_the_invariants():
    for case in PY_CASES:
        options = case.options()
        check_invariants(case.source(), options.get("target", "keras3"), options.get("assume-policy"))
