"""The mixed-precision guide's model before its fix: it ends in a float16 softmax."""

from tensorflow import keras
from tensorflow.keras import layers
from tensorflow.keras import mixed_precision

mixed_precision.set_global_policy("mixed_float16")

num_units = 64
print(f"The model will run with {num_units} units")  # user output must not confuse the verifier


def build_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x = layers.Dense(num_units, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(num_units, activation="relu", name="dense_2")(x)
    # INCORRECT: softmax and model output will be float16, when it should be float32
    outputs = layers.Dense(10, activation="softmax", name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(loss="sparse_categorical_crossentropy", optimizer=keras.optimizers.RMSprop(), metrics=["accuracy"])
    return model
