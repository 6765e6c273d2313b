"""MP301-MP304 helpers: rounding, messages, rows, EinsumDense equations, policy gating."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mplint.analysis.positions import compute_spans
from mplint.engine.engine import FileSettings, lint
from mplint.facts.module import ModuleFacts
from mplint.inputs.source import Document
from mplint.core.textpos import LineIndex
from mplint.facts.size_sites import _einsum_kernel_output_positions
from mplint_rules.tensor_cores import growth_text, integer_text, round_up, rows_of

MP3 = frozenset({"MP301", "MP302", "MP303", "MP304"})


def _codes(code: str, **settings) -> list[tuple[int, str]]:
    """MP301-MP304 are medium-precision rules (bench/rule_precision.py): extended tier."""
    text = textwrap.dedent(code)
    findings = lint(Document("example.py", text), FileSettings(codes=MP3, target="keras3", extended=True, **settings),
                    "example.py")
    return [(f.location.row, f.code) for f in findings]


@pytest.mark.parametrize("value, multiple, expected", [(100, 8, 104), (104, 8, 104), (1, 8, 8), (96, 64, 128)])
def test_round_up(value: int, multiple: int, expected: int) -> None:
    assert round_up(value, multiple) == expected


def test_growth_text_for_each_kind_of_layer() -> None:
    assert growth_text("linear", 1001, 1008) == "adds ~0.7% parameters"
    assert growth_text("linear", 10, 16) == "adds ~60% parameters"
    assert growth_text("linear", 10001, 10008) == "adds <0.1% parameters"
    assert growth_text("at most", 30, 32) == "adds at most ~6.7% parameters"
    assert growth_text("recurrent", 100, 104).startswith("adds ~4.0% to ~8.2% parameters")
    # a size written as a name may size this layer's input too: its growth is a lower bound
    assert growth_text("linear", 100, 104, shared=True) == "adds at least ~4.0% parameters"
    # a batch makes each step larger; the work per epoch depends on how steps are counted
    assert growth_text("step", 100, 104) == "makes each step ~4.0% larger"


def test_integer_text_keeps_digit_grouping() -> None:
    assert integer_text(cst.Integer("10_001"), 10008) == "10_008"
    assert integer_text(cst.Integer("0x3e9"), 1008) == "1008"


@pytest.mark.parametrize(
    "equation, expected",
    [
        ("ab,bc->ac", (1, [0])),
        ("abc,cd->abd", (2, [1])),
        ("abc,cde->abde", (3, [1, 2])),
        ("...b,bc->...c", (1, [0])),
        ("abc,cd->abd ", (2, [1])),
        ("ab->b", None),
        ("ab,bc,cd->ad", None),
    ],
)
def test_einsum_dense_kernel_output_dimensions(equation: str, expected) -> None:
    assert _einsum_kernel_output_positions(equation) == expected


TRICKY = (
    "import tensorflow as tf  # comment\r\n"
    "\r\n"
    "# a comment line\r\n"
    "A = 1; B = 2\r\n"
    "@decorator(3)\r\n"
    "@other\r\n"
    "def f(x=4,\r\n"
    "      y=5):\r\n"
    '    """doc\r\n'
    '    string"""\r\n'
    "    return x + \\\r\n"
    "        6\r\n"
    "class C:\r\n"
    "    Z = [7,\r\n"
    "         8]\r\n"
    "if True:\r\n"
    "    w = f'{9}'\r\n"
)


def test_rows_of_matches_a_full_code_generation() -> None:
    module = cst.parse_module(TRICKY)
    facts = ModuleFacts(module, TRICKY, "tricky.py")
    nodes = list(facts.index.nodes(cst.Integer)) + list(facts.index.nodes(cst.Call))
    lines = LineIndex(TRICKY)
    expected = {key: lines.row_col(span.start)[0] for key, span in compute_spans(module, nodes).items()}
    assert rows_of(facts, nodes) == expected
    assert sorted(expected.values())[:3] == [4, 4, 5]


# -- which policies count ----------------------------------------------------------------

HIDDEN_LAYER = """
    import tensorflow as tf
    {policy}
    model = tf.keras.Sequential([tf.keras.layers.Dense(100), tf.keras.layers.Dense(1)])
"""


@pytest.mark.parametrize(
    "policy, reported",
    [
        ('tf.keras.mixed_precision.set_global_policy("mixed_float16")', True),
        ('tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")', False),
        ('tf.keras.mixed_precision.set_global_policy("mixed_float16" if gpu else "mixed_bfloat16")', True),
        ('tf.keras.mixed_precision.set_global_policy(tf.keras.mixed_precision.Policy("mixed_float16"))', True),
        ("", False),
    ],
)
def test_only_float16_compute_is_checked(policy: str, reported: bool) -> None:
    assert bool(_codes(HIDDEN_LAYER.format(policy=policy))) is reported


def test_assumed_policy_counts_but_bfloat16_does_not() -> None:
    code = HIDDEN_LAYER.format(policy="")
    assert _codes(code, assumed_policy="mixed_float16") == [(4, "MP301")]
    assert _codes(code, assumed_policy="mixed_bfloat16") == []


def test_layer_with_its_own_float32_dtype_is_not_checked() -> None:
    code = """
        import tensorflow as tf
        tf.keras.mixed_precision.set_global_policy("mixed_float16")
        a = tf.keras.layers.Dense(100, dtype="float32")
        b = tf.keras.layers.Dense(100, dtype=tf.float32)
        c = tf.keras.layers.Dense(100, dtype=tf.keras.mixed_precision.Policy("float32"))
        d = tf.keras.layers.Dense(100, dtype=some_policy)
    """
    assert _codes(code) == [(7, "MP301")]


def test_not_a_keras_layer_is_not_checked() -> None:
    code = """
        import tensorflow as tf
        from mylib import Dense
        tf.keras.mixed_precision.set_global_policy("mixed_float16")
        a = Dense(100)
        b = tf.keras.layers.Dense(100)
    """
    assert _codes(code) == [(6, "MP301")]
