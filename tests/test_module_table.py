"""What a module table says of its functions' return dtypes (read with `ast`, for the
modules that call them)."""

from __future__ import annotations

import pytest

from mplint.project.module_table import build_table

SOURCE = '''
import numpy as np
import tensorflow as tf


def get_padding(x, padding_value=0, dtype=tf.float32):
    with tf.name_scope("padding"):
        return tf.cast(tf.equal(x, padding_value), dtype)


def as_float(x):
    if x is None:
        return tf.cast(0, "float64")
    return tf.cast(x, dtype=np.float32)


def as_half(x, dtype=tf.float16):
    return tf.cast(x, dtype)


def sometimes(x):
    if x.dtype == tf.int32:
        return tf.cast(x, tf.float32)
    return x


def rebound(x, dtype=tf.float32):
    dtype = x.dtype
    return tf.cast(x, dtype)


def nested(x):
    def inner():
        return x
    return tf.cast(x, tf.float32)


class Layer:
    def mask(self, x, *, dtype="float32"):
        return tf.cast(x > 0, dtype)
'''


@pytest.mark.parametrize("function, deciding", [
    ("get_padding", ["dtype"]), ("as_float", []), ("nested", []), ("Layer.mask", ["dtype"]),
    ("as_half", None), ("sometimes", None), ("rebound", None),
])
def test_functions_whose_every_return_casts_to_float32(function, deciding):
    entry = build_table(SOURCE)["functions"][function]
    assert entry.get("float32_unless") == deciding


@pytest.mark.parametrize("source, truths", [
    ('import tensorflow as tf\nfrom distutils.version import LooseVersion\n'
     'OLD = LooseVersion(tf.__version__) < LooseVersion("2.4")\n', [True, False, False, False, False]),
    ('import tensorflow as tf\nTF1 = tf.__version__.startswith("1.")\n', [False] * 5),
    ('import tensorflow as tf\nMAJOR_2 = int(tf.__version__.split(".")[0]) >= 2\n', [True] * 5),
    # a string comparison, as Python evaluates it: "2.21.0" < "2.4" is true
    ('import tensorflow as tf\nSTRINGS = tf.version.VERSION < "2.4"\n', [True, False, False, True, True]),
    ('import numpy as np\nNUMPY = np.__version__ < "1.20"\n', None),  # not TensorFlow's version
    ('import tensorflow as tf\nUNKNOWN = tf.__version__ < BUILD\n', None),
])
def test_module_level_flags_of_tensorflows_version(source, truths):
    from mplint.project.module_table import build_table
    from mplint.project.version_flags import EVALUATED_VERSIONS

    flags = build_table(source)["version_flags"]
    if truths is None:
        assert flags == {}
    else:
        ((name, (found, row)),) = flags.items()
        assert found == dict(zip(EVALUATED_VERSIONS, truths)) and row == source.count("\n")


@pytest.mark.parametrize("source, argument, truths", [
    (('import tensorflow as tf\ndef minor_at_least(m):\n    parts = tf.__version__.split(".")\n'
      '    return int(parts[1]) >= m\n'), 6, [False, False, True, True, True]),
    ('import tensorflow as tf\ndef older_than(v):\n    """Docstring."""\n    return LooseVersion(tf.__version__) < LooseVersion(v)\n',
     "2.4", [True, False, False, False, False]),
    # not kept: a loop, a default, no TensorFlow version read
    ('import tensorflow as tf\ndef f(m):\n    for x in m:\n        pass\n    return tf.__version__ > m\n', 6, None),
    ('import tensorflow as tf\ndef f(m=6):\n    return int(tf.__version__.split(".")[1]) >= m\n', 6, None),
    ('import numpy as np\ndef f(m):\n    return int(np.__version__.split(".")[1]) >= m\n', 6, None),
])
def test_functions_that_check_tensorflows_version_are_kept_and_evaluated_per_call(source, argument, truths):
    from mplint.project.module_table import build_table
    from mplint.project.version_flags import (
        EVALUATED_VERSIONS,
        evaluate_version_function,
    )

    table = build_table(source)
    functions = table["version_functions"]
    if truths is None:
        assert functions == {}
        return
    ((_, function),) = functions.items()
    found = [evaluate_version_function(function, [argument], v, table["imports"]) for v in EVALUATED_VERSIONS]
    assert found == truths
    assert evaluate_version_function(function, [], EVALUATED_VERSIONS[0], table["imports"]) is None  # arity


CONSUMERS = '''
def train_model(model, dataset, epochs=10):
    model.compile(optimizer="adam", loss="mse")
    return model.fit(dataset, epochs=epochs)


def report(model, path):
    model.summary()
    model.save(path)


def describe(model):
    model.summary()
    return model.count_params()


class Runner:
    def run(self, net, data):
        return net.predict(data)
'''


@pytest.mark.parametrize("function, consumed", [
    ("train_model", {"model": "compile"}), ("report", {"model": "save"}), ("describe", None),
    ("Runner.run", {"net": "predict"}),
])
def test_functions_record_the_parameters_they_train_or_predict_with(function, consumed):
    assert build_table(CONSUMERS)["functions"][function].get("consumes") == consumed
