"""The MP4xx fixtures on TensorFlow 2.21: each original fails the way it fails today, and
its fixed text imports, builds its model and runs a training step without error (Keras 3,
or tf-keras for keras2-targeted fixtures), with the loss scaling the migration promises.

Every fixture here trains at import (fit or a custom step on random data).
"""

from __future__ import annotations

import json

import pytest

from tests.fixture_cases import cases
from tests.tf_harness import run_tf

pytestmark = pytest.mark.tensorflow

# fixture id -> (exception the original raises today or None, checks on the fixed run).
# A check is a Python expression over the fixture's namespace (plus `LSO`, the Keras
# LossScaleOptimizer class, and `scale(opt)`, its current loss scale).
MIGRATIONS = {
    "MP401/guide_tf21": ("ImportError", [
        "isinstance(optimizer, LSO) and isinstance(model.optimizer, LSO)",
        "model.get_layer('dense_1').compute_dtype == 'float16'",
        "float(loss_scale) == 32768.0",  # `policy.loss_scale` read from the compiled model
        "float(loss) == float(loss)",
    ]),
    "MP401/guide_tf21_keras3": ("ImportError", [
        "isinstance(optimizer, LSO) and isinstance(model.optimizer, LSO)",
        "model.get_layer('dense_1').compute_dtype == 'float16'",
        "float(loss_scale) == 32768.0",
        "float(loss) == float(loss)",
    ]),
    "MP401/branch_of_an_and_no_construction_takes": ("AttributeError", [
        "model.policy.name == 'float32' and not isinstance(model.optimizer, LSO)",  # the `and` branch stays untaken
    ]),
    "MP401/attribute_chains": ("AttributeError", [
        "isinstance(opt, LSO) and scale(opt) == 4096.0 and opt.dynamic_growth_steps == 500",
    ]),
    "MP401/imported_names_fixed_scale": ("ImportError", [
        "isinstance(opt, LSO) and opt.dynamic is False and scale(opt) == 128.0",
        "int(opt.iterations) == 1",
    ]),
    "MP401/fixed_scale_keras3": ("ImportError", [
        "isinstance(optimizer, LSO) and scale(optimizer) == 512.0",
        "int(optimizer.iterations) == 1",
    ]),
    "MP401/loss_scale_object": ("AttributeError", [
        "isinstance(optimizer, LSO) and optimizer.dynamic is False and scale(optimizer) == 256.0",
        "'loss_scale' not in globals_",
    ]),
    "MP401/policy_loss_scale_fit": ("ImportError", [
        "isinstance(model.optimizer, LSO) and model.optimizer.dynamic is False and scale(model.optimizer) == 1024.0",
    ]),
    "MP401/positional_loss_scale": ("AttributeError", [
        "isinstance(optimizer, LSO) and int(optimizer.iterations) == 1",
    ]),
    "MP401/stable_api_loss_scale": ("TypeError", [
        "isinstance(optimizer, LSO) and model.layers[0].compute_dtype == 'float16'",
    ]),
    "MP401/stable_api_loss_scale_keras2": ("TypeError", [
        "isinstance(optimizer, LSO) and model.layers[0].compute_dtype == 'float16'",
    ]),
    "MP401/bare_except_that_only_passes": (None, ["policy() == 'mixed_float16'"]),
    "MP401/string_version_check": ("AttributeError", [
        "model.layers[0].compute_dtype == 'float16'",
    ]),
    "MP403/legacy_optimizer_keras2": (None, [
        "isinstance(opt, LSO) and model.layers[0].compute_dtype == 'float16'",
        "int(opt.iterations) == 1",
    ]),
    "MP403/api_page_tf115": ("AttributeError", [
        "isinstance(opt, LSO) and model.layers[0].compute_dtype == 'float16'",
    ]),
    "MP403/api_page_tf115_keras3": ("AttributeError", [
        "isinstance(opt, LSO) and model.layers[0].compute_dtype == 'float16'",
    ]),
    "MP403/compat_v1_fixed_scale": ("ValueError", [
        "isinstance(model.optimizer, LSO) and scale(model.optimizer) == 128.0",
    ]),
    "MP403/env_var": (None, [
        "model.layers[0].compute_dtype == 'float16' and isinstance(model.optimizer, LSO)",
    ]),
    "MP403/rewrite_under_flag": ("AttributeError", [
        "isinstance(model.optimizer, LSO) and model.layers[0].compute_dtype == 'float16'",
        # the policy keeps the rewrite's condition: without amp, nothing is mixed
        "fresh(main, False).layers[0].compute_dtype == 'float32'",
    ]),
    "MP403/rewrite_under_module_flag": ("AttributeError", [
        "isinstance(model.optimizer, LSO) and model.layers[0].compute_dtype == 'float16'",
    ]),
    "MP403/env_var_conditional_value": (None, [
        "model.layers[0].compute_dtype == 'float16' and isinstance(model.optimizer, LSO)",
        "fresh(main, []).layers[0].compute_dtype == 'float32'",  # no --amp: no mixed policy
    ]),
    "MP403/notebook_switch_before_import": (None, [
        "policy() == 'mixed_float16' and isinstance(model.optimizer, LSO)",
    ]),
    "MP403/rewrite_under_a_flag_parsed_in_the_function": ("AttributeError", [
        "isinstance(model.optimizer, LSO) and model.layers[0].compute_dtype == 'float16'",
        "fresh(main, ['--fp32']).layers[0].compute_dtype == 'float32'",
    ]),
    "MP403/rewrite_under_a_params_lookup": ("AttributeError", [
        "isinstance(model.optimizer, LSO) and model.layers[0].compute_dtype == 'float16'",
    ]),
    "MP403/env_var_in_a_keras_script_that_configures_its_session": (None, [
        "model.layers[0].compute_dtype == 'float16'",
    ]),
    "MP403/env_var_beside_the_graph_rewrite": ("ValueError", [
        "policy() == 'mixed_float16' and isinstance(optimizer, LSO)",
    ]),
    "MP403/env_var_beside_the_policy": (None, [
        "len(predict(lambda: tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)]), "
        "[tf.zeros((1, 2))], mixed=True)) == 1 and policy() == 'mixed_float16'",
    ]),
    "MP401/unused_loss_scale_under_if": ("AttributeError", ["'loss_scale' not in globals_ and policy() == 'mixed_float16'"]),
    "MP404/keras2_api_under_keras3": ("AttributeError", ["int(optimizer.iterations) == 1"]),
    "MP404/clip_global_norm_keras3": (None, ["step(train_step) and optimizer.inner_optimizer.global_clipnorm == 0.5"]),
    "MP404/clip_by_norm_keras3": (None, ["step(train_step) and optimizer.inner_optimizer.clipnorm == 0.25"]),
    "MP404/unscale_only_statement_of_if": (None, ["step(train_step) and int(optimizer.iterations) == 1"]),
    "MP404/unscale_if_with_comment": (None, ["step(train_step) and int(optimizer.iterations) == 1"]),
    "MP404/unscale_under_call_test": (None, ["step(train_step) and calls == [1]"]),
    "MP404/unscale_in_conditional_expression": (None, ["step_function_applies(model_step, True)",
                                                       "step_function_applies(model_step, False)"]),
    "MP404/two_groups_one_if": (None, ["wide_and_deep_applies(Trainer, True)", "wide_and_deep_applies(Trainer, False)"]),
    # the gradients it returns are those of the loss times the LossScaleOptimizer's scale
    "MP404/scaled_loss_gradients_leave": (None, ["gradients_times_scale(scaled_gradients)"]),
    "MP404/keras3_api_under_keras2": ("AttributeError", ["int(model.optimizer.iterations) == 1"]),
    "MP404/dynamic_false_keras3": ("ValueError", ["isinstance(optimizer, LSO) and scale(optimizer) == 1024.0"]),
    "combined/graph_rewrite_loop_to_keras3": ("AttributeError", [
        "isinstance(optimizer, LSO) and model.layers[0].compute_dtype == 'float16'",
        "int(optimizer.iterations) == 1",
    ]),
    "combined/env_var_loop_to_keras2": (None, [
        "isinstance(optimizer, LSO) and model.layers[0].compute_dtype == 'float16'",
        "int(optimizer.iterations) == 1",
    ]),
}
# What the originals that do not fail get wrong (checked on the original run).
ORIGINAL_CHECKS = {
    # the rewrite runs with a Keras 2 legacy optimizer, and the layers stay float32
    "MP403/legacy_optimizer_keras2": ["model.layers[0].compute_dtype == 'float32'"],
    "MP403/env_var": ["model.layers[0].compute_dtype == 'float32' and not isinstance(model.optimizer, LSO)"],
    # the removed API fails and `except: pass` hides it: the policy silently stays float32
    "MP401/bare_except_that_only_passes": ["policy() == 'float32'"],
    "MP403/env_var_conditional_value": ["model.layers[0].compute_dtype == 'float32'"],
    "MP403/notebook_switch_before_import": ["policy() == 'float32'"],
    # Keras 2 calls in a Keras 3 loop: the step fails when it runs
    "MP404/scaled_loss_gradients_leave": ["raises(AttributeError, gradients_times_scale, scaled_gradients)"],
    "MP404/unscale_in_conditional_expression": ["raises(AttributeError, step_function_applies, model_step, True)"],
    "MP404/two_groups_one_if": ["raises(AttributeError, wide_and_deep_applies, Trainer, True)"],
    **{case: ["raises(AttributeError, step, train_step)"] for case in (
        "MP404/clip_global_norm_keras3", "MP404/clip_by_norm_keras3", "MP404/unscale_only_statement_of_if",
        "MP404/unscale_if_with_comment", "MP404/unscale_under_call_test")},
    "combined/env_var_loop_to_keras2": ["model.layers[0].compute_dtype == 'float32' and not isinstance(optimizer, LSO)"],
}

PROBE = '''
import os
import tensorflow as tf

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras
    LSO = keras.mixed_precision.LossScaleOptimizer

    def scale(opt):
        return float(opt.loss_scale)
else:
    import keras
    LSO = keras.optimizers.LossScaleOptimizer

    def scale(opt):
        return float(opt.scale_loss(1.0))


def step(train_step):
    import numpy as np
    train_step(np.random.rand(8, 4).astype("float32"), np.random.randint(0, 3, size=(8,)))
    return True


def gradients_times_scale(function):
    """`function(model, optimizer, loss_fn, x, y)` returns the gradients of the loss times
    the LossScaleOptimizer's loss scale."""
    import numpy as np
    import tensorflow as tf

    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3)])
    optimizer = LSO(keras.optimizers.SGD(0.1))
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = np.random.rand(8, 4).astype("float32"), np.arange(8) % 3
    got = function(model, optimizer, loss_fn, x, y)
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x))
    want = tape.gradient(loss, model.trainable_variables)
    return all(np.allclose(g, w * scale(optimizer), rtol=1e-4) for g, w in zip(got, want))


def _optimizer(amp):
    return LSO(keras.optimizers.SGD(0.1)) if amp else keras.optimizers.SGD(0.1)


def step_function_applies(model_step, amp):
    """`model_step(batch, model, model_fn, optimizer, amp)` trains one step."""
    import numpy as np

    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3)])
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = np.random.rand(8, 4).astype("float32"), np.arange(8) % 3
    optimizer = _optimizer(amp)
    model_step(None, model, lambda batch, training: loss_fn(y, model(x, training=training)), optimizer, amp)
    return int(optimizer.iterations) == 1


def wide_and_deep_applies(trainer_class, amp):
    """A two-optimizer trainer (`Trainer(model, wide, deep, amp)._step(x, y)`) applies both."""
    import numpy as np

    x, y = np.random.rand(8, 4).astype("float32"), np.arange(8) % 3
    linear, deep = keras.layers.Dense(3), keras.layers.Dense(3)
    linear(x), deep(x)

    class Model:
        linear_model, dnn_model = linear, deep
        compiled_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        def __call__(self, inputs, training=False):
            return linear(inputs) + deep(inputs)

    wide_optimizer, deep_optimizer = _optimizer(amp), _optimizer(amp)
    trainer_class(Model(), wide_optimizer, deep_optimizer, amp)._step(x, y)
    return int(wide_optimizer.iterations) == 1 and int(deep_optimizer.iterations) == 1


def fresh(function, *args):
    """Call `function` with the global policy back to float32 (as in a new process)."""
    keras.mixed_precision.set_global_policy("float32")
    return function(*args)


def policy():
    return keras.mixed_precision.global_policy().name


def raises(kind, function, *args):
    try:
        function(*args)
    except kind:
        return True
    return False


def run(job):
    keras.backend.clear_session()
    tf.compat.v1.mixed_precision.disable_mixed_precision_graph_rewrite()
    keras.mixed_precision.set_global_policy("float32")
    os.environ.pop("TF_ENABLE_AUTO_MIXED_PRECISION", None)
    keras.utils.set_random_seed(0)
    namespace = {"__name__": "fixture"}
    try:
        exec(compile(job["source"], job["id"], "exec"), namespace)
    except Exception as exc:
        kinds = [c.__name__ for c in type(exc).__mro__]
        return {"id": job["id"], "error": kinds, "message": str(exc)[:300], "checks": []}
    env = dict(namespace, LSO=LSO, scale=scale, globals_=namespace, step=step, raises=raises, fresh=fresh, policy=policy,
               gradients_times_scale=gradients_times_scale, step_function_applies=step_function_applies,
               wide_and_deep_applies=wide_and_deep_applies)
    checks = []
    for check in job["checks"]:
        try:
            checks.append([check, bool(eval(check, env))])
        except Exception as exc:
            checks.append([check, f"{type(exc).__name__}: {exc}"])
    return {"id": job["id"], "error": None, "message": "", "checks": checks}


emit([run(job) for job in JOBS])
'''


def _case(case_id: str):
    code, name = case_id.split("/")
    (case,) = [c for c in cases(code) if c.name == name]
    return case


def _code(path) -> str:
    """A fixture's Python: a notebook's code cells, one after the other."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return text
    return "\n".join("".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "code")


def _keras(case_id: str) -> int:
    return 2 if _case(case_id).options().get("target") == "keras2" else 3


def _run(keras: int) -> dict[str, dict]:
    jobs = []
    for case_id, (_, checks) in MIGRATIONS.items():
        if _keras(case_id) != keras:
            continue
        case = _case(case_id)
        assert case.fixed_path.exists(), f"{case_id}: no fixed output"
        jobs.append({"id": case_id + ":original", "source": _code(case.input), "checks": ORIGINAL_CHECKS.get(case_id, [])})
        jobs.append({"id": case_id + ":fixed", "source": _code(case.fixed_path), "checks": checks})
    (results,) = run_tf(f"JOBS = {jobs!r}\n" + PROBE, keras=keras)
    return {r["id"]: r for r in results}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    return {**_run(3), **_run(2)}


@pytest.mark.parametrize("case_id", sorted(MIGRATIONS))
def test_original_fails_as_it_does_today(runs, case_id):
    original = runs[case_id + ":original"]
    expected, _ = MIGRATIONS[case_id]
    if expected is None:
        assert original["error"] is None, original["message"]
    else:  # the exception or a subclass of it (ModuleNotFoundError is an ImportError)
        assert original["error"] is not None and expected in original["error"], original["message"]
    for check, result in original["checks"]:
        assert result is True, f"original: {check}: {result}"


@pytest.mark.parametrize("case_id", sorted(MIGRATIONS))
def test_fixed_fixture_runs_a_training_step(runs, case_id):
    fixed = runs[case_id + ":fixed"]
    assert fixed["error"] is None, f"{fixed['error']}: {fixed['message']}"
    assert len(fixed["checks"]) == len(MIGRATIONS[case_id][1])
    for check, result in fixed["checks"]:
        assert result is True, f"{check}: {result}"


def test_every_migration_fixture_with_a_fix_is_run():
    fixed = {c.id for code in ("MP401", "MP403", "MP404") for c in cases(code) if c.fixed_path.exists()}
    assert fixed <= set(MIGRATIONS), sorted(fixed - set(MIGRATIONS))
