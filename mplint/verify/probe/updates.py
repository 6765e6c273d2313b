"""One training step, measured by what it does to the weights: for Keras 3 on JAX and torch,
where the gradients a LossScaleOptimizer receives are not observable (on JAX they are
traced values inside `jit` and `cond`).

The step runs the way users train, `fit` on one batch, from the model's weights; the
reference is the same step from the same weights with every layer under the float32
policy and the optimizer without loss scaling (a fresh copy of the inner optimizer: the
float32 training the code means). A step the LossScaleOptimizer skips (non-finite
gradients: it lowers its scale) is retried, up to `steps` times.

    training-update  the mixed step's update agrees with the float32 one (size and values)
    loss-scaling     model.optimizer is a LossScaleOptimizer and the step calls its
                     `scale_loss` (the update says whether the rest is right)
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .checks import Result
from .kerasapi import KerasAPI, float32_policies
from .patching import wrapped_methods
from .tensors import backend, flatten, to_numpy
from .training import random_layers_off, scalar

# A correct mixed-precision step lands within a few float16 roundings of float32's; a
# missing loss scale is off by the scale (2**15), or, with Adam, by tens of percent.
TOLERANCE = {"float16": 0.1, "bfloat16": 0.2}
MAX_RATIO = 1.25


@dataclass
class UpdateObservation:
    update: list = field(default_factory=list)  # per trainable variable: weights after - before
    loss: float | None = None  # the loss fit logged for the step
    scale_loss_calls: int = 0  # calls of the LossScaleOptimizer's scale_loss during the step
    loss_scale: float | None = None  # its scale when the applied step began
    skipped: int = 0  # earlier steps that changed nothing (non-finite gradients)

    @property
    def moved(self) -> bool:
        return any(np.any(u != 0) for u in self.update)


def _weights(models: list) -> list:
    return [to_numpy(v) for m in models for v in m.trainable_variables]


def _restore(models: list, values: list) -> None:
    variables = [v for m in models for v in m.trainable_variables]
    for variable, value in zip(variables, values):
        variable.assign(value.astype(to_numpy(variable, None).dtype))


def fit_once(model, x, y) -> float | None:
    """One `fit` step on the whole batch (what `fit` hands train_step: `(x, y)`), and the
    loss the step returned (TensorFlow, torch: read from what train_step returns, since
    fit's logs show the loss metric, which a custom step may leave at 0; JAX: fit's logs,
    the step's own values are traced)."""
    returned: list = []

    def capturing(original):
        def train_step(*args, **kwargs):
            logs = original(*args, **kwargs)
            returned.append(logs)
            return logs

        return train_step

    capture = backend() != "jax"
    if capture:
        # A train function built by an earlier fit calls the train_step it was built
        # with, which would capture into that call's list: every later step would read
        # fit's logs instead (0 for a custom step's loss).
        _retrace([model])
    with wrapped_methods([model] if capture else [], "train_step", capturing):
        batch = int(np.shape(flatten(x)[0])[0])
        history = model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)
    if capture:
        _retrace([model])  # not the wrapper, now gone
    loss = scalar(returned[-1]) if returned else None
    if loss is None:
        losses = history.history.get("loss") or [None]
        loss = None if losses[0] is None else float(losses[0])
    return loss


def _counting_scale_loss(api: KerasAPI, optimizers: list, observation: UpdateObservation):
    def counting(original):
        def scale_loss(*args, **kwargs):
            observation.scale_loss_calls += 1  # at trace time under jit: once per compiled step
            return original(*args, **kwargs)

        return scale_loss

    return wrapped_methods([o for o in optimizers if api.is_loss_scale_optimizer(o)], "scale_loss", counting)


def measure_step(step, api: KerasAPI, models: list, optimizers: list, steps: int) -> UpdateObservation:
    """The first run of `step()` (of at most `steps`) that changes the models' weights;
    the weights are put back afterwards."""
    start = _weights(models)
    observation = UpdateObservation()
    scaled = [o for o in optimizers if api.is_loss_scale_optimizer(o)]
    try:
        with random_layers_off(api, models):
            for attempt in range(max(steps, 1)):
                before = _weights(models)
                observation.loss_scale = api.loss_scale(scaled[0]) if scaled else None
                with _counting_scale_loss(api, optimizers, observation):
                    observation.loss = scalar(step())
                observation.update = [a - b for a, b in zip(_weights(models), before)]
                if observation.moved:
                    observation.skipped = attempt
                    break
    finally:
        _restore(models, start)
    return observation


def measure_fit_step(model, x, y, api: KerasAPI, steps: int) -> UpdateObservation:
    return measure_step(lambda: fit_once(model, x, y), api, [model], [model.optimizer], steps)


def _fresh_unscaled(api: KerasAPI, optimizer):
    inner = api.inner_optimizer(optimizer) if api.is_loss_scale_optimizer(optimizer) else optimizer
    return type(inner).from_config(inner.get_config())


@contextmanager
def _unscaled_optimizers(api: KerasAPI, models: list, optimizers: list, namespaces: list):
    """Each optimizer replaced by a fresh copy of its inner optimizer (no loss scaling,
    no state yet), wherever the step finds it: `model.optimizer`, module globals."""
    fresh = {id(o): _fresh_unscaled(api, o) for o in optimizers}
    swapped = []  # (owner, key or attribute, original, is_mapping)
    for model in models:
        original = getattr(model, "optimizer", None)
        if original is not None and id(original) in fresh:
            model.optimizer = fresh[id(original)]
            swapped.append((model, "optimizer", original, False))
    for namespace in namespaces:
        for name, value in list(namespace.items()):
            if id(value) in fresh and value is not fresh[id(value)]:
                namespace[name] = fresh[id(value)]
                swapped.append((namespace, name, value, True))
    _retrace(models)
    try:
        yield
    finally:
        for owner, key, original, is_mapping in reversed(swapped):
            if is_mapping:
                owner[key] = original
            else:
                setattr(owner, key, original)
        _retrace(models)


def _retrace(models: list) -> None:
    """Make compiled steps trace again (they captured the optimizer they were built with)."""
    for model in models:
        if hasattr(model, "train_function"):
            model.train_function = None
    if backend() == "jax":
        import jax

        jax.clear_caches()  # jitted user steps


def reference_step(step, api: KerasAPI, models: list, optimizers: list, namespaces: list = ()) -> UpdateObservation:
    """The same step in float32 from the same weights, without loss scaling."""
    with float32_policies(api, models), _unscaled_optimizers(api, models, optimizers, list(namespaces)):
        return measure_step(step, api, models, [], 1)


def reference_fit_step(model, x, y, api: KerasAPI) -> UpdateObservation:
    return reference_step(lambda: fit_once(model, x, y), api, [model], [model.optimizer])


def compare_updates(policy: str, mixed: UpdateObservation | None, reference: UpdateObservation | None,
                    what: str = "one fit step") -> Result:
    """training-update: the mixed step's update against float32's."""
    dtype = policy.split("_", 1)[1] if policy.startswith("mixed_") else policy
    tolerance = TOLERANCE.get(dtype)
    if tolerance is None:
        return Result("n/a", f"policy {policy}: the model trains in float32")
    if reference is None or not reference.moved:
        return Result("skip", "the float32 reference step did not change the weights: nothing to compare with")
    if mixed is None:
        return Result("skip", "no training step ran")
    if not mixed.moved:
        return Result("fail", f"no {policy} step changed the weights (every step's gradients were not finite: "
                      "the LossScaleOptimizer skipped them)", {"skipped": mixed.skipped})
    a = np.concatenate([u.ravel() for u in mixed.update])
    b = np.concatenate([u.ravel() for u in reference.update])
    base = float(np.linalg.norm(b))
    ratio = float(np.linalg.norm(a)) / base
    error = float(np.linalg.norm(a - b)) / base
    measured = {"update_ratio": ratio, "update_relative_error": error, "tolerance": tolerance,
                "loss": mixed.loss, "float32_loss": reference.loss, "skipped": mixed.skipped}
    summary = (f"{what}'s update is {ratio:.4g}x the float32 step's size, relative L2 error {error:.2g} "
               f"(tolerance {tolerance:g})")
    if mixed.skipped:
        summary += f", after {mixed.skipped} skipped step(s) whose gradients were not finite"
    if error <= tolerance and 1 / MAX_RATIO <= ratio <= MAX_RATIO:
        return Result("pass", summary, measured)
    if ratio < 1e-3:
        why = ("the updates are ~1/32768 of float32's: the LossScaleOptimizer divides gradients of a loss that was "
               "never scaled; call `self.optimizer.scale_loss(loss)` in the train step (mplint check: MP206)")
    elif ratio > 1e3:
        why = "the updates are ~32768x float32's: the gradients reach the optimizer still scaled"
    else:
        why = ("the update differs from float32's: with an Adam-style optimizer a missing loss scale shrinks the "
               "updates (epsilon dominates), or a layer loses precision in " + dtype)
    return Result("fail", f"{summary}: {why}", measured)


def check_loss_scaling_update(policy: str, api: KerasAPI, model, compiled_by_verifier: bool,
                              mixed: UpdateObservation) -> Result:
    """loss-scaling on JAX/torch: a LossScaleOptimizer, and a step that calls scale_loss."""
    from .scaling import check_loss_scaling_fit, not_float16

    if policy != "mixed_float16":
        return not_float16(policy)
    optimizer = getattr(model, "optimizer", None)
    if not api.is_loss_scale_optimizer(optimizer):
        return check_loss_scaling_fit(policy, model, api, compiled_by_verifier, None, None)
    scale = f" (loss scale {mixed.loss_scale:g})" if mixed.loss_scale else ""
    measured = {"optimizer": type(optimizer).__name__, "scale_loss_calls": mixed.scale_loss_calls,
                "loss_scale": mixed.loss_scale}
    if not mixed.scale_loss_calls:
        return Result(
            "fail",
            f"model.optimizer is a LossScaleOptimizer{scale}, but the train step never calls its `scale_loss`: "
            "its apply divides never-scaled gradients by the loss scale; scale the loss in the train step "
            "(JAX: inside the differentiated function, under keras.StatelessScope; torch: before backward())",
            measured,
        )
    return Result(
        "pass",
        f"model.optimizer is a LossScaleOptimizer{scale} and the train step calls its `scale_loss` "
        "(training-update checks the step's result against float32)",
        measured,
    )


def check_loss_scaling_loop(policy: str, api: KerasAPI, optimizers: list, mixed: UpdateObservation,
                            what: str) -> Result:
    """loss-scaling of a custom step on JAX/torch: its optimizer is a LossScaleOptimizer
    and the step calls its `scale_loss`."""
    from .scaling import not_float16

    if policy != "mixed_float16":
        return not_float16(policy)
    scaled = [o for o in optimizers if api.is_loss_scale_optimizer(o)]
    if not optimizers:
        return Result("skip", f"{what}: no optimizer the verifier can see (module-level or model.optimizer)")
    if not scaled:
        return Result("fail", f"{what}: the optimizer ({type(optimizers[0]).__name__}) is not a LossScaleOptimizer: "
                      "float16 gradients can underflow to zero; wrap it in keras.optimizers.LossScaleOptimizer "
                      "and scale the loss with its scale_loss", {"optimizer": type(optimizers[0]).__name__})
    measured = {"optimizer": type(scaled[0]).__name__, "scale_loss_calls": mixed.scale_loss_calls,
                "loss_scale": mixed.loss_scale}
    if not mixed.scale_loss_calls:
        return Result("fail", f"{what}: the optimizer is a LossScaleOptimizer, but the step never calls its "
                      "`scale_loss`: its apply divides never-scaled gradients by the loss scale", measured)
    return Result("pass", f"{what}: the LossScaleOptimizer's `scale_loss` is called (training-update checks "
                  "the step's result against float32)", measured)
