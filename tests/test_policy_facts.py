"""The shared "is a mixed policy in force" facts (mplint.facts.policy)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mplint.facts.module import ModuleFacts
from mplint.facts.policy import is_global_setter, is_policy_constructor


def facts_for(source: str, assumed: str | None = None) -> ModuleFacts:
    text = textwrap.dedent(source)
    return ModuleFacts(cst.parse_module(text), text, "/nonexistent/example.py", assumed_policy=assumed)


def mixed(source: str, assumed: str | None = None) -> list[str]:
    return sorted(facts_for(source, assumed).policy.mixed_policies)


GLOBAL_FORMS = {
    "tf.keras": """
        import tensorflow as tf
        tf.keras.mixed_precision.set_global_policy("mixed_float16")
    """,
    "tensorflow.keras module import": """
        import tensorflow.keras as tfk
        tfk.mixed_precision.set_global_policy("mixed_float16")
    """,
    "from tensorflow.keras import mixed_precision": """
        from tensorflow.keras import mixed_precision
        mixed_precision.set_global_policy("mixed_float16")
    """,
    "keras 3 set_dtype_policy": """
        import keras
        keras.mixed_precision.set_dtype_policy("mixed_float16")
    """,
    "keras.config": """
        import keras
        keras.config.set_dtype_policy("mixed_float16")
    """,
    "tf_keras": """
        import tf_keras
        tf_keras.mixed_precision.set_global_policy("mixed_float16")
    """,
    "from-import renamed": """
        from tensorflow.keras.mixed_precision import set_global_policy as p
        p("mixed_float16")
    """,
    "from keras import mixed_precision as mp": """
        from keras import mixed_precision as mp
        mp.set_global_policy(policy="mixed_float16")
    """,
    "experimental module (TF 2.1-2.3)": """
        from tensorflow.keras.mixed_precision import experimental as mixed_precision
        mixed_precision.set_policy("mixed_float16")
    """,
    "experimental attribute chain": """
        import tensorflow as tf
        tf.keras.mixed_precision.experimental.set_policy("mixed_float16")
    """,
    "tensorflow.python.keras internal path": """
        from tensorflow.python.keras.mixed_precision.experimental import policy as policy_module
        policy_module.set_policy("mixed_float16")
    """,
    "keras.src internal path": """
        from keras.src.dtype_policies.dtype_policy import set_dtype_policy
        set_dtype_policy("mixed_float16")
    """,
    "tf.compat.v1.keras": """
        import tensorflow as tf
        tf.compat.v1.keras.mixed_precision.experimental.set_policy("mixed_float16")
    """,
    "L = tf.keras.mixed_precision alias": """
        import tensorflow as tf
        mp = tf.keras.mixed_precision
        mp.set_global_policy("mixed_float16")
    """,
}


@pytest.mark.parametrize("source", GLOBAL_FORMS.values(), ids=GLOBAL_FORMS.keys())
def test_every_spelling_of_the_global_setter(source: str) -> None:
    facts = facts_for(source)
    assert sorted(facts.policy.mixed_policies) == ["mixed_float16"]
    (setting,) = facts.policy.global_settings
    assert setting.kind == "global" and setting.is_mixed


ARGUMENT_FORMS = {
    "Policy object": """
        import tensorflow as tf
        tf.keras.mixed_precision.set_global_policy(tf.keras.mixed_precision.Policy("mixed_bfloat16"))
    """,
    "DTypePolicy object": """
        import keras
        keras.mixed_precision.set_dtype_policy(keras.DTypePolicy(name="mixed_bfloat16"))
    """,
    "dtype_policies.DTypePolicy": """
        import keras
        from keras import dtype_policies
        keras.config.set_dtype_policy(dtype_policies.DTypePolicy("mixed_bfloat16"))
    """,
    "experimental Policy with loss_scale in a variable": """
        from tensorflow.keras.mixed_precision import experimental as mixed_precision
        policy = mixed_precision.Policy("mixed_bfloat16", loss_scale="dynamic")
        mixed_precision.set_policy(policy)
    """,
    "string constant": """
        import keras
        POLICY = "mixed_bfloat16"
        keras.mixed_precision.set_global_policy(POLICY)
    """,
    "conditional expression": """
        import keras
        USE_TPU = True
        keras.mixed_precision.set_global_policy("mixed_bfloat16" if USE_TPU else "float32")
    """,
    "argparse default": """
        import argparse
        import keras
        parser = argparse.ArgumentParser()
        parser.add_argument("--policy", default="mixed_bfloat16")
        args = parser.parse_args()
        keras.mixed_precision.set_global_policy(args.policy)
    """,
    "argparse choices": """
        import argparse
        import keras
        parser = argparse.ArgumentParser()
        parser.add_argument("--dtype-policy", choices=["float32", "mixed_bfloat16"], default="float32")
        args = parser.parse_args()
        keras.mixed_precision.set_global_policy(args.dtype_policy)
    """,
    "absl DEFINE_enum": """
        from absl import flags
        import keras
        flags.DEFINE_enum("policy", "float32", ["float32", "mixed_bfloat16"], "dtype policy")
        FLAGS = flags.FLAGS
        keras.mixed_precision.set_global_policy(FLAGS.policy)
    """,
    "parameter default": """
        import keras
        def configure(policy="mixed_bfloat16"):
            keras.mixed_precision.set_global_policy(policy)
    """,
    "variable assigned in both branches": """
        import keras
        policy = "float32"
        if on_tpu():
            policy = "mixed_bfloat16"
        keras.mixed_precision.set_global_policy(policy)
    """,
    "under an if (meant to run mixed)": """
        import keras
        if args.bf16:
            keras.mixed_precision.set_global_policy("mixed_bfloat16")
    """,
}


@pytest.mark.parametrize("source", ARGUMENT_FORMS.values(), ids=ARGUMENT_FORMS.keys())
def test_policy_arguments(source: str) -> None:
    assert mixed(source) == ["mixed_bfloat16"]


LAYER_FORMS = {
    "string": """
        from tensorflow.keras import layers
        dense = layers.Dense(4, dtype="mixed_float16")
    """,
    "policy variable": """
        import keras
        half = keras.mixed_precision.Policy("mixed_float16")
        dense = keras.layers.Dense(4, dtype=half)
    """,
    "parameter default": """
        import keras
        def block(units, dtype="mixed_float16"):
            return keras.layers.Dense(units, dtype=dtype)
    """,
    "custom layer class": """
        import keras
        class Block(keras.layers.Layer):
            pass
        block = Block(dtype="mixed_float16")
    """,
}


@pytest.mark.parametrize("source", LAYER_FORMS.values(), ids=LAYER_FORMS.keys())
def test_per_layer_mixed_dtype(source: str) -> None:
    facts = facts_for(source)
    assert sorted(facts.policy.mixed_policies) == ["mixed_float16"]
    assert not facts.policy.global_settings
    assert [s.kind for s in facts.policy.layer_settings] == ["layer"]


NOT_MIXED = {
    "no policy at all": """
        import keras
        model = keras.Sequential([keras.layers.Dense(2)])
    """,
    "float32 policy": """
        import keras
        keras.mixed_precision.set_global_policy("float32")
    """,
    "pure float16 (not mixed; MP103's business)": """
        import keras
        keras.mixed_precision.set_global_policy("float16")
    """,
    "Policy built but never set": """
        import keras
        policy = keras.mixed_precision.Policy("mixed_float16")
        print(policy.compute_dtype)
    """,
    "unresolvable argument": """
        import keras
        keras.mixed_precision.set_global_policy(config["policy"])
    """,
    "a local function of the same name": """
        def set_global_policy(name):
            print(name)
        set_global_policy("mixed_float16")
    """,
    "mixed string in a non-policy call": """
        import logging
        logging.info("mixed_float16")
    """,
    "Policy constructor's own dtype keyword is not a layer": """
        import keras
        keras.mixed_precision.Policy(name="mixed_float16")
    """,
}


@pytest.mark.parametrize("source", NOT_MIXED.values(), ids=NOT_MIXED.keys())
def test_no_mixed_policy(source: str) -> None:
    facts = facts_for(source)
    assert facts.policy.mixed_policies == frozenset()
    assert not facts.policy.mixed_in_force
    assert facts.policy.describe() == "no mixed policy"


def test_unresolvable_argument_is_recorded_as_unknown() -> None:
    facts = facts_for(NOT_MIXED["unresolvable argument"])
    (setting,) = facts.policy.global_settings
    assert setting.names is None and not setting.is_mixed


def test_assume_policy_puts_a_policy_in_force() -> None:
    source = """
        import keras
        model = keras.Sequential([keras.layers.Dense(2)])
    """
    facts = facts_for(source, assumed="mixed_bfloat16")
    assert facts.policy.mixed_in_force and facts.policy.bfloat16 and not facts.policy.float16
    assert facts.policy.describe() == "mixed_bfloat16 (assume-policy)"
    layer = facts.index.nodes(cst.Call)[-1]
    assert facts.policy.global_mixed_at(layer)
    assert facts.policy.global_compute_dtypes_at(layer) == frozenset({"bfloat16"})


def test_float16_and_bfloat16_flags_and_compute_dtypes() -> None:
    facts = facts_for(
        """
        import keras
        keras.mixed_precision.set_global_policy("mixed_float16" if gpu else "mixed_bfloat16")
        layer = keras.layers.Dense(2)
        """
    )
    assert facts.policy.float16 and facts.policy.bfloat16
    assert facts.policy.compute_dtypes == frozenset({"float16", "bfloat16"})
    layer = _call_named(facts, "keras.layers.Dense(2)")
    assert facts.policy.global_compute_dtypes_at(layer) == frozenset({"float16", "bfloat16"})
    assert facts.policy.describe() == "mixed_bfloat16, mixed_float16 (set in the file)"


def _call_named(facts: ModuleFacts, text: str) -> cst.Call:
    return next(c for c in facts.index.nodes(cst.Call) if facts.module.code_for_node(c) == text)


def test_global_mixed_at_follows_source_order_within_a_scope() -> None:
    facts = facts_for(
        """
        import keras
        early = keras.layers.Dense(1)

        def build():
            return keras.layers.Dense(2)

        keras.mixed_precision.set_global_policy("mixed_float16")
        late = keras.layers.Dense(3)
        """
    )
    policy = facts.policy
    assert not policy.global_mixed_at(_call_named(facts, "keras.layers.Dense(1)"))
    assert policy.global_mixed_at(_call_named(facts, "keras.layers.Dense(2)"))  # runs later
    assert policy.global_mixed_at(_call_named(facts, "keras.layers.Dense(3)"))


def test_global_mixed_at_ignores_float32_and_layer_settings() -> None:
    facts = facts_for(
        """
        import keras
        keras.mixed_precision.set_global_policy("float32")
        head = keras.layers.Dense(1, dtype="mixed_float16")
        plain = keras.layers.Dense(2)
        """
    )
    assert facts.policy.mixed_in_force  # the layer's own dtype
    assert not facts.policy.global_mixed_at(_call_named(facts, "keras.layers.Dense(2)"))


def test_layer_policy_names() -> None:
    facts = facts_for(
        """
        import keras
        import tensorflow as tf
        a = keras.layers.Dense(1)
        b = keras.layers.Dense(1, dtype=tf.float32)
        c = keras.layers.Dense(1, dtype=keras.mixed_precision.Policy("float32"))
        d = keras.layers.Dense(1, **config)
        e = keras.layers.Dense(1, dtype=lookup())
        """
    )
    by_variable = {a.targets[0].target.value: a.value for a in facts.index.nodes(cst.Assign)}
    names = {name: facts.policy.layer_policy_names(call) for name, call in by_variable.items()}
    assert names == {
        "a": frozenset(),  # no dtype: the global policy
        "b": frozenset({"float32"}),
        "c": frozenset({"float32"}),
        "d": None,  # **config may hold a dtype
        "e": None,  # unknown expression
    }


@pytest.mark.parametrize(
    "name, expected",
    [
        ("keras.mixed_precision.set_global_policy", True),
        ("keras.mixed_precision.experimental.policy.set_policy", True),
        ("keras.src.dtype_policies.dtype_policy.set_dtype_policy", True),
        ("keras.mixed_precision.global_policy", False),
        ("tensorflow.set_global_policy", False),
        ("keras.optimizers.set_policy", False),
        (None, False),
    ],
)
def test_is_global_setter(name: str | None, expected: bool) -> None:
    assert is_global_setter(name) is expected


@pytest.mark.parametrize(
    "name, expected",
    [
        ("keras.mixed_precision.Policy", True),
        ("keras.DTypePolicy", True),
        ("keras.src.dtype_policies.dtype_policy.DTypePolicy", True),
        ("keras.mixed_precision.experimental.Policy", True),
        ("keras.layers.Policy", False),
        ("keras.mixed_precision.global_policy", False),
    ],
)
def test_is_policy_constructor(name: str, expected: bool) -> None:
    assert is_policy_constructor(name) is expected


def test_global_mixed_at_a_later_float32_reset_wins() -> None:
    facts = facts_for(
        """
        import keras
        keras.mixed_precision.set_global_policy("mixed_float16")
        student = keras.layers.Dense(1)
        keras.mixed_precision.set_global_policy("float32")
        teacher = keras.layers.Dense(2)
        """
    )
    assert facts.policy.global_mixed_at(_call_named(facts, "keras.layers.Dense(1)"))
    assert not facts.policy.global_mixed_at(_call_named(facts, "keras.layers.Dense(2)"))


def test_global_mixed_at_either_branch_can_be_mixed() -> None:
    facts = facts_for(
        """
        import keras
        if args.amp:
            keras.mixed_precision.set_global_policy("mixed_float16")
        else:
            keras.mixed_precision.set_global_policy("float32")
        model = keras.layers.Dense(1)
        """
    )
    assert facts.policy.global_mixed_at(_call_named(facts, "keras.layers.Dense(1)"))


def test_global_mixed_at_a_conditional_float32_does_not_hide_an_earlier_mixed_one() -> None:
    facts = facts_for(
        """
        import keras
        keras.mixed_precision.set_global_policy("mixed_float16")
        if args.debug:
            keras.mixed_precision.set_global_policy("float32")
        model = keras.layers.Dense(1)
        """
    )
    assert facts.policy.global_mixed_at(_call_named(facts, "keras.layers.Dense(1)"))


def test_a_policy_in_a_branch_a_constant_kills_is_not_set_but_a_flag_or_a_reassigned_constant_keeps_it():
    import libcst as cst

    from mplint.facts.module import ModuleFacts

    def mixed(text: str) -> bool:
        facts = ModuleFacts(cst.parse_module(text), text, "train.py")
        return bool(facts.policy.mixed_global_settings)

    setter = '    tf.keras.mixed_precision.set_global_policy("mixed_float16")\n'
    assert not mixed("import tensorflow as tf\nAMP = False\nif AMP:\n" + setter)
    assert not mixed("import tensorflow as tf\nFP32 = True\nif not FP32:\n" + setter)
    assert not mixed("import tensorflow as tf\nAMP = 0\nif AMP:\n    pass\nelif False:\n    pass\nif AMP:\n" + setter)
    assert mixed("import tensorflow as tf\nAMP = True\nif AMP:\n" + setter)
    assert mixed("import tensorflow as tf\nAMP = False\nif gpu:\n    AMP = True\nif AMP:\n" + setter)
    assert mixed("import argparse\nimport tensorflow as tf\np = argparse.ArgumentParser()\n"
                 "p.add_argument('--amp', action='store_true', default=False)\nargs = p.parse_args()\nif args.amp:\n" + setter)
    assert mixed("import tensorflow as tf\ndef main(amp=False):\n    if amp:\n    " + setter)
