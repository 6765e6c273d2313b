"""The model builder a training script imports (its name is not an entry point's)."""

import keras


def create_classifier():
    inputs = keras.Input(shape=(32,), name="features")
    x = keras.layers.Dense(64, activation="relu")(inputs)
    x = keras.layers.Dense(16)(x)
    outputs = keras.layers.Activation("softmax", dtype="float32")(x)
    return keras.Model(inputs, outputs)
