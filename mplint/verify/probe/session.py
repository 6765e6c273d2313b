"""One verification, inside the child: import, build, run the checks, report each."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from . import tensors
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


def _import_backend(backend: str) -> str:
    """Keras 3 on `backend` (jax, torch): its version, or why it cannot run."""
    try:
        import keras
    except BaseException as exc:
        raise ProbeError("no-keras", f"{sys.executable} cannot import Keras ({describe(exc)}): "
                         f"pip install 'mplint[{backend}]' there, or pass --python") from None
    running = getattr(getattr(keras, "backend", None), "backend", lambda: "tensorflow")()
    if running != backend:
        raise ProbeError("no-backend", f"Keras {getattr(keras, '__version__', '?')} runs on {running}, not {backend}: "
                         "the --backend option needs Keras 3")
    try:
        module = __import__(backend)
    except BaseException as exc:
        raise ProbeError(f"no-{backend}", f"{sys.executable} cannot import {backend} ({describe(exc)}): "
                         f"pip install 'mplint[{backend}]' there, or pass --python") from None
    return str(getattr(module, "__version__", "unknown"))


def run(request: dict, channel: Channel) -> None:
    backend = tensors.backend()
    if tensors.uses_tensorflow():
        channel.stage("importing TensorFlow")
        tf = _import_tensorflow()
        backend_version = tf.__version__
    else:
        channel.stage(f"importing Keras with the {backend} backend")
        backend_version = _import_backend(backend)

    default = _default_keras()
    preset = request.get("policy") or DEFAULT_POLICY
    default.set_global_policy(preset)
    preset_policy = default.global_policy()
    if tensors.uses_tensorflow():
        tf.config.run_functions_eagerly(True)
    tensors.set_seeds(0)
    set_random_seed = getattr(getattr(default.module, "utils", None), "set_random_seed", None)
    if set_random_seed is not None:  # the same initial weights on every run
        set_random_seed(0)

    from .loading import find_model, find_train_step, import_target, model_for_train_step

    display = request["display"]
    channel.stage(f"importing {display}")
    module = import_target(request)
    channel.stage(f"looking for a model in {display}")
    on_call = lambda name: channel.stage(f"building the model with {name}()")  # noqa: E731
    train_step, step_name = find_train_step(module, request)
    try:
        model, entry = find_model(module, request, on_call=on_call)
    except ProbeError as exc:
        # A training script: the step is here, the model is built elsewhere (imported).
        if exc.kind != "no-model" or train_step is None or request.get("attribute"):
            raise
        model, entry = model_for_train_step(module, train_step, step_name, on_call=on_call)
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
    channel.send(
        "info", entry_point=entry, policy=policy, policy_source=source, global_policy=global_name,
        keras=str(api.major), keras_version=api.version, backend=backend, backend_version=backend_version,
        tensorflow=backend_version if tensors.uses_tensorflow() else None,
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
    from .data import inputs_from_file, synthetic_inputs

    rng = np.random.default_rng(0)
    batch, batch_note = _batch(request, model)
    if request.get("inputs_file"):
        inputs, descriptions = inputs_from_file(model, request["inputs_file"])
    else:
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
        from .updates import compare_updates

        _emit(channel, "loss-scaling", not_float16(policy))
        _emit(channel, "gradient-underflow", check_gradient_underflow(policy, None, None))
        if not tensors.uses_tensorflow():
            _emit(channel, "training-update", compare_updates(policy, None, None))
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


@dataclass
class _Loop:
    """A custom training step and what it trains: the models it uses, their optimizers,
    a synthetic batch for the first model, and how the call reads."""

    models: list
    optimizers: list
    x: object
    outputs: object
    kinds: list
    what: str
    call_with: object  # y -> a function running one step


def _loop(request, module, model, api, train_step, step_name, forward, rng) -> _Loop:
    from .data import synthetic_inputs
    from .loading import referenced_globals, step_arguments
    from .training import find_optimizers

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
    _, shape = step_arguments(train_step, loop_model, optimizers, "x", "y")

    def call_with(y):
        return lambda: train_step(*step_arguments(train_step, loop_model, optimizers, x, y)[0])

    return _Loop(models, optimizers, x, outputs, _ordered(_loss_kinds_from(api, used)), f"{step_name}{shape}", call_with)


def _custom_loop(request, channel, module, model, api, policy, train_step, step_name, forward, rng) -> None:
    """The module's own training step: measured from the tape and the optimizer on
    TensorFlow, from its weight update against float32's on JAX and torch (updates.py)."""
    from . import updates
    from .loading import python_function
    from .scaling import check_gradient_underflow, check_loss_scaling_custom, measured_step
    from .training import observe_steps

    loop = _loop(request, module, model, api, train_step, step_name, forward, rng)
    steps = max(int(request.get("steps") or 3), 1)
    on_tensorflow = tensors.uses_tensorflow()
    measure = observe_steps if on_tensorflow else updates.measure_step
    channel.stage(f"running {loop.what} on synthetic batches under {policy}")
    mixed, y = _try_targets(
        loop.kinds, loop.outputs, rng,
        lambda y: measure(loop.call_with(y), api, loop.models, loop.optimizers, steps), loop.what,
    )
    channel.stage(f"running {loop.what} under the float32 policy (reference)")
    if on_tensorflow:
        reference = _reference(loop.call_with(y), api, loop.models, loop.optimizers)
        step = measured_step(mixed)
        _emit(channel, "loss-scaling", check_loss_scaling_custom(policy, step, reference, api.major, loop.what))
        _emit(channel, "gradient-underflow", check_gradient_underflow(policy, step, reference))
        return
    namespaces = [vars(module), getattr(python_function(train_step), "__globals__", {})]
    try:
        reference = updates.reference_step(loop.call_with(y), api, loop.models, loop.optimizers, namespaces)
    except Exception:
        reference = None
    _emit(channel, "loss-scaling", updates.check_loss_scaling_loop(policy, api, loop.optimizers, mixed, loop.what))
    _emit(channel, "gradient-underflow", _not_observed())
    _emit(channel, "training-update", updates.compare_updates(policy, mixed, reference, f"one {loop.what} step"))


def _reference(step, api, models, optimizers):
    from .training import observe_steps

    try:
        with float32_policies(api, models):
            return observe_steps(step, api, models, optimizers, 1)[0]
    except Exception:
        return None


def _compile_if_needed(model) -> bool:
    """Compile an uncompiled model (Adam, MSE) so it can train; whether the verifier did."""
    compiled_by_verifier = getattr(model, "optimizer", None) is None
    if compiled_by_verifier:
        model.compile(optimizer="adam", loss="mse")
    return compiled_by_verifier


def _target_kinds(model, forward) -> list:
    """The kinds of synthetic targets to try, from the compiled loss(es)."""
    from .data import loss_kind

    loss = getattr(model, "loss", None)
    if isinstance(loss, dict):
        return [[loss_kind(loss.get(name)) for name in forward.names]]
    if isinstance(loss, (list, tuple)) and len(loss) == len(forward.names):
        return [[loss_kind(l) for l in loss]]
    return _ordered([loss_kind(loss)])


FIT = "model.fit(x, y)"  # one step on one batch: train_step gets exactly what fit passes


def _fit_style(request, channel, model, api, policy, forward, rng) -> None:
    """The model trained by `fit`: measured from the tape and the optimizer on TensorFlow,
    from one step's weight update against float32's on JAX and torch (updates.py)."""
    from . import updates
    from .scaling import check_gradient_underflow, check_loss_scaling_fit, measured_step
    from .training import find_optimizers, observe_steps

    compiled_by_verifier = _compile_if_needed(model)
    steps = max(int(request.get("steps") or 3), 1)
    x = forward.inputs
    on_tensorflow = tensors.uses_tensorflow()
    optimizers = find_optimizers(api, [model.optimizer])

    def measure(y):
        if on_tensorflow:
            return observe_steps(lambda: updates.fit_once(model, x, y), api, [model], optimizers, steps)
        return updates.measure_fit_step(model, x, y, api, steps)

    channel.stage(f"running {FIT} on synthetic batches under {policy}")
    mixed, y = _try_targets(_target_kinds(model, forward), forward.outputs, rng, measure, FIT)
    channel.stage(f"running {FIT} under the float32 policy (reference)")
    if on_tensorflow:
        reference = _reference(lambda: updates.fit_once(model, x, y), api, [model], optimizers)
        step = measured_step(mixed)
        _emit(channel, "loss-scaling", check_loss_scaling_fit(policy, model, api, compiled_by_verifier, step, reference))
        _emit(channel, "gradient-underflow", check_gradient_underflow(policy, step, reference))
        return
    try:
        reference = updates.reference_fit_step(model, x, y, api)
    except Exception:
        reference = None
    _emit(channel, "loss-scaling", updates.check_loss_scaling_update(policy, api, model, compiled_by_verifier, mixed))
    _emit(channel, "gradient-underflow", _not_observed())
    _emit(channel, "training-update", updates.compare_updates(policy, mixed, reference))


def _not_observed():
    from .checks import Result

    why = " (JAX traces them inside jit and cond)" if tensors.backend() == "jax" else ""
    return Result("skip", f"the gradients the optimizer receives are not observed on {tensors.backend()}{why}; "
                  "training-update compares the step's result with float32 instead")
