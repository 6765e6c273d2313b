"""Fails while being imported, in user code two frames deep."""

import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")


def read_config():
    settings = {"units": 64}
    return settings["layers"]


CONFIG = read_config()


def build_model():
    return tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(8)])
