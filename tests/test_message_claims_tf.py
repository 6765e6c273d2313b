"""Every exception an MP4xx message names is the one TensorFlow 2.21 raises for the code
it flags, under the Keras the file targets; a message that says the code still runs is
checked to run.

Each case is a snippet with one finding. The snippet is linted for its Keras target, the
claim is read from the message (the first exception name in it, or "still runs"), and the
snippet runs in a TensorFlow child (Keras 3, or tf-keras with TF_USE_LEGACY_KERAS=1).
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from tests.support.engine import lint_and_fix
from tests.tf_harness import run_tf

pytestmark = pytest.mark.tensorflow

_EXCEPTION = re.compile(r"\b(AttributeError|ImportError|TypeError|ValueError)\b")
CODES = frozenset({"MP401", "MP403", "MP404"})

# id -> (Keras version, snippet)
CASES = {
    "import-experimental": (3, """
        from tensorflow.keras.mixed_precision import experimental as mixed_precision
    """),
    "experimental-set-policy": (3, """
        import tensorflow as tf
        tf.keras.mixed_precision.experimental.set_policy("mixed_float16")
    """),
    "experimental-lso-positional-scale": (3, """
        import tensorflow as tf
        opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(tf.keras.optimizers.SGD(), "dynamic")
    """),
    "experimental-policy-loss-scale": (3, """
        import tensorflow as tf
        policy = tf.keras.mixed_precision.experimental.Policy("mixed_float16", loss_scale="dynamic")
    """),
    "stable-policy-positional-scale": (3, """
        import tensorflow as tf
        policy = tf.keras.mixed_precision.Policy("mixed_float16", "dynamic")
    """),
    "stable-lso-loss-scale-keras3": (3, """
        import tensorflow as tf
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(), loss_scale="dynamic")
    """),
    "stable-set-policy": (3, """
        from tensorflow.keras import mixed_precision
        mixed_precision.set_policy("mixed_float16")
    """),
    "loss-scale-class": (3, """
        import tensorflow as tf
        scale = tf.mixed_precision.experimental.FixedLossScale(128)
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())
    """),
    "policy-loss-scale-read": (3, """
        import tensorflow as tf
        policy = tf.keras.mixed_precision.Policy("mixed_float16")
        scale = policy.loss_scale
    """),
    "rewrite-tf-train-experimental": (3, """
        import tensorflow as tf
        opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(tf.keras.optimizers.SGD())
    """),
    "rewrite-compat-keras3-optimizer": (3, """
        import tensorflow as tf
        opt = tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(tf.keras.optimizers.SGD())
    """),
    "rewrite-compat-tf1-subclass": (3, """
        import tensorflow as tf

        class MomentumWithDecay(tf.compat.v1.train.MomentumOptimizer):
            pass

        opt = MomentumWithDecay(0.1, momentum=0.9)
        opt = tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(opt, loss_scale=128)
    """),
    "rewrite-compat-tpu-wrapped": (3, """
        import tensorflow.compat.v1 as tf
        opt = tf.tpu.CrossShardOptimizer(tf.train.AdamOptimizer(0.001))
        opt = tf.mixed_precision.enable_mixed_precision_graph_rewrite(opt)
    """),
    "lso-get-scaled-loss-keras3": (3, """
        import tensorflow as tf
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())
        scaled = opt.get_scaled_loss(tf.constant(1.0))
    """),
    "lso-dynamic-false-keras3": (3, """
        import tensorflow as tf
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(), dynamic=False, initial_scale=128)
    """),
    "import-experimental-keras2": (2, """
        from tensorflow.keras.mixed_precision import experimental as mixed_precision
    """),
    "experimental-set-policy-keras2": (2, """
        import tensorflow as tf
        tf.keras.mixed_precision.experimental.set_policy("mixed_float16")
    """),
    "stable-lso-loss-scale-keras2": (2, """
        import tensorflow as tf
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(), loss_scale="dynamic")
    """),
    "policy-loss-scale-read-keras2": (2, """
        import tensorflow as tf
        policy = tf.keras.mixed_precision.Policy("mixed_float16")
        scale = policy.loss_scale
    """),
    "rewrite-compat-legacy-optimizer-keras2": (2, """
        import tensorflow as tf
        opt = tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(tf.keras.optimizers.legacy.SGD())
    """),
    "rewrite-compat-keras2-optimizer": (2, """
        import tensorflow as tf
        opt = tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(tf.keras.optimizers.SGD())
    """),
    "lso-scale-loss-keras2": (2, """
        import tensorflow as tf
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())
        scaled = opt.scale_loss(tf.constant(1.0))
    """),
}


def claim(case_id: str) -> str:
    """"runs" or the exception the case's one finding names."""
    keras, snippet = CASES[case_id]
    findings, _ = lint_and_fix(snippet, CODES, f"keras{keras}")
    assert len(findings) == 1, [f.message for f in findings]
    message = findings[0].message
    if "still runs" in message:
        assert not _EXCEPTION.search(re.split("[,;]", message.split("still runs", 1)[1])[0]), message
        return "runs"
    found = _EXCEPTION.search(message)
    assert found, message
    return found.group(1)


_CHILD = '''
import textwrap, traceback
import tensorflow as tf
results = {}
for name, snippet in CASES.items():
    try:
        exec(compile(textwrap.dedent(snippet), name, "exec"), {})
        results[name] = None
    except Exception as exc:
        results[name] = [k.__name__ for k in type(exc).__mro__]
    tf.compat.v1.mixed_precision.disable_mixed_precision_graph_rewrite()
    tf.keras.mixed_precision.set_global_policy("float32")
emit(results)
'''


@pytest.fixture(scope="module")
def raised() -> dict[str, list[str] | None]:
    results: dict[str, list[str] | None] = {}
    for keras in (3, 2):
        cases = {name: snippet for name, (k, snippet) in CASES.items() if k == keras}
        results.update(run_tf(f"CASES = {json.dumps(cases)}\n" + textwrap.dedent(_CHILD), keras=keras)[-1])
    return results


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_message_names_what_tensorflow_does(case_id: str, raised: dict) -> None:
    claimed = claim(case_id)
    outcome = raised[case_id]
    if claimed == "runs":
        assert outcome is None, f"message says it still runs; TF 2.21 raised {outcome and outcome[0]}"
    else:
        assert outcome is not None, f"message claims {claimed}; TF 2.21 ran it"
        assert claimed in outcome, f"message claims {claimed}; TF 2.21 raised {outcome[0]}"


def test_tensorflow_2_21_never_reads_the_auto_mixed_precision_switch() -> None:
    """MP403 says TF 2.21 ignores TF_ENABLE_AUTO_MIXED_PRECISION: no TensorFlow binary
    or Python module names it, while the graph rewrite's own switches are found."""
    found = run_tf('''
        import os, tensorflow
        root = os.path.dirname(tensorflow.__file__)
        hits = {"TF_ENABLE_AUTO_MIXED_PRECISION": 0, "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_IGNORE_PERFORMANCE": 0}
        for folder, _, names in os.walk(root):
            for name in names:
                if ".so" in name or name.endswith(".py"):
                    with open(os.path.join(folder, name), "rb") as handle:
                        data = handle.read()
                    for key in hits:
                        hits[key] += data.count(key.encode())
        emit(hits)
    ''')[-1]
    assert found["TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_IGNORE_PERFORMANCE"] > 0  # the scan sees the rewrite's switches
    assert found["TF_ENABLE_AUTO_MIXED_PRECISION"] == 0


def test_float16_preprocessing_rounds_at_every_step() -> None:
    """MP503 (and its docs): a chain of float16 steps on the CPU differs from float32
    math followed by one cast; a single step on uint8 data rounds like that one cast."""
    result = run_tf('''
        import numpy as np
        import tensorflow as tf
        x = tf.constant(np.arange(256, dtype=np.uint8))
        mean, std = 0.485, 0.229
        one_step = tf.cast(x, tf.float16) / 255.0
        chained = (tf.cast(x, tf.float16) / 255.0 - mean) / std
        model_cast = tf.cast(tf.cast(x, tf.float32) / 255.0, tf.float16)
        model_cast_chained = tf.cast((tf.cast(x, tf.float32) / 255.0 - mean) / std, tf.float16)
        emit({
            "dtypes": [one_step.dtype.name, chained.dtype.name],
            "one_step_differs": int(tf.reduce_sum(tf.cast(one_step != model_cast, tf.int32))),
            "chained_differs": int(tf.reduce_sum(tf.cast(chained != model_cast_chained, tf.int32))),
        })
    ''')[-1]
    assert result["dtypes"] == ["float16", "float16"]
    assert result["one_step_differs"] == 0
    assert result["chained_differs"] > 100


def test_the_compat_v1_path_mp401_names_for_tf1_loss_scales_exists() -> None:
    """MP401 tells TF1 code that TF 2.21 keeps its loss-scale class under `tf.compat.v1`
    at the same path: every path the message can name resolves in TF 2.21."""
    source = ("import tensorflow as tf\n"
              "with tf.Session() as sess:\n"
              "    a = tf.train.experimental.DynamicLossScale()\n"
              "    b = tf.mixed_precision.experimental.FixedLossScale(128)\n"
              "    c = tf.mixed_precision.DynamicLossScale()\n")
    findings, _ = lint_and_fix(source, frozenset({"MP401"}), "keras2")
    named = sorted({m for f in findings for m in re.findall(r"`(tf\.compat\.v1\.[\w.]+)`", f.message)})
    assert len(named) == 3, [f.message for f in findings]
    found = run_tf(f"import tensorflow as tf\nemit({{p: bool(eval(p)) for p in {named!r}}})\n")[-1]
    assert all(found.values()), found
