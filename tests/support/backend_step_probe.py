"""Runs inside a Keras 3 child on the JAX or torch backend (tests/tf_harness.py with
`backend=`): one training step of a fixture program as written (its mixed_float16
policy) and the same step under float32 from the same weights, without loss scaling
(the float32 training the program means).

    measure(path) -> {"mixed": {"update": [...], "loss": float},
                      "float32": {"update": [...], "loss": float},
                      "optimizer": "LossScaleOptimizer"}

How a program is run depends on what it defines:
- `build_model()`, or a `keras.Model` subclass (built on Input(8) -> Dense(16) ->
  Dense(4)): `fit` on one batch, compiled with SGD(0.1) and MSE unless the program
  compiles it;
- a module-level `train_step(state, data)` with a module `model` and `optimizer`: one
  call with the state Keras's JAX trainer would pass;
- a module-level `train_step(x, y)`: one call.
"""

from __future__ import annotations

import inspect
import types

import numpy as np

import keras

BATCH = 16
SEED = 0


def _load(path: str, name: str) -> types.ModuleType:
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    module = types.ModuleType(name)
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def _own_model_class(module):
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, keras.Model) and value.__module__ == module.__name__:
            return value
    return None


def _model_of(module):
    if hasattr(module, "build_model"):
        return module.build_model()
    if isinstance(getattr(module, "model", None), keras.Model):
        return module.model
    cls = _own_model_class(module)
    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    return cls(inputs, keras.layers.Dense(4, dtype="float32")(hidden))


def _values(variables) -> list:
    return [np.array(keras.ops.convert_to_numpy(v), dtype="float64") for v in variables]


def _flat(arrays) -> np.ndarray:
    return np.concatenate([a.ravel() for a in arrays])


def _step(module, model, x, y) -> float:
    train_step = getattr(module, "train_step", None)
    if train_step is None or _own_model_class(module) is not None or hasattr(module, "build_model"):
        if getattr(model, "optimizer", None) is None:
            model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
        history = model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
        return float(history.history.get("loss", [float("nan")])[0])
    parameters = list(inspect.signature(getattr(train_step, "__wrapped__", train_step)).parameters)
    if parameters[:2] == ["state", "data"]:
        optimizer = module.optimizer
        state = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables],
                 [v.value for v in optimizer.variables])
        loss, (trainable, _, _) = train_step(state, (x, y))
        for variable, value in zip(model.trainable_variables, trainable):
            variable.assign(value)
        return float(loss)
    return float(keras.ops.convert_to_numpy(train_step(x, y)))


def _run(path: str, name: str, weights, float32: bool):
    keras.utils.set_random_seed(SEED)
    if float32:
        # The same program under float32 and without loss scaling: its own policy call
        # and LossScaleOptimizer are neutralised while it is loaded.
        keras.mixed_precision.set_dtype_policy("float32")
        patches = [(keras.optimizers, "LossScaleOptimizer", lambda inner, *args, **kwargs: inner)] + [
            (owner, setter, lambda *args, **kwargs: None)
            for owner in (keras.mixed_precision, keras.config) for setter in ("set_dtype_policy", "set_global_policy")
            if hasattr(owner, setter)
        ]
        saved = [(owner, attribute, getattr(owner, attribute)) for owner, attribute, _ in patches]
        for owner, attribute, replacement in patches:
            setattr(owner, attribute, replacement)
        try:
            module = _load(path, name)
            model = _model_of(module)
        finally:
            for owner, attribute, original in saved:
                setattr(owner, attribute, original)
    else:
        module = _load(path, name)
        model = _model_of(module)
    if weights is not None:
        model.set_weights(weights)
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(BATCH, model.inputs[0].shape[-1])).astype("float32")
    y = rng.uniform(size=(BATCH, model.outputs[0].shape[-1])).astype("float32")
    before = _values(model.trainable_variables)
    initial = model.get_weights()
    loss = _step(module, model, x, y)
    update = _flat(_values(model.trainable_variables)) - _flat(before)
    optimizer = getattr(module, "optimizer", None) or model.optimizer
    policy = model.dtype_policy.name
    return {"update": update.tolist(), "loss": loss, "optimizer": type(optimizer).__name__, "policy": policy}, initial


def measure(path: str) -> dict:
    mixed, initial = _run(path, "program_mixed", None, float32=False)
    reference, _ = _run(path, "program_float32", initial, float32=True)
    return {"mixed": mixed, "float32": reference, "optimizer": mixed["optimizer"]}
