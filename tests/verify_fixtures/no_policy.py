"""Sets no policy: the verifier builds it under --policy (default mixed_float16)."""

import tensorflow as tf


def get_model():
    inputs = tf.keras.Input(shape=(16,), name="features")
    x = tf.keras.layers.Dense(32, activation="relu")(inputs)
    x = tf.keras.layers.Dense(8)(x)
    outputs = tf.keras.layers.Activation("linear", dtype="float32", name="values")(x)
    return tf.keras.Model(inputs, outputs)
