"""Mixed layers inside a float32 model object: compile() does not wrap the optimizer, so
fit() never scales the loss."""

import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("float32")


def create_model():
    inputs = tf.keras.Input(shape=(16,), name="features")
    x = tf.keras.layers.Dense(32, activation="relu", dtype="mixed_float16")(inputs)
    x = tf.keras.layers.Dense(8, dtype="mixed_float16")(x)
    outputs = tf.keras.layers.Activation("softmax", dtype="float32", name="probabilities")(x)
    model = tf.keras.Model(inputs, outputs)
    model.compile(optimizer=tf.keras.optimizers.Adam(), loss="categorical_crossentropy")
    return model
