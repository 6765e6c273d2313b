"""MP4xx rewrites in shapes the fixtures do not show, and what stays without a fix."""

from __future__ import annotations

from tests.support.engine import lint_and_fix


def run(source: str, target: str = "keras2", extended: bool = False):
    return lint_and_fix(source, frozenset({"MP401", "MP403", "MP404"}), target, extended)


def test_dynamic_loss_scale_with_another_multiplier_is_not_mapped():
    findings, fixed = run("""
        import tensorflow as tf
        scale = tf.mixed_precision.experimental.DynamicLossScale(initial_loss_scale=1024, multiplier=4.0)
        opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(tf.keras.optimizers.SGD(), scale)
    """)
    lso = [f for f in findings if f.location.row == 4]
    assert lso and lso[0].fix is None and "cannot be mapped" in lso[0].detail
    assert "multiplier=4.0" in fixed


def test_fixed_loss_scale_from_a_constant_keeps_the_constant():
    _, fixed = run("""
        import tensorflow as tf
        SCALE = 2 ** 10
        opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(tf.keras.optimizers.SGD(), loss_scale=SCALE)
    """)
    assert "LossScaleOptimizer(tf.keras.optimizers.SGD(), dynamic=False, initial_scale=SCALE)" in fixed


def test_current_optimizer_with_the_old_keyword_is_migrated_too():
    _, fixed = run("""
        import tensorflow as tf
        opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(), loss_scale="dynamic")
    """, target="keras3")
    assert "opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())" in fixed


def test_half_migrated_set_policy_is_renamed():
    findings, fixed = run("""
        from tensorflow.keras import mixed_precision
        mixed_precision.set_policy("mixed_float16")
    """)
    assert [f.code for f in findings] == ["MP401"]
    assert 'mixed_precision.set_global_policy("mixed_float16")' in fixed


def test_aliased_names_from_the_experimental_module():
    _, fixed = run("""
        from tensorflow.keras.mixed_precision.experimental import set_policy as use_policy, Policy
        use_policy(Policy("mixed_float16"))
    """)
    assert "from tensorflow.keras.mixed_precision import set_global_policy as use_policy, Policy" in fixed
    assert 'use_policy(Policy("mixed_float16"))' in fixed


def test_loss_scale_read_of_a_policy_not_in_force_has_no_fix():
    findings, _ = run("""
        from tensorflow.keras.mixed_precision import experimental as mp
        probe = mp.Policy("mixed_float16")
        print(probe.loss_scale)
    """)
    reads = [f for f in findings if "loss_scale" in f.message and f.location.row == 4]
    assert reads and reads[0].fix is None


def test_loss_scale_read_with_two_candidate_optimizers_has_no_fix():
    findings, _ = run("""
        import tensorflow as tf
        tf.keras.mixed_precision.experimental.set_policy("mixed_float16")
        a = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())
        b = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())
        print(tf.keras.mixed_precision.experimental.global_policy().loss_scale)
    """)
    reads = [f for f in findings if "have no `loss_scale`" in f.message]
    assert reads and reads[0].fix is None


def test_loss_scale_read_of_the_global_policy_uses_the_one_optimizer():
    _, fixed = run("""
        import tensorflow as tf
        tf.keras.mixed_precision.experimental.set_policy("mixed_float16")
        opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(tf.keras.optimizers.SGD(), "dynamic")
        current = tf.keras.mixed_precision.experimental.global_policy().loss_scale
    """, target="keras3")
    assert "current = opt.scale_loss(1.0)" in fixed


def test_rewrite_result_unused_becomes_the_policy_alone():
    _, fixed = run("""
        import tensorflow as tf
        opt = tf.keras.optimizers.Adam()
        tf.train.experimental.enable_mixed_precision_graph_rewrite(opt)
    """, target="keras3")
    assert fixed == (
        "\nimport tensorflow as tf\n"
        'tf.keras.mixed_precision.set_global_policy("mixed_float16")\n'
        "opt = tf.keras.optimizers.Adam()\n"
    )


def test_rewrite_in_a_module_that_sets_the_policy_only_wraps():
    _, fixed = run("""
        import tensorflow as tf
        tf.keras.mixed_precision.set_global_policy("mixed_float16")
        opt = tf.compat.v1.train.experimental.enable_mixed_precision_graph_rewrite(tf.keras.optimizers.Adam())
    """)
    assert fixed.count("set_global_policy") == 1
    assert "opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())" in fixed


def test_environment_variable_spellings():
    for line in ('os.environ.setdefault("TF_ENABLE_AUTO_MIXED_PRECISION", "1")',
                 "os.putenv('TF_ENABLE_AUTO_MIXED_PRECISION', 'true')"):
        # A Keras 2 target says nothing of stock TensorFlow or an NGC container: extended tier.
        findings, fixed = run(f"import os\nimport tensorflow as tf\n{line}\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(2)])\n",
                              extended=True)
        assert [f.code for f in findings] == ["MP403"]
        assert "AUTO_MIXED_PRECISION" not in fixed and 'set_global_policy("mixed_float16")' in fixed


def test_keras2_scale_loss_on_something_unknown_is_left_alone():
    findings, _ = run("""
        import tensorflow as tf
        def step(scaler, model, x):
            with tf.GradientTape() as tape:
                loss = scaler.scale_loss(model(x))
            return tape.gradient(loss, model.trainable_variables)
    """)
    assert findings == []


def test_environment_variable_set_under_a_flag_becomes_the_policy_under_that_flag():
    _, fixed = run("""
        import os
        import tensorflow as tf
        if args.amp:
            os.environ["TF_ENABLE_AUTO_MIXED_PRECISION"] = "1"
        model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    """, extended=True)
    assert 'if args.amp:\n    tf.keras.mixed_precision.set_global_policy("mixed_float16")\nmodel' in fixed


def test_calls_guarded_by_hasattr_run_on_both_generations():
    findings, _ = run("""
        import tensorflow as tf
        def step(optimizer, model, x):
            with tf.GradientTape() as tape:
                loss = model(x)
                if hasattr(optimizer, "get_scaled_loss"):
                    loss = optimizer.get_scaled_loss(loss)
            grads = tape.gradient(loss, model.trainable_variables)
            grads = optimizer.get_unscaled_gradients(grads) if hasattr(optimizer, "get_unscaled_gradients") else grads
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
    """, target="keras3")
    assert findings == []


def test_import_of_the_experimental_module_with_an_alias():
    _, fixed = run("""
        import tensorflow.keras.mixed_precision.experimental as mpx
        mpx.set_policy("mixed_float16")
    """)
    assert fixed == '\nfrom tensorflow.keras import mixed_precision as mpx\nmpx.set_global_policy("mixed_float16")\n'
