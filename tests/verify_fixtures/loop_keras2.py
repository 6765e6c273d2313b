"""A correct Keras 2 (tf-keras) custom loop, as in the TF 2.4+ guide: get_scaled_loss and
get_unscaled_gradients around the tape, with dropout in the model."""

import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import tensorflow as tf  # noqa: E402

tf.keras.mixed_precision.set_global_policy("mixed_float16")


def build_model():
    inputs = tf.keras.Input(shape=(32,), name="features")
    x = tf.keras.layers.Dense(64, activation="relu")(inputs)
    x = tf.keras.layers.Dropout(0.25)(x)
    x = tf.keras.layers.Dense(16)(x)
    outputs = tf.keras.layers.Activation("softmax", dtype="float32")(x)
    return tf.keras.Model(inputs, outputs)


model = build_model()
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.01))
loss_object = tf.keras.losses.SparseCategoricalCrossentropy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = loss_object(y, predictions)
        scaled_loss = optimizer.get_scaled_loss(loss)
    scaled_gradients = tape.gradient(scaled_loss, model.trainable_variables)
    gradients = optimizer.get_unscaled_gradients(scaled_gradients)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss
