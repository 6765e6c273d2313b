"""The training-loop analysis (mplint/facts/training.py): tapes, gradient flow, optimizers."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mplint.facts.module import ModuleFacts
from mplint.facts.training import TrainingLoops


def analyse(source: str) -> tuple[TrainingLoops, ModuleFacts]:
    source = textwrap.dedent(source)
    facts = ModuleFacts(cst.parse_module(source), source, "m.py", configured_target="keras3")
    return facts.analysis(TrainingLoops), facts


def only_step(source: str):
    loops, facts = analyse(source)
    assert len(loops.steps) == 1, [facts.module.code_for_node(s.call) for s in loops.steps]
    return loops.steps[0], facts


LOOP = """
    with {tape_open}:
        loss = loss_fn(y, model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
"""


@pytest.mark.parametrize(
    "header, tape_open",
    [
        ("import tensorflow as tf", "tf.GradientTape() as tape"),
        ("import tensorflow as tf", "tf.GradientTape(persistent=True) as tape"),
        ("import tensorflow as tf", "tf.device('/gpu:0'), tf.GradientTape() as tape"),
        ("from tensorflow import GradientTape", "GradientTape(watch_accessed_variables=True) as tape"),
        ("import tensorflow as tensorflow_alias", "tensorflow_alias.GradientTape() as tape"),
    ],
)
def test_tape_spellings(header, tape_open):
    step, facts = only_step(header + "\noptimizer = None\n" + textwrap.dedent(LOOP.format(tape_open=tape_open)))
    assert step.kind == "tape" and isinstance(step.tape, cst.With)
    assert facts.module.code_for_node(step.apply).startswith("optimizer.apply_gradients")


def test_tape_bound_before_the_with():
    step, facts = only_step("""
        import tensorflow as tf
        tape = tf.GradientTape()
        with tape:
            loss = f()
        opt.apply_gradients(zip(tape.gradient(loss, w), w))
    """)
    assert step.tape is not None and step.apply is not None


def test_gradient_of_something_that_is_not_a_tape_is_not_a_step():
    loops, _ = analyse("""
        import tensorflow as tf
        grads = helper.gradient(loss, w)
        opt.apply_gradients(zip(grads, w))
    """)
    assert loops.steps == []


def test_gradients_followed_through_renames_tuples_and_comprehensions():
    step, facts = only_step("""
        import tensorflow as tf
        opt = tf.keras.optimizers.SGD()
        def step(x):
            with tf.GradientTape() as t:
                l = f(x)
            g = t.gradient(l, w)
            g2, norm = tf.clip_by_global_norm(g, 1.0)
            g3 = [tf.identity(v) for v in g2]
            opt.apply(g3, w)
    """)
    assert facts.module.code_for_node(step.apply) == "opt.apply(g3, w)"
    assert step.transformed and step.unscale is None


def test_plain_rename_is_not_a_transformation():
    step, _ = only_step("""
        import tensorflow as tf
        opt = tf.keras.optimizers.SGD()
        with tf.GradientTape() as t:
            l = f(x)
        grads = t.gradient(l, w)
        g = grads
        opt.apply_gradients(zip(g, w))
    """)
    assert step.apply is not None and not step.transformed


def test_gradients_followed_through_a_return_to_the_caller():
    step, facts = only_step("""
        import tensorflow as tf
        opt = tf.keras.optimizers.SGD()
        def compute(x):
            with tf.GradientTape() as tape:
                loss = f(x)
            return loss, tape.gradient(loss, w)
        def train(x):
            loss, grads = compute(x)
            opt.apply_gradients(zip(grads, w))
    """)
    assert facts.module.code_for_node(step.apply).startswith("opt.apply_gradients")
    assert step.optimizer.is_plain


def test_scaling_and_unscaling_are_recognised_under_any_name():
    step, _ = only_step("""
        import tensorflow as tf
        with tf.GradientTape() as tape:
            loss = f()
            scaled = opt.get_scaled_loss(loss)
        g = tape.gradient(scaled, w)
        g = opt.get_unscaled_gradients(g)
        opt.apply_gradients(zip(g, w))
    """)
    assert step.scaling.method == "get_scaled_loss"
    assert step.unscale is not None and not step.transformed


@pytest.mark.parametrize(
    "scaling, method",
    [
        ("loss = opt.scale_loss(loss)", "scale_loss"),
        ("loss = loss * 1024", "manual"),
        ("loss = loss * LOSS_SCALE", "manual"),
        ("loss *= 128.0", "manual"),
        ("loss = loss * weight", None),
    ],
)
def test_scaling_methods(scaling, method):
    step, _ = only_step(f"""
        import tensorflow as tf
        LOSS_SCALE = 512
        with tf.GradientTape() as tape:
            loss = f()
            {scaling}
        opt.apply_gradients(zip(tape.gradient(loss, w), w))
    """)
    assert (step.scaling.method if step.scaling else None) == method


def test_minimize_and_tf_gradients_steps():
    loops, _ = analyse("""
        import tensorflow as tf
        opt = tf.keras.optimizers.SGD()
        opt.minimize(loss, w, tape=tape)
        grads = tf.gradients(loss, w)
        opt.apply_gradients(zip(grads, w))
        unknown.minimize(loss)
    """)
    assert [s.kind for s in loops.steps] == ["minimize", "tf.gradients"]


# -- optimizers ------------------------------------------------------------------------------

def optimizer_of(source: str):
    step, facts = only_step(source)
    info = step.optimizer
    code = facts.module.code_for_node
    return info, (code(info.built) if info.built is not None else None), (code(info.wrapper) if info.wrapper is not None else None)


TAIL = """
with tf.GradientTape() as tape:
    loss = f()
{receiver}.apply_gradients(zip(tape.gradient(loss, w), w))
"""


@pytest.mark.parametrize(
    "setup, receiver, origin, generation, built",
    [
        ("opt = tf.keras.optimizers.Adam(1e-3)", "opt", "built", None, "tf.keras.optimizers.Adam(1e-3)"),
        ("opt = keras.optimizers.get('adam')", "opt", "built", None, "keras.optimizers.get('adam')"),
        ("opt = tf.optimizers.SGD()", "opt", "built", None, "tf.optimizers.SGD()"),
        ("opt = tf.keras.optimizers.Adam()\nopt = tf.keras.mixed_precision.LossScaleOptimizer(opt)", "opt", "built",
         "current", "tf.keras.optimizers.Adam()"),
        ("opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD())", "opt", "built", "current", "keras.optimizers.SGD()"),
        ("opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(tf.keras.optimizers.SGD(), 'dynamic')", "opt",
         "built", "experimental", "tf.keras.optimizers.SGD()"),
        ("opt = tf.train.experimental.enable_mixed_precision_graph_rewrite(tf.keras.optimizers.SGD())", "opt", "built",
         "graph_rewrite", "tf.keras.optimizers.SGD()"),
        ("def make():\n    o = tf.keras.optimizers.Adam()\n    return o\nopt = make()", "opt", "built", None, "tf.keras.optimizers.Adam()"),
        ("def build():\n    return model, tf.keras.optimizers.Adam()\nmodel, opt = build()", "opt", "built", None,
         "tf.keras.optimizers.Adam()"),
        ("model.compile(optimizer='adam')", "model.optimizer", "compiled", None, None),
        ("opt = get_optimizer(config)", "opt", "unknown", None, None),
        ("opt = tf.compat.v1.train.AdamOptimizer()", "opt", "built", None, "tf.compat.v1.train.AdamOptimizer()"),
    ],
)
def test_optimizer_resolution(setup, receiver, origin, generation, built):
    source = "import tensorflow as tf\nimport keras\n" + setup + "\n" + TAIL.format(receiver=receiver)
    info, built_code, _ = optimizer_of(source)
    assert (info.origin, info.generation, built_code) == (origin, generation, built)


def test_v1_optimizers_are_told_apart():
    info, _, _ = optimizer_of("import tensorflow as tf\nopt = tf.compat.v1.train.AdamOptimizer()\n" + TAIL.format(receiver="opt"))
    assert info.kind == "v1"


def test_self_attribute_optimizer_built_in_init_and_rewrapped():
    info, built, wrapper = optimizer_of("""
import tensorflow as tf
class Trainer:
    def __init__(self):
        self.opt = tf.keras.optimizers.Adam()
        self.opt = tf.keras.mixed_precision.LossScaleOptimizer(self.opt)
    def step(self):
        with tf.GradientTape() as tape:
            loss = f()
        self.opt.apply_gradients(zip(tape.gradient(loss, w), w))
""")
    assert (info.label, info.generation, built) == ("self.opt", "current", "tf.keras.optimizers.Adam()")
    assert wrapper == "tf.keras.mixed_precision.LossScaleOptimizer(self.opt)"


def test_self_optimizer_of_a_model_subclass_comes_from_compile():
    step, _ = only_step("""
import tensorflow as tf
class Base(tf.keras.Model):
    pass
class Net(Base):
    def train_step(self, data):
        with tf.GradientTape() as tape:
            loss = f(data)
        self.optimizer.apply_gradients(zip(tape.gradient(loss, self.trainable_variables), self.trainable_variables))
""")
    assert step.in_train_step and step.optimizer.origin == "compiled"


def test_self_optimizer_of_a_plain_class_is_unknown():
    step, _ = only_step("""
import tensorflow as tf
class Agent:
    def train_step(self, data):
        with tf.GradientTape() as tape:
            loss = f(data)
        self.optimizer.apply_gradients(zip(tape.gradient(loss, w), w))
""")
    assert not step.in_train_step and step.optimizer.origin == "unknown"


def test_function_parameter_optimizer_is_unknown_even_if_a_global_has_its_name():
    step, _ = only_step("""
import tensorflow as tf
optimizer = tf.keras.optimizers.Adam()
def train(optimizer, x):
    with tf.GradientTape() as tape:
        loss = f(x)
    optimizer.apply_gradients(zip(tape.gradient(loss, w), w))
""")
    assert step.optimizer.origin == "unknown"


def test_tf_function_context():
    step, _ = only_step("""
import tensorflow as tf
@tf.function(jit_compile=True)
def train(x):
    with tf.GradientTape() as tape:
        loss = f(x)
    opt.apply_gradients(zip(tape.gradient(loss, w), w))
""")
    assert step.tf_function


def test_apply_on_something_unknown_is_not_an_optimizer():
    step, _ = only_step("""
import tensorflow as tf
with tf.GradientTape() as tape:
    loss = f()
g = tape.gradient(loss, w)
transform.apply(g)
""")
    assert step.apply is None


def test_scaling_inside_a_helper_counts_as_scaled():
    loops, _ = analyse("""
import tensorflow as tf
def scaled_objective(opt, x):
    return opt.scale_loss(f(x))
def train(opt, x):
    with tf.GradientTape() as tape:
        loss = scaled_objective(opt, x)
        other = apply_loss_scale(f(x))
    opt.apply_gradients(zip(tape.gradient(loss, w), w))
    opt.apply_gradients(zip(tape.gradient(other, w), w))
""")
    assert [s.scaling.method for s in loops.steps] == ["manual", "manual"]


def test_loss_scaled_on_one_path_only_counts_as_scaled():
    loops, _ = analyse("""
import tensorflow as tf
def step(opt, model, x, amp):
    with tf.GradientTape() as tape:
        loss = model(x)
        if hasattr(opt, "get_scaled_loss"):
            scaled_loss = opt.get_scaled_loss(loss)
        else:
            scaled_loss = loss
    opt.apply_gradients(zip(tape.gradient(scaled_loss, w), w))
""")
    assert [s.scaling.method for s in loops.steps] == ["conditional"]


def test_unscaled_branch_next_to_a_scaled_one_counts_as_scaled():
    loops, _ = analyse("""
import tensorflow as tf
def step(opt, model, x, amp):
    with tf.GradientTape() as tape:
        loss = model(x)
        if amp:
            scaled_loss = opt.get_scaled_loss(loss)
    if amp:
        grads = opt.get_unscaled_gradients(tape.gradient(scaled_loss, w))
    else:
        grads = tape.gradient(loss, w)
    opt.apply_gradients(zip(grads, w))
""")
    assert [s.scaling.method for s in loops.steps] == ["get_scaled_loss", "conditional"]


def test_a_later_unconditional_rebinding_is_what_counts():
    loops, _ = analyse("""
import tensorflow as tf
def step(opt, model, x):
    with tf.GradientTape() as tape:
        loss = opt.get_scaled_loss(model(x))
        loss = model(x)
    opt.apply_gradients(zip(tape.gradient(loss, w), w))
""")
    assert loops.steps[0].scaling is None
