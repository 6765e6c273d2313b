"""The text pre-filter: cheap, and never hides a file a rule could fire on."""

from __future__ import annotations

import pytest

from mplint.prefilter import needs_parse


@pytest.mark.parametrize(
    "text",
    [
        "tf.keras.mixed_precision.set_global_policy('mixed_float16')",
        "from keras import mixed_precision",
        "opt = tf.keras.mixed_precision.LossScaleOptimizer(opt)",
        "opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)",
        "os.environ['TF_ENABLE_AUTO_MIXED_PRECISION'] = '1'",
        "x = tf.cast(x, tf.float16)",
        "K.set_floatx('float16')",
        "import keras\nscores = scores - 1e30 * mask",
        "import tensorflow as tf\nx = x / (n + 1e-12)",
        "import tensorflow as tf\nNEG = -1000000",
    ],
)
def test_mixed_precision_code_is_parsed(text):
    assert needs_parse(text)


@pytest.mark.parametrize(
    "text",
    [
        "print('hello')",
        "import numpy as np\nx = np.zeros(3) * 1e30",  # no Keras/TensorFlow
        "import tensorflow as tf\nmodel = tf.keras.Sequential()",  # Keras, no policy, no hazard
        "import torch\nx = torch.ones(3).half()",
    ],
)
def test_unrelated_code_is_not_parsed(text):
    assert not needs_parse(text)


def test_assume_policy_parses_any_keras_file():
    assert needs_parse("import keras\nkeras.layers.Dense(1000)", assume_policy=True)
    assert not needs_parse("print(1)", assume_policy=True)
