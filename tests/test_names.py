"""Qualified names through every import spelling."""

from __future__ import annotations

import libcst as cst
import pytest

from mplint.facts.module import ModuleFacts


def _call_names(source: str) -> list[str | None]:
    facts = ModuleFacts(cst.parse_module(source), source, "t.py")
    return [facts.qualified(c.func) for c in facts.index.nodes(cst.Call)]


@pytest.mark.parametrize(
    "source,expected",
    [
        ("import tensorflow as tf\ntf.keras.layers.Dense(1)", "keras.layers.Dense"),
        ("import tensorflow\ntensorflow.keras.layers.Dense(1)", "keras.layers.Dense"),
        ("from tensorflow import keras\nkeras.layers.Dense(1)", "keras.layers.Dense"),
        ("import keras\nkeras.layers.Dense(1)", "keras.layers.Dense"),
        ("import tf_keras\ntf_keras.layers.Dense(1)", "keras.layers.Dense"),
        ("from tensorflow.keras import layers as L\nL.Dense(1)", "keras.layers.Dense"),
        ("from tensorflow.keras.layers import Dense as D\nD(1)", "keras.layers.Dense"),
        ("from keras.layers.core import Dense\nDense(1)", "keras.layers.Dense"),
        ("import tensorflow.keras as K\nK.layers.Dense(1)", "keras.layers.Dense"),
        ("import tensorflow as tf\nL = tf.keras.layers\nL.Dense(1)", "keras.layers.Dense"),
        ("from tensorflow.keras.layers import *\nDense(1)", "keras.layers.Dense"),
        ("import tensorflow.compat.v1 as tf\ntf.keras.layers.Dense(1)", "keras.layers.Dense"),
        ("from tensorflow.python.keras.layers import Dense\nDense(1)", "keras.layers.Dense"),
        ("import tensorflow as tf\ntf.GradientTape()", "tensorflow.GradientTape"),
        ("import tensorflow.compat.v2 as tf\ntf.GradientTape()", "tensorflow.GradientTape"),
        (
            "from tensorflow.keras.mixed_precision import experimental as mp\nmp.set_policy('x')",
            "keras.mixed_precision.experimental.set_policy",
        ),
        (
            "from keras.mixed_precision import set_global_policy as p\np('mixed_float16')",
            "keras.mixed_precision.set_global_policy",
        ),
        ("tf.keras.layers.Dense(1)", "keras.layers.Dense"),  # snippet without imports
    ],
)
def test_spellings_resolve_to_one_canonical_name(source, expected):
    assert _call_names(source)[-1] == expected


def test_local_rebinding_at_module_level_shadows_the_import():
    source = "from keras.layers import Dense\nDense = my_factory\nDense(3)"
    assert _call_names(source)[-1] is None


def test_unknown_names_do_not_resolve():
    assert _call_names("Dense(3)\nobj.method()\nself.layer(x)") == [None, None, None]


def test_attribute_on_call_result_does_not_resolve():
    assert _call_names("import keras\nkeras.Sequential().add(1)")[0] is None
