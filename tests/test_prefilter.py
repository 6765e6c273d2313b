"""The text pre-filter: cheap, and never hides a file a rule could fire on."""

from __future__ import annotations

import pytest

from mplint.engine.prefilter import mentions_tokens, needs_parse, worth_parsing


LAYER = "class L(keras.layers.Layer):\n    def call(self, x, n, mask):\n        return {}\n"


@pytest.mark.parametrize(
    "text",
    [
        "tf.keras.mixed_precision.set_global_policy('mixed_float16')",
        "from keras.mixed_precision import experimental as mixed_precision",
        "opt = tf.keras.mixed_precision.LossScaleOptimizer(opt, dynamic=False)",
        "scaled = opt.get_scaled_loss(loss)",
        "opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)",
        "os.environ['TF_ENABLE_AUTO_MIXED_PRECISION'] = '1'",
        "ds = ds.map(lambda x: tf.cast(x, tf.float16), num_parallel_calls=4)",
        "K.set_floatx('float16')",
        "dense = tf.keras.layers.Dense(4, dtype='bfloat16')",
        "import keras\n" + LAYER.format("x - 1e30 * mask"),
        "import tensorflow as tf\n" + LAYER.format("x / (n + 1e-12)"),
        "import tensorflow as tf\nNEG = -1000000\n" + LAYER.format("x + NEG * mask"),
    ],
)
def test_mixed_precision_code_is_parsed(text):
    assert needs_parse(text)
    assert worth_parsing(text)


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


# -- stage 2: what the code says (Python's parser, no comments or docstrings) ------------------

def _findings(text: str, assume: str | None = None) -> list:
    """Every rule, both Keras targets, both tiers: what the engine reports on `text` (the
    pre-filter must let through every file where a finding of either tier fires)."""
    from mplint.core.codes import all_codes
    from mplint.engine.engine import FileSettings, lint
    from mplint.inputs.documents import load_document

    # a module of a package (library code: its layers run under its users' policies)
    doc = load_document("src/module.py", text.encode())
    found = []
    for target in ("keras2", "keras3"):
        settings = FileSettings(codes=frozenset(all_codes()), target=target, assumed_policy=assume, extended=True)
        found += lint(doc, settings, "src/module.py")
    return found


# Files the text scan lets through but no rule can fire on: the code stage rejects them,
# and the engine agrees.
SILENT = {
    "docstring": '''import keras


def build(dtype=None):
    """dtype: str or `keras.mixed_precision.DTypePolicy`; try "mixed_float16"."""
    return keras.layers.Dense(16, dtype=dtype)
''',
    "comment": """import tensorflow as tf

# tf.keras.mixed_precision.set_global_policy("mixed_float16") is set by the trainer
model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
""",
    "dtype test": """import keras
from keras import ops


def test_float16_dtype():
    layer = MyEmbedding(dtype="float16")
    outputs = layer(ops.ones((2, 3)))
    assert outputs.dtype == "float16"
""",
    "bfloat16 mention": """import keras


def is_half(x):
    return keras.backend.standardize_dtype(x.dtype) in ("float16", "bfloat16")
""",
    "epsilon passed to a float32 layer": """import keras


class Block(keras.layers.Layer):
    def __init__(self, layer_norm_epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        self.norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon)

    def call(self, x):
        return self.norm(x)
""",
    "hazard in a test class": """import keras
from keras import ops


class CausalLMTest(keras.src.testing.TestCase):
    def test_generate(self):
        logits = ops.ones((2, 3))
        return logits * 1e9
""",
    "float32 layer dtype": """import tensorflow as tf

x = tf.cast(inputs, tf.float16)
dense = tf.keras.layers.Dense(10, dtype=tf.float32)
""",
}


@pytest.mark.parametrize("name", sorted(SILENT))
def test_evidence_rejects_what_no_rule_can_fire_on(name):
    text = SILENT[name]
    assert mentions_tokens(text), "the token scan alone would parse it"
    assert not worth_parsing(text)
    assert _findings(text) == []


# Minimal files each rule family fires on; the code stage must let every one through.
FIRING = {
    "MP101 policy": """import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_" "float16")
inputs = tf.keras.Input((4,))
outputs = tf.keras.layers.Dense(10, activation="softmax")(inputs)
model = tf.keras.Model(inputs, outputs)
""",
    "MP103 layer dtype": """import tensorflow as tf

HALF = "float16"
dense = tf.keras.layers.Dense(16, dtype=HALF)
""",
    "MP401 positional loss scale": """import tensorflow as tf
from tensorflow.keras.mixed_precision import Policy as P

policy = P("float32", "dynamic")
""",
    "MP501 through an attribute": """import tensorflow as tf


class Masked(tf.keras.layers.Layer):
    def __init__(self, fill=-1e9):
        super().__init__()
        self.fill = fill

    def call(self, scores, mask):
        return scores + self.fill * (1.0 - mask)
""",
    "MP501 through an aliased where": """import tensorflow as tf
from tensorflow import where as select


class Masked(tf.keras.layers.Layer):
    def call(self, scores, mask):
        return select(mask > 0, scores, -1e9 * tf.ones_like(scores))
""",
    "MP502 through a flag": """import argparse

import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--eps", type=float, default=1e-12)
args = parser.parse_args()


class Normalize(tf.keras.layers.Layer):
    def call(self, x):
        return x / (tf.norm(x) + args.eps)
""",
    "MP503 float16 arithmetic in a map": """import tensorflow as tf

ds = tf.data.Dataset.range(4).map(lambda x: tf.cast(x, tf.float16) / 255.0, num_parallel_calls=2)
""",
}


@pytest.mark.parametrize("name", sorted(FIRING))
def test_code_stage_lets_firing_code_through(name):
    text = FIRING[name]
    code = name.split()[0]
    assert code in {f.code for f in _findings(text)}, "the example must fire"
    assert worth_parsing(text)


def test_code_stage_leaves_unparsable_code_to_the_engine():
    text = "import keras\n" + LAYER.format("x * 1e9 +")
    assert worth_parsing(text)  # the engine reports the syntax error


def test_name_lists_cover_the_rules_tables():
    """The code stage matches the last name of what the rules resolve: every table the
    rules match against must have its names in the pre-filter's lists."""
    from mplint.catalogue import rule_evidence as p
    from mplint.facts import float16_code, policy, training
    from mplint.facts import input_pipeline as _input_pipeline
    from mplint_rules import migration, numerics, outputs

    def last(names):
        return {n.rsplit(".", 1)[-1] for n in names}

    assert set(policy.MIXED_POLICIES) == p.MIXED_POLICY_NAMES
    assert set(outputs.PURE_HALF) <= p.HALF_STRINGS
    assert last(k for k, v in policy.DTYPE_CONSTANTS.items() if v in outputs.PURE_HALF) <= p.HALF_NAMES
    assert last(policy.SET_GLOBAL_POLICY | policy.SET_FLOATX) <= p.POLICY_SETTERS
    assert last(policy.POLICY_CONSTRUCTORS) <= p.POLICY_CLASSES
    assert last(training.GRAPH_REWRITE) <= p.GRAPH_REWRITE_NAMES
    assert last(training.LSO_CURRENT | training.LSO_EXPERIMENTAL) == {p.LOSS_SCALE_OPTIMIZER}
    assert migration.AUTO_MIXED_PRECISION_ENV == p.AUTO_MIXED_PRECISION_ENV
    assert set(migration.LOSS_SCALES_GONE.values()) <= p.OLD_API_NAMES
    assert set(migration.RENAMED) <= p.OLD_API_NAMES
    assert last(migration.GLOBAL_POLICY) <= p.POLICY_HOLDERS
    tables = (numerics.WHERE_FUNCS, numerics.FULL_LIKE, numerics.CONVERT_WITH_DTYPE, numerics.CLAMPS,
              numerics.EPSILON_OPS, numerics.FLOAT16_EPSILON_LAYERS)
    assert set().union(*(last(t) for t in tables)) <= p.HAZARD_USE_CALLS
    assert last(numerics.FLOAT16_EPSILON_LAYERS) | last([float16_code.LAMBDA_LAYER]) <= p.HAZARD_REGION_NAMES
    assert set(_input_pipeline.TRAINING_METHODS) <= p.TRAINING_METHODS
    assert last(_input_pipeline.DATASET_SOURCES_TAKING_DATA) <= p.DATA_SOURCES
    assert last(_input_pipeline.MODEL_CONSTRUCTORS) <= p.MODEL_EVIDENCE
    assert _input_pipeline.TF_DATA_METHODS | last(_input_pipeline.DATASET_FACTORIES - {"tensorflow_datasets.load"}) \
        <= p.DATASET_EVIDENCE


def test_every_rule_has_evidence_and_unknown_rules_are_never_filtered():
    from mplint.catalogue import rule_evidence
    from mplint.core.codes import RULES

    assert rule_evidence.KNOWN_CODES == set(RULES)
    text = "import keras\n# mixed_float16\n"
    assert not worth_parsing(text)
    assert worth_parsing(text, codes={"MP101", "MP999"})  # a plugin's rule: the text scan decides


def test_code_stage_asks_only_for_the_enabled_rules():
    text = "import tensorflow as tf\nx = tf.cast(x, tf.float16)\nds = ds.map(f, num_parallel_calls=2)\n"
    assert worth_parsing(text, codes={"MP503"})
    assert not worth_parsing(text, codes={"MP101", "MP301"})


def test_an_attribute_dtype_may_take_a_flags_choices():
    """`dtype=self.dtype` resolves only through a flag named `dtype`: let the file through
    when the module defines flags with choices."""
    text = """import argparse
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--dtype", choices=["float16"])


class Head:
    def build(self):
        return tf.keras.layers.Dense(4, dtype=self.dtype)
"""
    assert "MP103" in {f.code for f in _findings(text)}
    assert worth_parsing(text, codes={"MP103"})
    without_flags = text.replace('parser.add_argument("--dtype", choices=["float16"])', 'HALF = "float16"')
    assert not worth_parsing(without_flags, codes={"MP103"})


def test_backend_step_evidence_matches_the_rules_text_hints():
    """MP206/MP207 look for steps only when their text hints are there; the evidence
    names cover each hint (`jax.grad` and `grad(` are the name `grad`)."""
    from mplint.catalogue import rule_evidence
    from mplint.facts.training import SCALE_METHODS
    from rules import backend_steps

    for hint in backend_steps._TEXT_HINTS:
        name = hint.removeprefix("jax.").removesuffix("(")
        assert name in rule_evidence.JAX_TORCH_GRADIENT_NAMES
    assert set(SCALE_METHODS) | {"compute_loss_and_updates"} <= rule_evidence.SCALED_LOSS_NAMES


def test_findings_do_not_depend_on_the_rules_selected(cli, tmp_path):
    # A fill value imported from another module is not in this file's code, where the
    # pre-filter looks for MP501's literals: reporting it only when another rule made the
    # engine parse the file would make `--select MP501` lose findings the full run has.
    from tests.conftest import write
    import json

    write(tmp_path / "constants.py", "NEG_INF = -1e9\n")
    write(tmp_path / "train.py", "import tensorflow as tf\nfrom layer import Masked\n"
          "tf.keras.mixed_precision.set_global_policy('mixed_float16')\nlayer = Masked()\n")
    write(tmp_path / "layer.py", (
        "import tensorflow as tf\nfrom constants import NEG_INF\n\n"
        "class Masked(tf.keras.layers.Layer):\n"
        "    def call(self, x, mask):\n"
        "        # fill with -1e9 where masked\n"
        "        return tf.nn.softmax(x + (1.0 - mask) * NEG_INF)\n"
        "\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(4)])\n"
    ))

    def mp501(args):
        result = cli(["--no-cache", "--output-format", "json", "--extended", *args, "layer.py"], cwd=tmp_path)
        return [(f["code"], f["location"]["row"]) for f in json.loads(result.stdout) if f["code"] == "MP501"]

    everything = mp501([])
    assert everything == mp501(["--select", "MP501"])
    assert everything == []
