"""Which modules' functions may build Keras layers (mplint.project.layer_builders)."""

from __future__ import annotations

import pytest

from mplint.project.layer_builders import builds_layers_in_functions


@pytest.mark.parametrize("text, expected", [
    ("import tensorflow as tf\ndef f():\n    return tf.Variable(tf.zeros((2,)))\n", False),
    ("import tensorflow as tf\nlayer = tf.keras.layers.Dense(2)\n", False),  # at import
    ("import tensorflow as tf\ndef f():\n    return tf.keras.layers.Dense(2)\n", True),
    ("from tensorflow.keras import layers as L\ndef f():\n    return L.Dense(2)\n", True),
    ("import keras\ndef f():\n    return keras.optimizers.Adam(), keras.losses.MeanSquaredError()\n", False),
    ("import keras\nclass M:\n    def build(self):\n        return keras.Sequential([])\n", True),
    ("import keras\ndef f(path):\n    return keras.models.load_model(path)\n", True),
    ("import keras_hub\ndef f():\n    return keras_hub.models.GemmaCausalLM.from_preset('gemma')\n", True),
    ("from .blocks import Block\ndef f():\n    return Block()\n", True),
    ("from mypkg.blocks import Block\ndef f():\n    return Block()\n", True),
    ("from pathlib import Path\ndef f():\n    return Path('x')\n", False),
    ("class Block:\n    pass\ndef f():\n    return Block()\n", True),
    ("def f(:\n", True),  # does not parse: may
])
def test_builds_layers_in_functions(text, expected):
    assert builds_layers_in_functions(text, frozenset({"mypkg"})) is expected
