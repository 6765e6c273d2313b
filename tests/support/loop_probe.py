"""Runs inside a TensorFlow child (see tests/tf_harness.py): one training step of each
given training-loop program, with spies on what loss scaling is about.

    run_programs([{"id": ..., "source": ..., "run": "train_step" | "trainer" | "fit" | "import"}])
    -> [{"id", "losses", "targets", "tape_grads", "applied", "scales", "inner_ok"}]

One step may train several models (a GAN): the i-th loss is the i-th gradient target
and the i-th set of gradients applied.

Spies (installed once, class-level, so they also see optimizers built at import):
- `tf.GradientTape.gradient`: the target's value and the gradients it returns;
- the plain optimizers' apply (Keras 3 `apply`, Keras 2 `apply_gradients`): the
  gradients an optimizer that is not a LossScaleOptimizer receives;
- the LossScaleOptimizer's apply: its loss scale at that moment, and its inner optimizer.
Functions run eagerly so the spies see values (a job with "eager": False runs them as
graphs, unobserved, to check that the code also runs there).
"""

import os

import numpy as np
import tensorflow as tf

KERAS2 = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
tf.config.run_functions_eagerly(True)

if KERAS2:
    import tf_keras as keras
    from tf_keras.src.mixed_precision.loss_scale_optimizer import LossScaleOptimizerV3 as LSO
    from tf_keras.src.optimizers.optimizer import Optimizer as PlainBase

    PLAIN_METHOD, LSO_METHOD = "apply_gradients", "apply_gradients"
else:
    import keras
    from keras.src.optimizers.base_optimizer import BaseOptimizer as PlainBase
    from keras.src.optimizers.loss_scale_optimizer import LossScaleOptimizer as LSO

    PLAIN_METHOD, LSO_METHOD = "apply", "apply"

EVENTS = []


def _values(tensors):
    return [None if t is None else np.asarray(tf.convert_to_tensor(t), dtype="float64").ravel().tolist() for t in tensors]


_gradient = tf.GradientTape.gradient


def _gradient_spy(self, target, sources, *args, **kwargs):
    result = _gradient(self, target, sources, *args, **kwargs)
    if not tf.executing_eagerly():
        return result
    flat = tf.nest.flatten(result)
    EVENTS.append({"event": "gradient", "target": float(tf.reduce_sum(tf.cast(target, tf.float64))), "grads": _values(flat)})
    return result


tf.GradientTape.gradient = _gradient_spy

_plain_apply = getattr(PlainBase, PLAIN_METHOD)


def _plain_spy(self, *args, **kwargs):
    # Materialise the (possibly one-shot) gradients argument, then pass it on.
    key = "grads_and_vars" if KERAS2 else "grads"
    if args:
        first = list(args[0])
        args = (first, *args[1:])
    else:
        first = list(kwargs[key])
        kwargs[key] = first
    if not isinstance(self, LSO) and tf.executing_eagerly():
        grads = [g for g, _ in first] if KERAS2 else first
        EVENTS.append({"event": "applied", "optimizer": id(self), "grads": _values(grads)})
    return _plain_apply(self, *args, **kwargs)


setattr(PlainBase, PLAIN_METHOD, _plain_spy)

_lso_apply = getattr(LSO, LSO_METHOD)


def _lso_spy(self, *args, **kwargs):
    if not tf.executing_eagerly():
        return _lso_apply(self, *args, **kwargs)
    scale = float(self.loss_scale) if KERAS2 else float(self.scale_loss(1.0))
    EVENTS.append({"event": "lso", "scale": scale, "inner": id(self.inner_optimizer)})
    return _lso_apply(self, *args, **kwargs)


setattr(LSO, LSO_METHOD, _lso_spy)


def _data():
    rng = np.random.RandomState(0)
    x = (rng.normal(size=(8, 4)) * 0.5).astype("float32")
    y = rng.randint(0, 3, size=(8,)).astype("int32")
    return x, y


def _reset():
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("float32")
    keras.utils.set_random_seed(0)


def run_program(job):
    eager = job.get("eager", True)
    tf.config.run_functions_eagerly(eager)
    _reset()
    EVENTS.clear()
    namespace = {"__name__": "fixture_" + job["id"].replace("/", "_")}
    x, y = _data()
    exec(compile(job["source"], job["id"], "exec"), namespace)
    run = job["run"]
    if run == "train_step":
        loss = namespace["train_step"](x, y)
    elif run == "trainer":
        loss = namespace["trainer"].train_step(x, y)
    elif run == "fit":
        model = namespace["model"]
        model.run_eagerly = eager
        returned = []
        train_step = model.train_step

        def recording_train_step(data):
            logs = train_step(data)
            if tf.executing_eagerly():
                returned.append(float(logs["loss"]))
            return logs

        model.train_step = recording_train_step  # fit calls it through the instance
        history = model.fit(x, y, batch_size=8, epochs=1, verbose=0)
        # (as a graph, the loss that fit logs is all there is to see)
        (loss,) = returned if eager else history.history["loss"]
    else:  # the loop ran at import
        loss = namespace["loss"]
    gradients = [e for e in EVENTS if e["event"] == "gradient"]
    applied = [e for e in EVENTS if e["event"] == "applied"]
    lso = [e for e in EVENTS if e["event"] == "lso"]
    return {
        "id": job["id"],
        "losses": [float(v) for v in (loss if isinstance(loss, (tuple, list)) else [loss])],
        "targets": [e["target"] for e in gradients],
        "tape_grads": [e["grads"] for e in gradients],
        "applied": [e["grads"] for e in applied],
        "scales": [e["scale"] for e in lso],
        # each optimizer that received gradients is the inner one of the LossScaleOptimizer applying them
        "inner_ok": len(lso) == len(applied) > 0 and all(a["optimizer"] == l["inner"] for a, l in zip(applied, lso)),
    }


def run_programs(jobs):
    return [run_program(job) for job in jobs]
