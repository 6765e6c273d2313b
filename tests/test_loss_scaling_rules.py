"""MP2xx fixes in shapes the fixtures do not show: spellings, scopes, names, and the
cases that must be reported without a fix."""

from __future__ import annotations

import textwrap

from tests.support.engine import lint_and_fix

HEADER = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("mixed_float16")\n'


def run(source: str, target: str = "keras3", codes: str = "MP2"):
    selected = frozenset(c for c in ("MP201", "MP202", "MP203", "MP204", "MP205") if c.startswith(codes))
    return lint_and_fix(source, selected, target)


def test_optimizer_imported_by_name_gets_an_import_for_the_wrapper():
    findings, fixed = run("""
        from tensorflow.keras.optimizers import Adam
        from tensorflow.keras.mixed_precision import set_global_policy
        from tensorflow import GradientTape

        set_global_policy("mixed_float16")
        opt = Adam()

        def step(model, x):
            with GradientTape() as tape:
                loss = model(x)
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    """)
    assert [f.code for f in findings] == ["MP201"]
    assert "from tensorflow import GradientTape\nimport tensorflow as tf\n" in fixed
    assert "opt = tf.keras.mixed_precision.LossScaleOptimizer(Adam())" in fixed


def test_wrapper_follows_the_keras_spelling_of_the_optimizer():
    _, fixed = run(HEADER + textwrap.dedent("""
        import keras
        opt = keras.optimizers.SGD()
        def step(model, x):
            with tf.GradientTape() as tape:
                loss = model(x)
            opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
    """))
    assert "opt = keras.mixed_precision.LossScaleOptimizer(keras.optimizers.SGD())" in fixed


def test_one_persistent_tape_two_losses_get_two_names():
    findings, fixed = run(HEADER + textwrap.dedent("""
        opt_a = tf.keras.optimizers.SGD()
        opt_b = tf.keras.optimizers.SGD()
        def step(a, b, x):
            with tf.GradientTape(persistent=True) as tape:
                loss = a(x)
                loss_b = b(x)
            opt_a.apply_gradients(zip(tape.gradient(loss, a.trainable_variables), a.trainable_variables))
            opt_b.apply_gradients(zip(tape.gradient(loss_b, b.trainable_variables), b.trainable_variables))
    """))
    assert [f.code for f in findings] == ["MP201", "MP201"]
    assert "scaled_loss = opt_a.scale_loss(loss)" in fixed and "scaled_loss_b = opt_b.scale_loss(loss_b)" in fixed
    assert "tape.gradient(scaled_loss, a.trainable_variables)" in fixed
    assert "tape.gradient(scaled_loss_b, b.trainable_variables)" in fixed


def test_fresh_name_avoids_names_in_use():
    _, fixed = run(HEADER + textwrap.dedent("""
        opt = tf.keras.optimizers.SGD()
        scaled_loss = "a name the module already uses"
        def step(model, x):
            with tf.GradientTape() as tape:
                loss = model(x)
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    """))
    assert "scaled_loss_2 = opt.scale_loss(loss)" in fixed


def test_optimizer_local_to_another_function_gets_no_fix():
    findings, fixed = run(HEADER + textwrap.dedent("""
        def grads_of(model, x):
            with tf.GradientTape() as tape:
                loss = model(x)
            return tape.gradient(loss, model.trainable_variables)
        def train(model, x):
            opt = tf.keras.optimizers.SGD()
            g = grads_of(model, x)
            opt.apply_gradients(zip(g, model.trainable_variables))
    """))
    assert [f.code for f in findings] == ["MP201"] and findings[0].fix is None
    assert "scale_loss" not in fixed


def test_loss_computed_outside_the_tape_gets_no_fix():
    findings, _ = run(HEADER + textwrap.dedent("""
        opt = tf.keras.optimizers.SGD()
        def step(model, x):
            loss = model(x)
            with tf.GradientTape() as tape:
                tape.watch(x)
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    """))
    assert [f.code for f in findings] == ["MP201"] and findings[0].fix is None


def test_gradients_reaching_the_optimizer_through_a_for_loop_are_not_followed():
    """Unsure where they go: silent rather than a guess."""
    findings, _ = run(HEADER + textwrap.dedent("""
        opt = tf.keras.optimizers.SGD()
        def step(model, losses):
            with tf.GradientTape(persistent=True) as tape:
                pass
            for g in [tape.gradient(l, model.trainable_variables) for l in losses]:
                opt.apply_gradients(zip(g, model.trainable_variables))
    """))
    assert findings == []


def test_keras2_unscales_before_clipping():
    _, fixed = run(HEADER + textwrap.dedent("""
        opt = tf.keras.optimizers.SGD()
        def step(model, x):
            with tf.GradientTape() as tape:
                loss = model(x)
            grads = tape.gradient(loss, model.trainable_variables)
            grads = [tf.clip_by_norm(g, 1.0) for g in grads]
            opt.apply_gradients(zip(grads, model.trainable_variables))
    """), target="keras2")
    assert "grads = opt.get_unscaled_gradients(tape.gradient(scaled_loss, model.trainable_variables))\n" \
           "    grads = [tf.clip_by_norm(g, 1.0) for g in grads]" in fixed


def test_model_optimizer_of_a_compiled_model_is_loss_scaled():
    findings, fixed = run(HEADER + textwrap.dedent("""
        model = tf.keras.Sequential([tf.keras.layers.Dense(2, dtype="float32")])
        model.compile(optimizer="adam", loss="mse")
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            model.optimizer.apply_gradients(zip(grads, model.trainable_variables))
    """))
    assert [f.code for f in findings] == ["MP202"]
    assert "scaled_loss = model.optimizer.scale_loss(loss)" in fixed


def test_bfloat16_unwrap_keeps_other_code():
    findings, fixed = run("""
        import tensorflow as tf
        tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
        inner = tf.keras.optimizers.Adam()
        opt = tf.keras.mixed_precision.LossScaleOptimizer(inner)
        print(opt.inner_optimizer)
    """)
    assert [f.code for f in findings] == ["MP205"] and findings[0].fix is None  # reads an LSO-only attribute
    assert "LossScaleOptimizer(inner)" in fixed


def test_float16_or_bfloat16_by_flag_keeps_the_loss_scale_optimizer():
    findings, _ = run("""
        import tensorflow as tf
        policy = "mixed_bfloat16" if on_tpu else "mixed_float16"
        tf.keras.mixed_precision.set_global_policy(policy)
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())
    """)
    assert findings == []


def test_exclusive_branches_never_run_in_the_same_pass():
    """MP204 keeps quiet where the graph rewrite and `tf.gradients` are the two branches of
    one `if` (mplint.analysis.guards.exclusive)."""
    import libcst as cst

    from mplint.analysis.guards import exclusive
    from mplint.analysis.index import ModuleIndex

    module = cst.parse_module(
        "if amp:\n    opt = rewrite(opt)\n    a = 1\nelse:\n    g = grads()\n"
        "if other:\n    h = grads()\nk = 1 if amp else grads()\n"
    )
    index = ModuleIndex(module)
    calls = {cst.Module([]).code_for_node(c): c for c in index.nodes(cst.Call)}
    rewrite = next(c for c in index.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "rewrite")
    grads = [c for c in index.nodes(cst.Call) if isinstance(c.func, cst.Name) and c.func.value == "grads"]
    assert calls and [exclusive(index, rewrite, g) for g in grads] == [True, False, False]
    assert exclusive(index, grads[0], rewrite)
