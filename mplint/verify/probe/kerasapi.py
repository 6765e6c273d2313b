"""The differences between Keras 2 (tf_keras, tf.keras <= 2.15) and Keras 3 the probe needs.

A model tells which Keras it belongs to by its class's package, so a Keras 3 model
in a `TF_USE_LEGACY_KERAS=1` process (or the reverse) is still read with its own API.
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager

from .tensors import uses_tensorflow

MIXED = ("mixed_float16", "mixed_bfloat16")


def is_keras_model(obj) -> bool:
    return any(
        cls.__name__ in ("Model", "Functional", "Sequential")
        and cls.__module__.split(".")[0] in ("keras", "tf_keras", "tensorflow")
        for cls in type(obj).__mro__
    )


def keras_module_for(obj):
    """The Keras package an object's class comes from (a user subclass: its Keras base's)."""
    for cls in type(obj).__mro__:
        root = cls.__module__.split(".")[0]
        if root in ("keras", "tf_keras"):
            return importlib.import_module(root)
    import tensorflow as tf  # tf.keras of TensorFlow < 2.13 lives in tensorflow.python.keras

    return tf.keras


def default_keras():
    """What `tf.keras` means in this process (tf_keras with TF_USE_LEGACY_KERAS=1); Keras 3
    itself on the other backends."""
    if not uses_tensorflow():
        import keras

        return keras
    import tensorflow as tf

    return tf.keras


def _version(module) -> str:
    version = getattr(module, "__version__", None)
    if version:
        return str(version)
    try:
        import tensorflow as tf

        return str(tf.keras.__version__)
    except Exception:
        return "unknown"


class KerasAPI:
    def __init__(self, module) -> None:
        self.module = module
        self.version = _version(module)
        try:
            self.major = int(self.version.split(".")[0])
        except ValueError:
            self.major = 2
        mp = module.mixed_precision
        self.loss_scale_optimizer = getattr(mp, "LossScaleOptimizer", None) or getattr(
            module.optimizers, "LossScaleOptimizer", None
        )
        bases = [getattr(module.optimizers, "Optimizer", None)]
        legacy = getattr(module.optimizers, "legacy", None)
        if legacy is not None:
            bases.append(getattr(legacy, "Optimizer", None))
        self._optimizer_bases = tuple(b for b in bases if isinstance(b, type))

    @classmethod
    def for_model(cls, model) -> "KerasAPI":
        return cls(keras_module_for(model))

    # -- policies --------------------------------------------------------------------
    def global_policy(self):
        return self.module.mixed_precision.global_policy()

    def set_global_policy(self, name: str) -> None:
        self.module.mixed_precision.set_global_policy(name)

    @staticmethod
    def policy_name(layer_or_policy) -> str:
        policy = getattr(layer_or_policy, "dtype_policy", layer_or_policy)
        return str(getattr(policy, "name", policy))

    def set_layer_policy(self, layer, policy) -> None:
        prop = getattr(type(layer), "dtype_policy", None)
        if isinstance(prop, property) and prop.fset is not None:  # Keras 3
            layer.dtype_policy = policy
        else:  # Keras 2
            layer._set_dtype_policy(policy)

    @staticmethod
    def layers(model, include_self: bool = False) -> list:
        """Every layer inside the model, nested ones included, each once."""
        flatten = getattr(model, "_flatten_layers", None)
        found = list(flatten(include_self=include_self, recursive=True)) if flatten else (
            ([model] if include_self else []) + list(getattr(model, "layers", []))
        )
        unique, seen = [], set()
        for layer in found:
            if id(layer) not in seen:
                seen.add(id(layer))
                unique.append(layer)
        return unique

    # -- optimizers ------------------------------------------------------------------
    def is_optimizer(self, obj) -> bool:
        return bool(self._optimizer_bases) and isinstance(obj, self._optimizer_bases)

    def is_loss_scale_optimizer(self, obj) -> bool:
        return self.loss_scale_optimizer is not None and isinstance(obj, self.loss_scale_optimizer)

    @staticmethod
    def inner_optimizer(optimizer):
        return getattr(optimizer, "inner_optimizer", None) or getattr(optimizer, "_optimizer", None)

    def loss_scale(self, optimizer) -> float | None:
        """The current loss scale of a LossScaleOptimizer (None if it cannot be read)."""
        for read in (
            lambda o: o.loss_scale,  # Keras 2
            lambda o: o.dynamic_scale if getattr(o, "built", False) else o.initial_scale,  # Keras 3
        ):
            try:
                value = read(optimizer)
            except (AttributeError, ValueError):
                continue
            if value is None:
                continue
            try:
                return float(value.numpy() if hasattr(value, "numpy") else value)
            except (TypeError, ValueError):
                continue
        return None

    # -- losses ------------------------------------------------------------------------
    def is_loss_object(self, obj) -> bool:
        base = getattr(self.module.losses, "Loss", None)
        return isinstance(base, type) and isinstance(obj, base)


def variable_name(variable) -> str:
    return str(getattr(variable, "path", None) or getattr(variable, "name", "?"))


@contextmanager
def float32_policies(api: KerasAPI, models: list):
    """Switch every layer of `models` to the float32 policy in place (same variables),
    and back afterwards."""
    saved = []
    seen: set[int] = set()
    try:
        for model in models:
            for layer in api.layers(model, include_self=True):
                if id(layer) in seen or type(layer).__name__ == "InputLayer":
                    continue
                seen.add(id(layer))
                saved.append((layer, layer.dtype_policy))
                api.set_layer_policy(layer, "float32")
        yield
    finally:
        for layer, policy in reversed(saved):
            api.set_layer_policy(layer, policy)
