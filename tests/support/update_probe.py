"""Runs inside a TensorFlow child (see tests/tf_harness.py): one training step of a
program, and the same step done by hand in float32, to compare the weight updates.

    compare_updates([{"id", "source", "run", "loss", "lr", "clip", "labels", "features", "optimizer"}])
    -> [{"id", "relative_error", "update_norm", "reference_norm", "policy", "skipped_steps"}]

The program is executed (building its model, under the policy it sets), its model's
weights are set to fixed values, and one step runs: its `train_step(x, y)`, `fit` on
its compiled model, or ("optimizer") a plain loop around its optimizer. The reference
is the same model rebuilt in float32 with the same weights and data, the gradients of
the same loss, the clipping the original code meant (`clip`: ["global_norm" | "norm",
C]) and a plain SGD step of learning rate `lr`. Steps a dynamic loss scale skips (on
overflow; the weights stay as they were) are run again, up to 8 times. `relative_error` is
|update - reference| / |reference| over all trainable weights: ~1e-3 for a float16
step done right, ~1 when the gradients are off by the loss scale (2**15) either way.
"""

import os

import numpy as np
import tensorflow as tf

KERAS2 = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
if KERAS2:
    import tf_keras as keras
else:
    import keras


def _reset():
    keras.backend.clear_session()
    keras.mixed_precision.set_global_policy("float32")
    os.environ.pop("TF_ENABLE_AUTO_MIXED_PRECISION", None)
    keras.utils.set_random_seed(0)


def _data(job):
    rng = np.random.RandomState(0)
    x = (rng.normal(size=(8, job.get("features", 4))) * 0.5).astype("float32")
    classes = job.get("classes", 3)
    labels = rng.randint(0, classes, size=(8,))
    kind = job.get("labels", "sparse")
    if kind == "sparse":
        y = labels.astype("int32")
    elif kind == "onehot":
        y = np.eye(classes, dtype="float32")[labels]
    else:
        y = rng.normal(size=(8, classes)).astype("float32")
    return x, y


def _loss(namespace, model, job):
    """The loss the original code meant: "compiled" (the model's), "sparse_logits" (a
    cross-entropy written inline), or the name of the program's loss object."""
    name = job.get("loss", "loss_fn")
    if name == "sparse_logits":
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if name != "compiled":
        return namespace[name]
    loss = model.loss
    return keras.losses.get(loss) if isinstance(loss, str) else loss


def _fixed_weights(model, x):
    if not model.built:
        model(x[:1])
    rng = np.random.RandomState(1)
    for variable in model.trainable_variables:
        variable.assign(rng.normal(scale=0.4, size=tuple(variable.shape)).astype("float32"))
    return [w.copy() for w in model.get_weights()]


def _float32_copy(model, x):
    keras.mixed_precision.set_global_policy("float32")
    try:
        copy = keras.models.clone_model(
            model, clone_function=lambda layer: layer.__class__.from_config({**layer.get_config(), "dtype": "float32"})
        )
    except Exception:  # a subclassed model: build another instance of its class
        copy = type(model)()
    copy(x[:1])
    return copy


def _own_loop(optimizer, model, loss, x, y):
    with tf.GradientTape() as tape:
        value = loss(y, model(x, training=True))
        scaled = optimizer.get_scaled_loss(value) if KERAS2 else optimizer.scale_loss(value)
    grads = tape.gradient(scaled, model.trainable_variables)
    if KERAS2:
        grads = optimizer.get_unscaled_gradients(grads)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


def compare_update(job):
    _reset()
    namespace = {"__name__": "fixture"}
    exec(compile(job["source"], job["id"], "exec"), namespace)
    model = namespace["model"]
    x, y = _data(job)
    loss = _loss(namespace, model, job)
    before = _fixed_weights(model, x)
    trainable = [v.numpy().copy() for v in model.trainable_variables]
    policy = keras.mixed_precision.global_policy().name
    run = job["run"]
    skipped = 0
    for _ in range(8):  # a dynamic loss scale skips a step that overflows (and halves)
        if run == "train_step":
            namespace["train_step"](x, y)
        elif run == "fit":
            model.fit(x, y, batch_size=len(x), epochs=1, verbose=0, shuffle=False)
        else:
            _own_loop(namespace[job["optimizer"]], model, loss, x, y)
        update = [v.numpy() - w for v, w in zip(model.trainable_variables, trainable)]
        if any(np.any(u != 0) for u in update):
            break
        skipped += 1

    reference_model = _float32_copy(model, x)
    reference_model.set_weights(before)
    with tf.GradientTape() as tape:
        value = tf.reduce_mean(loss(y, reference_model(x, training=True)))  # a loss function gives one per sample
    grads = tape.gradient(value, reference_model.trainable_variables)
    clip = job.get("clip")
    if clip and clip[0] == "global_norm":
        grads, _ = tf.clip_by_global_norm(grads, clip[1])
    elif clip:
        grads = [tf.clip_by_norm(g, clip[1]) for g in grads]
    reference = [-job["lr"] * np.asarray(g) for g in grads]

    flat = np.concatenate([u.ravel() for u in update])
    expected = np.concatenate([r.ravel() for r in reference])
    return {
        "id": job["id"],
        "relative_error": float(np.linalg.norm(flat - expected) / max(np.linalg.norm(expected), 1e-30)),
        "update_norm": float(np.linalg.norm(flat)),
        "reference_norm": float(np.linalg.norm(expected)),
        "policy": policy,
        "skipped_steps": skipped,
    }


def compare_updates(jobs):
    return [compare_update(job) for job in jobs]
