"""One training step, measured: what the tape differentiates, what the optimizer receives.

The step is the user's `train_step(x, y)` (custom loop) or one `model.fit(x, y)` step
(what `fit` runs). Everything runs eagerly, with `tf.GradientTape.gradient` and the
optimizers' `apply`/`apply_gradients` wrapped for the duration of the step, so the
values are real: the tape's target, the gradients it returns, and the gradients the
(inner) optimizer is finally given. The same step under the float32 policy (same
weights, restored after every step) gives the reference gradient.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .kerasapi import KerasAPI, variable_name
from .patching import wrapped_methods
from .tensors import to_numpy


@dataclass
class StepObservation:
    loss: float | None = None  # what the step returned (the loss), if a scalar
    target: float | None = None  # the tape's target (summed), first gradient of model variables
    tape_grads: dict = field(default_factory=dict)  # id(variable) -> gradient the tape returned
    applied: dict = field(default_factory=dict)  # id(variable) -> gradient the optimizer received
    variables: dict = field(default_factory=dict)  # id(variable) -> variable
    optimizer_scale: float | None = None  # the LossScaleOptimizer's scale before the step
    receivers: list = field(default_factory=list)  # optimizers that received gradients
    skipped_before: int = 0  # earlier steps whose gradients never reached the optimizer

    @property
    def effective_scale(self) -> float | None:
        if self.target is None or not self.loss:
            return None
        return self.target / self.loss


def _array(value) -> np.ndarray | None:
    import tensorflow as tf

    if value is None:
        return None
    return np.asarray(tf.convert_to_tensor(value).numpy(), dtype=np.float64)


def scalar(value) -> float | None:
    """The loss a step returned: a scalar, a dict's "loss", or the first scalar of a sequence."""
    if isinstance(value, dict):
        value = value.get("loss", next(iter(value.values()), None) if len(value) == 1 else None)
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if value is None:
        return None
    try:
        array = to_numpy(value)
    except (TypeError, ValueError, RuntimeError):
        return None
    return float(array) if array.size == 1 else None


def find_optimizers(api: KerasAPI, candidates) -> list:
    found, seen = [], set()
    for obj in candidates:
        if api.is_optimizer(obj) and id(obj) not in seen:
            seen.add(id(obj))
            found.append(obj)
    return found


class _Instrumentation:
    def __init__(self, api: KerasAPI, optimizers: list, model_variables: set) -> None:
        self.api = api
        self.optimizers = optimizers
        self.model_variables = model_variables
        self.observation = StepObservation()
        self._depth = 0
        self._patched: list = []

    # -- the tape ----------------------------------------------------------------------
    def _record_gradient(self, target, sources, result) -> None:
        import tensorflow as tf

        obs = self.observation
        if obs.target is not None:
            return
        flat_sources = tf.nest.flatten(sources)
        if self.model_variables and not any(id(s) in self.model_variables for s in flat_sources):
            return
        obs.target = float(sum(float(tf.reduce_sum(tf.cast(t, tf.float64))) for t in tf.nest.flatten(target)))
        for source, grad in zip(flat_sources, tf.nest.flatten(result)):
            obs.variables[id(source)] = source
            array = _array(grad)
            if array is not None:
                obs.tape_grads[id(source)] = array

    # -- the optimizers ----------------------------------------------------------------
    def _record_applied(self, optimizer, pairs) -> None:
        obs = self.observation
        got = False
        for grad, variable in pairs:
            if variable is None or id(variable) in obs.applied:
                continue
            array = _array(grad)
            if array is not None:
                obs.applied[id(variable)] = array
                obs.variables.setdefault(id(variable), variable)
                got = True
        if got:
            obs.receivers.append(type(optimizer).__name__)

    def _wrap(self, optimizer, method: str):
        original = getattr(optimizer, method)
        instrumentation = self

        def wrapper(*args, **kwargs):
            if instrumentation._depth == 0:
                if method == "apply_gradients":
                    key = "grads_and_vars"
                    pairs = list(args[0] if args else kwargs.pop(key))
                    args = (pairs,) + tuple(args[1:])
                    instrumentation._record_applied(optimizer, pairs)
                else:  # apply(grads, trainable_variables=None)
                    grads = list(args[0] if args else kwargs.pop("grads"))
                    args = (grads,) + tuple(args[1:])
                    variables = args[1] if len(args) > 1 else kwargs.get("trainable_variables")
                    if variables is None:
                        variables = getattr(optimizer, "_trainable_variables", None) or []
                    instrumentation._record_applied(optimizer, list(zip(grads, list(variables))))
            instrumentation._depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                instrumentation._depth -= 1

        return wrapper

    def __enter__(self) -> "_Instrumentation":
        import tensorflow as tf

        original_gradient = tf.GradientTape.gradient
        instrumentation = self

        def gradient(tape, target, sources, *args, **kwargs):
            result = original_gradient(tape, target, sources, *args, **kwargs)
            instrumentation._record_gradient(target, sources, result)
            return result

        tf.GradientTape.gradient = gradient
        self._patched.append((tf.GradientTape, "gradient", original_gradient, True))
        receivers = []
        for optimizer in self.optimizers:
            if self.api.is_loss_scale_optimizer(optimizer):
                scale = self.api.loss_scale(optimizer)
                if self.observation.optimizer_scale is None:
                    self.observation.optimizer_scale = scale
                inner = self.api.inner_optimizer(optimizer)
                if inner is not None:
                    receivers.append(inner)
            else:
                receivers.append(optimizer)
        seen = set()
        for optimizer in receivers:
            if id(optimizer) in seen:
                continue
            seen.add(id(optimizer))
            for method in ("apply_gradients", "apply"):
                if hasattr(type(optimizer), method):
                    object.__setattr__(optimizer, method, self._wrap(optimizer, method))
                    self._patched.append((optimizer, method, None, False))
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, original, on_class in reversed(self._patched):
            if on_class:
                setattr(owner, name, original)
            else:
                try:
                    object.__delattr__(owner, name)
                except AttributeError:
                    pass
        self._patched = []


@contextmanager
def restored_weights(models: list):
    """Run something that trains, then put every model's weights back."""
    saved = [(m, [np.array(v.numpy()) for v in m.variables]) for m in models]
    try:
        yield
    finally:
        for model, values in saved:
            for variable, value in zip(model.variables, values):
                variable.assign(value)


def is_random_layer(layer) -> bool:
    """Dropout, noise and random augmentation layers (Keras 3 seed generators, Keras 2
    random generators)."""
    if getattr(layer, "seed_generator", None) is not None or getattr(layer, "_random_generator", None) is not None:
        return True
    return any(n.endswith(("Dropout", "Noise")) for n in (c.__name__ for c in type(layer).__mro__))


def _accepts_training(function) -> bool:
    import inspect

    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return "training" in parameters or any(p.kind == p.VAR_KEYWORD for p in parameters.values())


@contextmanager
def random_layers_off(api: KerasAPI, models: list):
    """Run random layers in inference mode: their random draws depend on the compute dtype
    (a float16 dropout mask differs from a float32 one), and the float16 and float32 steps
    must compute the same function to be compared."""
    def inference(original):
        if not _accepts_training(original):
            return None

        def inference_call(*args, **kwargs):
            kwargs["training"] = False
            return original(*args, **kwargs)

        return inference_call

    layers = [layer for model in models for layer in api.layers(model) if is_random_layer(layer)]
    with wrapped_methods(layers, "call", inference):
        yield


def observe_steps(step, api: KerasAPI, models: list, optimizers: list, steps: int, seed: int = 0) -> list:
    """Run `step()` `steps` times (weights restored afterwards), one observation each."""
    model_variables = {id(v) for m in models for v in m.trainable_variables}
    observations = []
    with restored_weights(models), random_layers_off(api, models):
        _reset_seeds(api, seed)
        for _ in range(steps):
            with _Instrumentation(api, optimizers, model_variables) as instrumentation:
                returned = step()
            instrumentation.observation.loss = scalar(returned)
            observations.append(instrumentation.observation)
    return observations


def _reset_seeds(api: KerasAPI, seed: int) -> None:
    import random

    import tensorflow as tf

    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)
    set_random_seed = getattr(getattr(api.module, "utils", None), "set_random_seed", None)
    if set_random_seed is not None:
        set_random_seed(seed)


# -- what the observations say ---------------------------------------------------------

def _norm(arrays: list) -> float:
    return float(np.sqrt(sum(float(np.sum(a * a)) for a in arrays))) if arrays else 0.0


@dataclass
class GradientComparison:
    relative_error: float
    ratio: float  # |received| / |reference|
    cosine: float  # cosine similarity of received and reference (all variables as one vector)
    entries: int
    underflow: int  # entries zero in the mixed gradient but not in the reference
    worst: list  # [(variable name, entries lost, entries)] for the variables with the most underflow
    finite: bool  # the received gradients are all finite


def compare(mixed: dict, reference: dict, variables: dict) -> GradientComparison | None:
    common = [k for k in mixed if k in reference and mixed[k].shape == reference[k].shape]
    if not common:
        return None
    a = [mixed[k] for k in common]
    b = [reference[k] for k in common]
    difference = _norm([x - y for x, y in zip(a, b)])
    base = _norm(b) or 1e-30
    entries, underflow, per_variable = 0, 0, []
    for key, x, y in zip(common, a, b):
        lost = int(np.sum((x == 0) & (y != 0)))
        entries += x.size
        underflow += lost
        if lost:
            per_variable.append((variable_name(variables.get(key)), lost, int(x.size)))
    per_variable.sort(key=lambda item: -item[1] / max(item[2], 1))
    finite = all(bool(np.all(np.isfinite(x))) for x in a)
    dot = sum(float(np.sum(x * y)) for x, y in zip(a, b))
    cosine = dot / ((_norm(a) or 1e-30) * base)
    return GradientComparison(difference / base, _norm(a) / base, cosine, entries, underflow, per_variable[:3], finite)


def reference_gradients(reference: StepObservation) -> dict | None:
    """The float32 gradient of the loss itself: the tape's gradient over the float32 run's
    own scale (target / loss), so the user's unscaling, right or wrong, is not trusted."""
    scale = reference.effective_scale
    if scale is None or not reference.tape_grads:
        return None
    return {k: v / scale for k, v in reference.tape_grads.items()}
