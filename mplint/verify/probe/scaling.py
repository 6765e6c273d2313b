"""loss-scaling and gradient-underflow, from measured training steps.

Loss scaling is proven from values: the tape's target divided by the loss the step
returned is the loss scale actually applied, and the gradients the (inner) optimizer
receives must match the float32 reference gradient of the loss (so they were unscaled).
`fit`-style models must also have a LossScaleOptimizer as `model.optimizer`.
"""

from __future__ import annotations

import math

from .checks import Result
from .training import StepObservation, compare, reference_gradients

# The gradients the optimizer receives must have the float32 gradient's size (a scaling
# mistake is off by the loss scale, 2**15 by default) and direction (float16 rounding
# alone leaves the cosine near 1).
MAX_RATIO = 1.5
MIN_COSINE = 0.9
UNDERFLOW_LIMIT = 0.01  # fraction of entries allowed to vanish in float16 only
MIN_SCALE = 2.0


def _advice(keras_major: int) -> str:
    if keras_major >= 3:
        return (
            "wrap the optimizer in keras.optimizers.LossScaleOptimizer, differentiate "
            "optimizer.scale_loss(loss) and pass the gradients to optimizer.apply_gradients "
            "(it unscales them)"
        )
    return (
        "wrap the optimizer in tf.keras.mixed_precision.LossScaleOptimizer, differentiate "
        "optimizer.get_scaled_loss(loss), then optimizer.get_unscaled_gradients(grads) before "
        "apply_gradients"
    )


def _use_advice(keras_major: int) -> str:
    """For a step whose optimizer already is a LossScaleOptimizer."""
    if keras_major >= 3:
        return ("differentiate optimizer.scale_loss(loss) and pass the gradients to apply/apply_gradients "
                "as they are (it unscales them once: do not divide them yourself)")
    return ("differentiate optimizer.get_scaled_loss(loss) and unscale the gradients once, with "
            "optimizer.get_unscaled_gradients(grads), before apply_gradients")


def measured_step(observations: list) -> StepObservation | None:
    """The first step whose gradients reached an optimizer (a LossScaleOptimizer skips a
    step whose gradients overflowed), else the first step."""
    for index, observation in enumerate(observations):
        if observation.applied:
            observation.skipped_before = index
            return observation
    return observations[0] if observations else None


def _scale_facts(mixed: StepObservation, reference: StepObservation | None, keras_major: int,
                 wrapped: bool = False) -> Result:
    """Is the loss scaled, and are the gradients the optimizer receives unscaled?
    `wrapped`: the optimizer is known to be a LossScaleOptimizer (advice then says how
    to use it, not to wrap it)."""
    advice = _use_advice(keras_major) if wrapped or mixed.optimizer_scale else _advice(keras_major)
    measured = {"loss": mixed.loss, "tape_target": mixed.target, "optimizer_loss_scale": mixed.optimizer_scale}
    if mixed.target is None:
        return Result("skip", "the step computed no tape gradient of the model's variables", measured)
    if mixed.loss is None:
        return Result(
            "skip",
            "train_step(x, y) returned no scalar loss: return the loss so the verifier can compare "
            "the tape's target with loss x loss scale",
            measured,
        )
    if not math.isfinite(mixed.loss):
        return Result("skip", f"the loss itself is {mixed.loss} on synthetic data (see finite-forward)", measured)
    if not math.isfinite(mixed.target):
        return Result(
            "fail",
            f"the tape's target is {mixed.target} for a loss of {mixed.loss:.6g}: loss x loss scale overflows, "
            "which happens when the loss is computed in float16 (float16 outputs, see output-dtype): make the "
            "model's outputs float32",
            measured,
        )
    scale = mixed.effective_scale
    measured["loss_scale"] = scale
    if scale is None or scale < MIN_SCALE:
        return Result(
            "fail",
            f"the tape differentiates the unscaled loss (target {mixed.target:.6g} = loss {mixed.loss:.6g} x "
            f"{scale if scale is not None else float('nan'):.3g}): small float16 gradients underflow to zero; "
            + advice,
            measured,
        )
    matches = ""
    if mixed.optimizer_scale:
        agree = abs(scale - mixed.optimizer_scale) <= 1e-3 * mixed.optimizer_scale
        matches = (
            " (the LossScaleOptimizer's scale)" if agree
            else f" (the LossScaleOptimizer's scale is {mixed.optimizer_scale:g})"
        )
    if not mixed.applied:
        return Result(
            "skip",
            f"the loss is scaled x{scale:g}{matches}, but no optimizer the verifier can see (module-level or "
            "model.optimizer) received gradients, so unscaling cannot be measured",
            measured,
        )
    ref = reference_gradients(reference) if reference is not None else None
    if ref is None:
        return Result(
            "skip", f"the loss is scaled x{scale:g}{matches}; no float32 reference gradient to compare with", measured
        )
    comparison = compare(mixed.applied, ref, mixed.variables)
    if comparison is None:
        return Result("skip", f"the loss is scaled x{scale:g}{matches}; no gradients in common with the reference", measured)
    measured.update(gradient_relative_error=comparison.relative_error, gradient_ratio=comparison.ratio,
                    gradient_cosine=comparison.cosine)
    ratio_ok = 1 / MAX_RATIO <= comparison.ratio <= MAX_RATIO
    if not ratio_ok or comparison.cosine < MIN_COSINE:
        if comparison.ratio > MAX_RATIO:
            what = f"{comparison.ratio:.4g}x the float32 gradient: they are still scaled"
        elif comparison.ratio < 1 / MAX_RATIO:
            what = f"{comparison.ratio:.3g}x the float32 gradient: unscaled twice, or never scaled"
        else:
            what = f"not the float32 gradient (cosine similarity {comparison.cosine:.3f})"
        return Result(
            "fail",
            f"the loss is scaled x{scale:g}{matches}, but the gradients the optimizer receives are {what}; "
            + advice,
            measured,
        )
    if mixed.skipped_before:
        matches += (
            f" after {mixed.skipped_before} skipped step(s) whose gradients were not finite "
            "(the LossScaleOptimizer lowered its scale)"
        )
    return Result(
        "pass",
        f"loss scale {scale:g}{matches}: the tape's target is loss x {scale:g}, and the optimizer receives "
        f"unscaled gradients ({comparison.ratio:.4f}x the float32 reference's size, cosine similarity "
        f"{comparison.cosine:.4f})",
        measured,
    )


def check_loss_scaling_custom(policy: str, mixed: StepObservation | None, reference, keras_major: int,
                              step_name: str) -> Result:
    if policy != "mixed_float16":
        return not_float16(policy)
    if mixed is None:
        return Result("skip", f"{step_name} did not run")
    result = _scale_facts(mixed, reference, keras_major)
    result.detail = f"{step_name}: {result.detail}"
    return result


def check_loss_scaling_fit(policy: str, model, api, compiled_by_verifier: bool, mixed, reference) -> Result:
    if policy != "mixed_float16":
        return not_float16(policy)
    optimizer = getattr(model, "optimizer", None)
    note = " (the model was not compiled: compiled with Adam and MSE to check)" if compiled_by_verifier else ""
    name = type(optimizer).__name__
    if not api.is_loss_scale_optimizer(optimizer):
        model_policy = api.policy_name(model)
        if model_policy != "mixed_float16":
            why = (
                f"the model object's own dtype policy is {model_policy} (compile() wraps the optimizer only "
                "when it is mixed_float16): set the global policy before building the model, or wrap the optimizer "
                "in a LossScaleOptimizer yourself"
            )
        else:
            why = "wrap the optimizer in a LossScaleOptimizer"
        return Result(
            "fail", f"model.optimizer is {name}, not a LossScaleOptimizer, so fit() does not scale the loss{note}: {why}",
            {"optimizer": name},
        )
    if mixed is None:
        return Result("pass", f"model.optimizer is a LossScaleOptimizer{note}", {"optimizer": name})
    result = _scale_facts(mixed, reference, api.major, wrapped=True)
    # A skip stays a skip: that the optimizer is a LossScaleOptimizer does not prove the
    # step scales the loss and hands it unscaled gradients.
    result.detail = f"model.optimizer is a LossScaleOptimizer{note}; fit: {result.detail}"
    result.measured["optimizer"] = name
    return result


def not_float16(policy: str) -> Result:
    if policy == "mixed_bfloat16":
        return Result("n/a", "mixed_bfloat16 has float32's exponent range: no loss scaling needed")
    return Result("n/a", f"policy {policy}: loss scaling matters only under mixed_float16")


def check_gradient_underflow(policy: str, mixed: StepObservation | None, reference: StepObservation | None) -> Result:
    if not policy.startswith("mixed_"):
        return Result("n/a", f"policy {policy}: gradients are computed in float32")
    if mixed is None or reference is None:
        return Result("skip", "no training step ran")
    received = mixed.applied
    ref = reference.applied
    if not received or not ref:  # fall back to the tape's gradients, unscaled by each run's own scale
        received = reference_gradients(mixed) or {}
        ref = reference_gradients(reference) or reference.tape_grads
    comparison = compare(received, ref, mixed.variables) if received and ref else None
    if comparison is None:
        return Result("skip", "no gradients were observed to compare with the float32 reference")
    if not comparison.finite:
        return Result("skip", f"the {policy.split('_', 1)[1]} gradients are not finite (see finite-forward)")
    fraction = comparison.underflow / max(comparison.entries, 1)
    measured = {"fraction": fraction, "underflowed": comparison.underflow, "entries": comparison.entries,
                "worst": comparison.worst}
    dtype = policy.split("_", 1)[1]
    summary = (
        f"{fraction:.2%} of {comparison.entries} gradient entries are zero in {dtype} but not in the float32 "
        f"reference (limit {UNDERFLOW_LIMIT:.0%})"
    )
    if comparison.worst:
        summary += "; most in " + ", ".join(f"{name} ({count} of {size})" for name, count, size in comparison.worst)
    if fraction > UNDERFLOW_LIMIT:
        return Result("fail", summary + ": scale the loss (LossScaleOptimizer), or a larger loss scale", measured)
    return Result("pass", summary, measured)
