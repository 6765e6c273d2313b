"""float16 arithmetic of the MP5xx rules, and the pre-filter's hazard-literal scan."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mplint.engine.engine import FileSettings, lint
from mplint.engine.prefilter import has_float16_hazard_literal, is_float16_hazard, needs_parse
from mplint.inputs.documents import load_document
from mplint.facts.float16_numbers import overflows, rounds_to_zero, spell, to_float16


def _numpy_free_float16(value: float) -> float:
    try:
        return struct.unpack("<e", struct.pack("<e", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


# -- float16 rounding -----------------------------------------------------------------------

@pytest.mark.parametrize(
    "value, expected",
    [
        (65504.0, 65504.0),
        (65519.0, 65504.0),  # rounds down to the max
        (65520.0, math.inf),  # the halfway point rounds to even: inf
        (1e9, math.inf),
        (-1e9, -math.inf),
        (1e-7, 1.1920928955078125e-07),  # a subnormal, kept
        (3e-8, 5.960464477539063e-08),  # rounds up to the smallest subnormal
        (2.0**-25, 0.0),  # halfway to the smallest subnormal: to even, 0
        (1e-8, 0.0),
        (1e-12, 0.0),
    ],
)
def test_to_float16_rounds_like_ieee_binary16(value: float, expected: float) -> None:
    assert to_float16(value) == expected


def test_overflow_and_zero_predicates() -> None:
    assert overflows(1e6) and overflows(-1e30) and overflows(65520)
    assert not overflows(65504.0) and not overflows(-1e4) and not overflows(float("inf")) and not overflows(True)
    assert rounds_to_zero(1e-12) and rounds_to_zero(-1e-10) and rounds_to_zero(2.0**-25)
    assert not rounds_to_zero(1e-7) and not rounds_to_zero(0.0) and not rounds_to_zero(3e-8) and not rounds_to_zero(False)


def test_spell_is_short() -> None:
    assert [spell(v) for v in (1e30, -1e9, 1e6, 1e-12, 65504.0, 1000003)] == ["1e30", "-1e9", "1e6", "1e-12", "65504", "1000003"]


@given(st.floats(min_value=0.0, max_value=1e40, allow_nan=False))
@settings(max_examples=500)
def test_prefilter_thresholds_are_float16_rounding(value: float) -> None:
    """The pre-filter's cheap thresholds say exactly what the rules compute with struct."""
    assert is_float16_hazard(value) == (overflows(value) or rounds_to_zero(value))


@given(st.floats(min_value=1e-40, max_value=1e-6) | st.floats(min_value=6e4, max_value=7e4))
def test_prefilter_thresholds_near_the_edges(value: float) -> None:
    rounded = _numpy_free_float16(value)
    assert is_float16_hazard(value) == (math.isinf(rounded) or rounded == 0.0)


# -- the text scan ----------------------------------------------------------------------------

def _spellings(value: float) -> list[str]:
    texts = [repr(value), f"{value:e}", f"{value:.2E}", f"{value:.12f}"]
    if value >= 1 and value == int(value) and value < 1e20:
        texts += [str(int(value)), f"{int(value):_}", hex(int(value))]
    return texts


@given(st.floats(min_value=0.0, max_value=1e12, allow_nan=False) | st.floats(min_value=1e-14, max_value=1e-6))
@settings(max_examples=300)
def test_scan_finds_exactly_the_hazard_literals(value: float) -> None:
    for text in _spellings(value):
        written = float(int(text.replace("_", ""), 0)) if text.startswith("0x") else float(text.replace("_", ""))
        source = f"scores = scores - {text} * (1.0 - mask)\n"
        assert has_float16_hazard_literal(source) == is_float16_hazard(written), text


@pytest.mark.parametrize(
    "source",
    ["layer1e9 = f(x)", "z = 1e9j", "v = 2.5", "n = 9999", "eps = 1e-7", "s = '1e-4'", "x = a.e9"],
)
def test_scan_ignores_names_imaginaries_and_safe_numbers(source: str) -> None:
    assert not has_float16_hazard_literal(source)


LAYER_CODE = "\nclass Masked(tf.keras.layers.Layer):\n    def call(self, x):\n        return x * NEG\n"


def test_needs_parse_wants_keras_with_a_hazard_or_a_float16_spelling() -> None:
    assert needs_parse("import tensorflow as tf\nNEG = -1e9\n" + LAYER_CODE)
    assert needs_parse("import keras as tf\nNEG = 0.000000001\n" + LAYER_CODE)
    assert not needs_parse("NEG = -1e9\n" + LAYER_CODE.replace("tf.keras.layers.", ""))  # no Keras/TensorFlow
    assert not needs_parse("import tensorflow as tf\nNEG = -1e4\n" + LAYER_CODE)
    assert not needs_parse("import tensorflow as tf\nNEG = -1e9\n")  # no layer code: nothing MP5xx checks
    pipeline = "\nds = ds.map(f, num_parallel_calls=2)\n"
    assert needs_parse("x = data.astype(np.half)\n" + pipeline)
    assert needs_parse("import tensorflow as tf\nx = tf.cast(x, tf.half)\n" + pipeline)
    assert not needs_parse("import torch\nx = torch.ones(3).half()\n" + pipeline)


# -- the rules only fire on constants the scan can see -------------------------------------------

LAYER_WITH = """import tensorflow as tf

INF = {value}


class Masked(tf.keras.layers.Layer):
    def call(self, scores, mask):
        return scores - INF * (1.0 - mask)
"""


@pytest.mark.parametrize("value, fires", [("1e9", True), ("1000.0 * 1000.0", False), ("2.0 ** 31", False), ("1e4", False)])
def test_overflow_constants_must_be_spelled_by_a_hazard_literal(value: str, fires: bool) -> None:
    """`1000.0 * 1000.0` overflows too, but no literal in the file shows it: the rule stays
    silent where the pre-filter would skip the file, so linting one file or a tree agrees."""
    text = LAYER_WITH.format(value=value)
    doc = load_document("src/layer.py", text.encode())  # library layer code
    findings = lint(doc, FileSettings(codes=frozenset({"MP501"}), target="keras3"), "src/layer.py")
    assert bool(findings) == fires
    assert needs_parse(text) or not findings


def test_layer_code_of_a_library_is_checked_and_of_a_program_only_under_a_float16_policy(tmp_path) -> None:
    """A package's layers run under their users' policies; a script's or notebook's
    layers under the policy of their own program."""
    from mplint.facts.float16_code import is_library_module

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    assert is_library_module(str(package / "layers.py"))
    assert is_library_module(str(tmp_path / "src" / "layers.py"))
    assert not is_library_module(str(tmp_path / "train.py"))
    assert not is_library_module(str(package / "demo.ipynb"))
    assert not is_library_module(str(package / "layers_test.py"))  # a test module is a program
    text = LAYER_WITH.format(value="1e9")
    for path, policy, fires in ((package / "layers.py", None, True), (tmp_path / "train.py", None, False),
                                (tmp_path / "train.py", "mixed_float16", True),
                                (tmp_path / "train.py", "mixed_bfloat16", False)):
        settings = FileSettings(codes=frozenset({"MP501"}), target="keras3", assumed_policy=policy)
        assert bool(lint(load_document(str(path), text.encode()), settings, str(path))) == fires, (path, policy)
