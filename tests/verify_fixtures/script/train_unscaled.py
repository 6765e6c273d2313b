"""The same script with a loop that never scales its loss, and a step that takes one
batch (`data`) and the optimizer as arguments."""

import keras
import tensorflow as tf
from model_lib import create_classifier

keras.mixed_precision.set_dtype_policy("mixed_float16")

optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(learning_rate=0.01))
loss_fn = keras.losses.SparseCategoricalCrossentropy()


def fit_batch(model, opt, data):
    images, labels = data
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    opt.apply(gradients, model.trainable_variables)
    return loss
