"""A classifier trained under mixed_float16 whose softmax output stays float16."""

import tensorflow as tf
from tensorflow.keras import layers

encoder = layers.Dense(256, activation="relu")  # created before the policy: float32

tf.keras.mixed_precision.set_global_policy("mixed_float16")

inputs = tf.keras.Input(shape=(784,))
x = encoder(inputs)
x = layers.Dense(256, activation="relu")(x)
outputs = layers.Dense(10, activation="softmax")(x)
model = tf.keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
