"""Multiplies activations past float16's maximum (65504) in the middle of the model."""

import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")


def build_model():
    inputs = tf.keras.Input(shape=(16,), name="features")
    x = tf.keras.layers.Dense(32)(inputs)
    x = tf.keras.layers.Lambda(lambda t: t * 1.0e6, name="amplify")(x)
    x = tf.keras.layers.Dense(8)(x)
    outputs = tf.keras.layers.Activation("linear", dtype="float32", name="values")(x)
    return tf.keras.Model(inputs, outputs)
