"""MP301-MP304 against real Keras: the fixed code still builds, and the parameter growth
each message announces is what Keras counts (Keras 2 and Keras 3)."""

from __future__ import annotations

import re

import pytest

from mplint.engine.engine import FileSettings, check_document
from mplint.inputs.source import Document
from tests.tf_harness import run_tf

# One layer per line: the finding's row says which layer it is about.
SNIPPET = '''\
import tensorflow as tf
tf.keras.mixed_precision.set_global_policy("mixed_float16")
LAYERS = {}
LAYERS["dense"] = (tf.keras.layers.Dense(100), (64,), "float32")
LAYERS["conv"] = (tf.keras.layers.Conv2D(100, 3), (8, 8, 16), "float32")
LAYERS["separable"] = (tf.keras.layers.SeparableConv2D(30, 3), (8, 8, 16), "float32")
LAYERS["transpose"] = (tf.keras.layers.Conv2DTranspose(20, 3), (8, 8, 16), "float32")
LAYERS["lstm"] = (tf.keras.layers.LSTM(100), (5, 64), "float32")
LAYERS["gru"] = (tf.keras.layers.GRU(50), (5, 64), "float32")
LAYERS["simple_rnn"] = (tf.keras.layers.SimpleRNN(30), (5, 16), "float32")
LAYERS["conv_lstm"] = (tf.keras.layers.ConvLSTM2D(12, 3), (3, 8, 8, 4), "float32")
LAYERS["vocabulary"] = (tf.keras.layers.Embedding(10001, 64), (5,), "int32")
LAYERS["embedding_width"] = (tf.keras.layers.Embedding(1000, 100), (5,), "int32")
LAYERS["attention"] = (tf.keras.layers.MultiHeadAttention(num_heads=3, key_dim=50), (5, 64), "float32")
LAYERS["attention_value"] = (tf.keras.layers.MultiHeadAttention(4, 16, value_dim=25), (5, 64), "float32")
LAYERS["einsum"] = (tf.keras.layers.EinsumDense("ab,bc->ac", output_shape=100), (64,), "float32")
'''

_FIRST_LAYER_ROW = 4
_CLAIM = re.compile(r"adds (at most )?(?:~|<)([\d.]+)%(?: to ~([\d.]+)%)?")

CHILD = '''
import tensorflow as tf
counts = {}
for label, text in (("original", ORIGINAL), ("fixed", FIXED)):
    namespace = {}
    exec(text, namespace)
    for name, (layer, shape, dtype) in namespace["LAYERS"].items():
        inputs = tf.keras.Input(shape, dtype=dtype)
        if isinstance(layer, tf.keras.layers.MultiHeadAttention):
            layer(inputs, inputs)
        else:
            layer(inputs)
        counts.setdefault(name, {})[label] = int(layer.count_params())
emit(counts)
'''


def _names_by_row() -> dict[int, str]:
    rows = {}
    for row, line in enumerate(SNIPPET.splitlines(), start=1):
        match = re.match(r'LAYERS\["(\w+)"\]', line)
        if match:
            rows[row] = match.group(1)
    return rows


@pytest.fixture(scope="module")
def linted():
    doc = Document("snippet.py", SNIPPET)
    # extended: the vocabulary's finding rests on an assumed role (nothing projects onto it here)
    settings = FileSettings(codes=frozenset({"MP301", "MP302", "MP304"}), target="keras3", extended=True)
    outcome = check_document(doc, settings, "snippet.py", fix=True, unsafe=True)
    return outcome


def test_every_layer_of_the_snippet_is_reported_and_fixed(linted) -> None:
    rows = _names_by_row()
    reported = {rows[f.location.row] for f in linted.initial}
    assert reported == set(rows.values())
    assert all(f.fix is not None for f in linted.initial)
    assert linted.findings == []  # everything rounded, nothing left


@pytest.mark.tensorflow
@pytest.mark.parametrize("keras", [2, 3])
def test_fixed_layers_build_and_grow_as_announced(linted, keras: int) -> None:
    code = f"ORIGINAL = {SNIPPET!r}\nFIXED = {linted.text!r}\n" + CHILD
    (counts,) = run_tf(code, keras=keras)
    rows = _names_by_row()
    for finding in linted.initial:
        name = rows[finding.location.row]
        original, fixed = counts[name]["original"], counts[name]["fixed"]
        growth = (fixed - original) / original * 100
        claim = _CLAIM.search(finding.message)
        assert claim is not None, finding.message
        at_most, low, high = claim.group(1), float(claim.group(2)), claim.group(3)
        tolerance = 0.06 if low < 10 else 0.6  # the message rounds to 0.1% below 10%, 1% above
        if high is not None:  # a range (recurrent layers)
            assert low - tolerance <= growth <= float(high) + tolerance, (name, growth, finding.message)
        elif at_most:
            assert 0 < growth <= low + tolerance, (name, growth, finding.message)
        elif "<0.1%" in finding.message:
            assert 0 < growth < 0.1, (name, growth)
        else:
            assert abs(growth - low) <= tolerance, (name, growth, finding.message)
