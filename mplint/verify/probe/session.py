"""One verification, inside the child: import, build, run the checks, report each."""

from __future__ import annotations

import os
import sys

from .channel import Channel
from .errors import ProbeError, describe, user_traceback
from .kerasapi import MIXED, KerasAPI, default_keras, float32_policies, is_keras_model

DEFAULT_POLICY = "mixed_float16"


def _import_tensorflow():
    try:
        import tensorflow as tf
    except BaseException as exc:
        raise ProbeError(
            "no-tensorflow",
            f"{sys.executable} cannot import TensorFlow ({describe(exc)}): install TensorFlow there, "
            "or pass --python with an interpreter that has it",
        ) from None
    return tf


def _default_keras() -> KerasAPI:
    try:
        return KerasAPI(default_keras())
    except BaseException as exc:
        legacy = os.environ.get("TF_USE_LEGACY_KERAS", "")
        hint = (
            "Keras 2 was asked for (TF_USE_LEGACY_KERAS=1) but tf-keras is not importable: "
            "`pip install tf-keras`, or pass --keras 3"
            if legacy.lower() in ("1", "true") else "Keras is not importable"
        )
        raise ProbeError("no-keras", f"{hint} ({describe(exc)})") from None


def _family(module) -> str:
    return module.__name__.split(".")[0]


def model_policy(api: KerasAPI, model) -> str:
    """The mixed policy the model's layers run under (the most common), else the global one."""
    counts: dict[str, int] = {}
    for layer in api.layers(model):
        name = api.policy_name(layer)
        if name in MIXED:
            counts[name] = counts.get(name, 0) + 1
    if counts:
        return max(sorted(counts), key=lambda n: counts[n])
    return api.policy_name(api.global_policy())


def run(request: dict, channel: Channel) -> None:
    channel.stage("importing TensorFlow")
    tf = _import_tensorflow()
    import numpy as np

    default = _default_keras()
    preset = request.get("policy") or DEFAULT_POLICY
    default.set_global_policy(preset)
    preset_policy = default.global_policy()
    tf.config.run_functions_eagerly(True)
    tf.random.set_seed(0)
    np.random.seed(0)
    set_random_seed = getattr(getattr(default.module, "utils", None), "set_random_seed", None)
    if set_random_seed is not None:  # the same initial weights on every run
        set_random_seed(0)

    from .loading import find_model, find_train_step, import_target

    display = request["display"]
    channel.stage(f"importing {display}")
    module = import_target(request)
    channel.stage(f"looking for a model in {display}")
    model, entry = find_model(module, request, on_call=lambda name: channel.stage(f"building the model with {name}()"))
    api = KerasAPI.for_model(model)
    global_now = api.global_policy()
    policy = model_policy(api, model)
    global_name = api.policy_name(global_now)
    if policy != global_name and policy in MIXED:
        source = f"the layers' dtype= arguments; global policy {global_name}"
    elif _family(api.module) == _family(default.module) and global_now is not preset_policy:
        source = "set by the code"
    elif request.get("policy"):
        source = "--policy"
    else:
        source = "default"
    notes = []
    if policy not in MIXED:
        notes.append(
            f"no layer of the model runs under a mixed policy (global policy {global_name}); "
            "was the policy set after the layers were built?"
        )
    train_step, step_name = find_train_step(module, request)
    channel.send(
        "info", entry_point=entry, policy=policy, policy_source=source, global_policy=global_name,
        keras=str(api.major), keras_version=api.version, tensorflow=tf.__version__,
        train_step=step_name, notes=notes, python=sys.executable,
    )
    _run_checks(request, channel, module, model, api, policy, train_step, step_name)


def _emit(channel: Channel, name: str, result) -> None:
    channel.check(name, result.status, result.detail, result.measured)


def _guarded(name: str, function, *args):
    try:
        return function(*args)
    except ProbeError:
        raise
    except Exception as exc:
        raise ProbeError(
            "check-error", f"check {name} could not run: {describe(exc)}", user_traceback(exc)
        ) from None


def _batch(request: dict, model) -> tuple:
    from .data import DEFAULT_BATCH, fixed_batch_size

    if request.get("batch_size"):
        return request["batch_size"], f"batch {request['batch_size']} from --batch-size"
    fixed = fixed_batch_size(model)
    if fixed:
        return fixed, f"batch {fixed} fixed by the model's Input"
    return DEFAULT_BATCH, f"synthetic batch {DEFAULT_BATCH}: pass --batch-size to check your training batch"


def _run_checks(request, channel, module, model, api, policy, train_step, step_name) -> None:
    import numpy as np

    from . import checks
    from .data import synthetic_inputs

    rng = np.random.default_rng(0)
    batch, batch_note = _batch(request, model)
    inputs, descriptions = synthetic_inputs(model, api, batch, rng)
    channel.stage("running the model on synthetic inputs")
    try:
        forward = checks.run_forward(model, api, policy, inputs)
    except Exception as exc:
        raise ProbeError(
            "model-error", f"calling the model on synthetic inputs ({'; '.join(descriptions)}) raised {describe(exc)}",
            user_traceback(exc),
        ) from None
    _emit(channel, "output-dtype", _guarded("output-dtype", checks.check_output_dtype, forward))
    _emit(channel, "variable-dtype", _guarded("variable-dtype", checks.check_variable_dtype, forward))
    _emit(channel, "finite-forward", _guarded("finite-forward", checks.check_finite_forward, forward, descriptions))
    channel.stage("running the same weights under the float32 policy")
    _emit(channel, "float32-agreement", _guarded("float32-agreement", checks.check_float32_agreement, forward))
    from .tensorcores import TENSOR_CORE_MULTIPLE, check_tensor_cores

    multiple = int(request.get("tensor_core_multiple") or TENSOR_CORE_MULTIPLE)
    _emit(channel, "tensor-cores", _guarded("tensor-cores", check_tensor_cores, forward, multiple, batch_note))
    if policy not in MIXED:
        from .scaling import check_gradient_underflow, not_float16

        _emit(channel, "loss-scaling", not_float16(policy))
        _emit(channel, "gradient-underflow", check_gradient_underflow(policy, None, None))
        return
    if train_step is not None:
        _custom_loop(request, channel, module, model, api, policy, train_step, step_name, forward, rng)
    else:
        _fit_style(request, channel, model, api, policy, forward, rng)


def _loss_kinds_from(api: KerasAPI, candidates) -> list:
    from .data import loss_kind

    kinds = []
    for obj in candidates:
        module = getattr(obj, "__module__", "") or ""
        if api.is_loss_object(obj) or (callable(obj) and ".losses" in module and not isinstance(obj, type)):
            kind = loss_kind(obj)
            if kind not in kinds:
                kinds.append(kind)
    return kinds


def _try_targets(kinds: list, outputs, rng, attempt, what: str):
    """Run `attempt(y)` with synthetic targets of each kind until one works."""
    from .data import synthetic_targets

    failures = []
    for kind in kinds:
        y = synthetic_targets(outputs, kind, rng)
        try:
            return attempt(y), y
        except ProbeError:
            raise
        except SystemExit as exc:
            raise ProbeError("user-exit", f"{what} called sys.exit({exc.code!r})", user_traceback(exc)) from None
        except Exception as exc:
            failures.append((kind, exc))
    kind, exc = failures[-1]
    tried = ", ".join(f"{k} targets: {describe(e)}" for k, e in failures)
    raise ProbeError("train-step-error", f"{what} raised on synthetic data ({tried})", user_traceback(exc))


def _ordered(kinds: list) -> list:
    return kinds + [k for k in ("dense", "sparse", "categorical") if k not in kinds]


def _custom_loop(request, channel, module, model, api, policy, train_step, step_name, forward, rng) -> None:
    from .data import synthetic_inputs
    from .loading import referenced_globals
    from .scaling import check_gradient_underflow, check_loss_scaling_custom, measured_step
    from .training import find_optimizers, observe_steps

    used = referenced_globals(train_step)
    loop_models = [obj for obj in used if is_keras_model(obj)] or [model]
    loop_model = loop_models[0]
    models = loop_models + ([model] if all(m is not model for m in loop_models) else [])
    if loop_model is model:
        x, outputs = forward.inputs, forward.outputs
    else:
        from .data import fixed_batch_size

        x, _ = synthetic_inputs(loop_model, api, request.get("batch_size") or fixed_batch_size(loop_model) or 8, rng)
        outputs = loop_model(x, training=False)
    candidates = used + [getattr(m, "optimizer", None) for m in models] + list(vars(module).values())
    optimizers = find_optimizers(api, candidates)
    steps = max(int(request.get("steps") or 3), 1)
    what = f"{step_name}(x, y)"
    channel.stage(f"running {what} on synthetic batches under {policy}")
    mixed, y = _try_targets(
        _ordered(_loss_kinds_from(api, used)), outputs, rng,
        lambda y: observe_steps(lambda: train_step(x, y), api, models, optimizers, steps), what,
    )
    channel.stage(f"running {what} under the float32 policy (reference)")
    reference = _reference(lambda: train_step(x, y), api, models, optimizers)
    step = measured_step(mixed)
    _emit(channel, "loss-scaling", check_loss_scaling_custom(policy, step, reference, api.major, what))
    _emit(channel, "gradient-underflow", check_gradient_underflow(policy, step, reference))


def _reference(step, api, models, optimizers):
    from .training import observe_steps

    try:
        with float32_policies(api, models):
            return observe_steps(step, api, models, optimizers, 1)[0]
    except Exception:
        return None


def _fit_style(request, channel, model, api, policy, forward, rng) -> None:
    from .data import loss_kind
    from .scaling import check_gradient_underflow, check_loss_scaling_fit, measured_step
    from .training import find_optimizers, observe_steps

    compiled_by_verifier = getattr(model, "optimizer", None) is None
    if compiled_by_verifier:
        model.compile(optimizer="adam", loss="mse")
    loss = getattr(model, "loss", None)
    if isinstance(loss, dict):
        kinds_per_output = [loss_kind(loss.get(name)) for name in forward.names]
        kinds = [kinds_per_output]
    elif isinstance(loss, (list, tuple)) and len(loss) == len(forward.names):
        kinds = [[loss_kind(l) for l in loss]]
    else:
        kinds = _ordered([loss_kind(loss)])
    optimizers = find_optimizers(api, [model.optimizer])
    steps = max(int(request.get("steps") or 3), 1)
    channel.stage(f"running model.train_on_batch on synthetic batches under {policy}")
    x = forward.inputs
    mixed, y = _try_targets(
        kinds, forward.outputs, rng,
        lambda y: observe_steps(lambda: model.train_on_batch(x, y), api, [model], optimizers, steps),
        "model.train_on_batch(x, y)",
    )
    channel.stage("running model.train_on_batch under the float32 policy (reference)")
    reference = _reference(lambda: model.train_on_batch(x, y), api, [model], optimizers)
    step = measured_step(mixed)
    _emit(channel, "loss-scaling", check_loss_scaling_fit(policy, model, api, compiled_by_verifier, step, reference))
    _emit(channel, "gradient-underflow", check_gradient_underflow(policy, step, reference))
