"""A two-headed model: the class head ends in float32, the score head stays float16."""

import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")


def make_model():
    inputs = tf.keras.Input(shape=(24,), name="features")
    hidden = tf.keras.layers.Dense(32, activation="relu", name="trunk")(inputs)
    logits = tf.keras.layers.Dense(8, name="class_logits")(hidden)
    classes = tf.keras.layers.Activation("softmax", dtype="float32", name="classes")(logits)
    score = tf.keras.layers.Dense(1, name="score")(hidden)  # float16 output
    return tf.keras.Model(inputs, {"classes": classes, "score": score})
