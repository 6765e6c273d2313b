"""A torch training script: a module-level model and LossScaleOptimizer, and a step
function that never scales its loss."""

import os

os.environ["KERAS_BACKEND"] = "torch"

import keras
import torch

keras.mixed_precision.set_dtype_policy("mixed_float16")

model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32), keras.layers.Dense(8, dtype="float32")])
optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(learning_rate=0.1))
loss_fn = keras.losses.MeanSquaredError()


def train_step(x, y):
    model.zero_grad()
    loss = loss_fn(y, model(x, training=True))
    loss.backward()
    gradients = [v.value.grad for v in model.trainable_weights]
    with torch.no_grad():
        optimizer.apply(gradients, model.trainable_weights)
    return loss
