"""A small image classifier under mixed_float16 whose softmax output stays float16.

    mplint verify examples/verify_model.py                      # fails output-dtype
    mplint check --fix --unsafe-fixes --verify examples/verify_model.py
"""

import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")


def build_model():
    inputs = tf.keras.Input(shape=(28, 28, 1), name="image")
    x = tf.keras.layers.Conv2D(32, 3, activation="relu")(inputs)
    x = tf.keras.layers.MaxPooling2D()(x)
    x = tf.keras.layers.Flatten()(x)
    x = tf.keras.layers.Dense(128, activation="relu")(x)
    outputs = tf.keras.layers.Dense(10, activation="softmax", name="probabilities")(x)
    model = tf.keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model
