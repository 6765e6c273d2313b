"""Targeted positions and in-place rendering agree with libcst's own providers."""

from __future__ import annotations

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider, WhitespaceInclusivePositionProvider

from mplint.analysis.index import ModuleIndex
from mplint.analysis.positions import compute_spans, render
from mplint.core.textpos import LineIndex

SOURCE = (
    "import tensorflow as tf\r\n"
    "\r\n"
    "@decorator\r\n"
    "class Model(tf.keras.Model):\r\n"
    "    # a comment\r\n"
    "    def call(self, x):\r\n"
    "        y = (self.dense(x))  # trailing\r\n"
    "        if y:\r\n"
    "            return [y, {'k': y}]\r\n"
    "        return tf.cast(y, 'float32')\r\n"
)


def test_spans_match_libcst_positions_for_every_node():
    module = cst.parse_module(SOURCE)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    syntactic = wrapper.resolve(PositionProvider)
    inclusive = wrapper.resolve(WhitespaceInclusivePositionProvider)
    index = ModuleIndex(module)
    nodes = [n for nodes in index.by_type.values() for n in nodes]
    spans = compute_spans(module, nodes)
    lines = LineIndex(SOURCE)
    checked = 0
    for node in nodes:
        span = spans[id(node)]
        expected = syntactic[node]
        assert lines.row_col(span.start) == (expected.start.line, expected.start.column + 1), node
        assert lines.row_col(span.end) == (expected.end.line, expected.end.column + 1), node
        full = inclusive[node]
        assert lines.row_col(span.full_start) == (full.start.line, full.start.column + 1), node
        checked += 1
    assert checked > 40


def test_render_in_place_reproduces_the_source():
    module = cst.parse_module(SOURCE)
    index = ModuleIndex(module)
    statements = index.nodes(cst.SimpleStatementLine) + index.nodes(cst.FunctionDef)
    spans = compute_spans(module, statements)
    for node in statements:
        span = spans[id(node)]
        assert render(module, node, span.indent) == SOURCE[span.full_start : span.full_end]


SOURCES = [
    SOURCE,
    "# header comment\n\nimport keras\n\n\n# leading comment\n@dec(1)\n@dec2\nasync def f(x):\n    return x; y = 2\n\na = 1; b = keras.layers.Dense(3)\nif a:\n    pass\nelse:\n    c = [\n        1,\n    ]\n",
    "x = 1\r\n\r\ndef g():\r\n    return x  # trailing\r\n",
    "x = (1 +\n     2)\nprint(x)",  # no final newline: the last statement falls back
    "class A:\n    pass\n\n\n\nclass B(A):\n    def m(self):\n        return 1\n",
    # the same nested line twice (placed through the top-level statement), a nested
    # multi-line call (its continuation lines carry the block's indentation), tabs
    "def f():\n    model.add(Dense(10))\n    model.add(Dense(10))\n    x = g(\n        1,\n        2,\n    )\n"
    "    if x:\n        y = [\n            3]  # end\n",
    "class T:\n\tdef m(self):\n\t\treturn [\n\t\t\t1]\n",
]


@pytest.mark.parametrize("source", SOURCES)
def test_position_finder_agrees_with_generating_the_whole_module(source):
    from mplint.analysis.positions import PositionFinder

    module = cst.parse_module(source)
    index = ModuleIndex(module)
    nodes = [n for nodes in index.by_type.values() for n in nodes if n is not module]
    expected = compute_spans(module, nodes)
    finder = PositionFinder(module, source, index)
    for node in nodes:
        assert finder.spans([node]) == {id(node): expected[id(node)]}, (type(node).__name__, source)
    assert finder.spans(nodes) == expected


def test_position_finder_places_repeated_statements_correctly():
    from mplint.analysis.positions import PositionFinder

    source = "model.add(Dense(10))\nmodel.add(Dense(10))\nx = 'model.add(Dense(10))\\n'\n"
    module = cst.parse_module(source)
    index = ModuleIndex(module)
    second = module.body[1]
    finder = PositionFinder(module, source, index)
    span = finder.spans([second])[id(second)]
    assert (span.start, span.full_start) == (21, 21)
    assert finder.spans([second]) == compute_spans(module, [second])
