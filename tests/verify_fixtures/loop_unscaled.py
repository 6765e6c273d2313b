"""A Keras 3 custom training loop under mixed_float16 that never scales its loss."""

import keras
import tensorflow as tf

keras.mixed_precision.set_dtype_policy("mixed_float16")


def build_model():
    inputs = keras.Input(shape=(32,), name="features")
    x = keras.layers.Dense(64, activation="relu")(inputs)
    x = keras.layers.Dense(16)(x)
    outputs = keras.layers.Activation("softmax", dtype="float32")(x)
    return keras.Model(inputs, outputs)


model = build_model()
optimizer = keras.optimizers.Adam(learning_rate=1e-3)
loss_fn = keras.losses.SparseCategoricalCrossentropy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = loss_fn(y, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss
