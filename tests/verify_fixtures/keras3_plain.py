"""Backend-neutral Keras 3 code (keras.ops only, no backend set): it runs on TensorFlow,
JAX or torch, whichever --backend picks."""

import keras
from keras import ops

keras.mixed_precision.set_dtype_policy("mixed_float16")


def build_model():
    inputs = keras.Input(shape=(16,))
    x = keras.layers.Dense(32, activation="relu")(inputs)
    x = keras.layers.Lambda(lambda t: ops.clip(t, 0.0, 6.0))(x)
    outputs = keras.layers.Dense(8, dtype="float32")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    return model
