"""Parsing in chunks, without node validation, re-using unchanged chunks: always the
tree libcst's own whole parse gives."""

from __future__ import annotations

import libcst as cst
import pytest

from mplint.inputs import parsing
from tests.fixture_cases import cases


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(parsing, "CHUNK_LINES", 3)
    parsing._last_chunks.clear()
    yield
    parsing._last_chunks.clear()


TRICKY = '''#!/usr/bin/env python
"""Module docstring."""
from __future__ import annotations

import os  # trailing comment
x = 1; y = 2

# a comment before a function


def f(a,
      b):
    return a + b
    # indented comment: the block's footer

# a comment at column 0 after a block
@decorator
# between decorator and def
def g():
    pass


class C:
    value = """a
multi-line string"""



z = (1 +
     2)
w = 3 \\
    + 4
if z:
    pass
else:
    pass
    # in the else block
tail = 0
# a comment at the end

'''


def _same_tree(text: str) -> None:
    fast = parsing.parse(text)
    assert fast.deep_equals(cst.parse_module(text))
    assert fast.code == text


def test_chunked_parse_is_the_whole_parse(small_chunks):
    _same_tree(TRICKY)
    assert len(parsing._last_chunks) > 3, "the module was cut into chunks"


@pytest.mark.parametrize("text", [
    TRICKY.rstrip("\n"),  # no trailing newline
    TRICKY.replace("\n", "\r\n"),  # CRLF: parsed whole
    "\tdef_ = 1\n".lstrip("\t") + "def f():\n\tif x:\n\t\treturn 1\n" * 3,  # tabs for indentation
    "x = 1\n" * 10,
    "",
    "# only a comment\n",
])
def test_other_shapes_parse_like_libcst(small_chunks, text):
    _same_tree(text)


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_every_fixture_parses_like_libcst(small_chunks, case):
    from mplint.inputs.documents import load_document

    doc = load_document(str(case.input), case.input.read_bytes())
    _same_tree(doc.text)


def test_a_changed_text_reparses_only_the_changed_chunks(small_chunks):
    first = parsing.parse(TRICKY)
    changed = TRICKY.replace("return a + b", "return a - b")
    second = parsing.parse(changed)
    assert second.deep_equals(cst.parse_module(changed))
    reused = {id(s) for s in first.body} & {id(s) for s in second.body}
    assert reused and len(reused) < len(second.body)


def test_repeated_chunks_never_share_nodes(small_chunks):
    text = "def f():\n    return 1\n\n\nx = 1\n" * 6
    parsing.parse(text)
    module = parsing.parse(text)  # the earlier chunks are reused, each only once
    seen: set[int] = set()
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        assert id(node) not in seen
        seen.add(id(node))
        stack.extend(node.children)
    assert module.deep_equals(cst.parse_module(text))


def test_syntax_errors_raise_as_libcst_does():
    with pytest.raises(cst.ParserSyntaxError):
        parsing.parse("def f(:\n")


def test_node_validation_is_back_after_a_parse():
    parsing.parse("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("not whitespace")
