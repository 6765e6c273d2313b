"""loop_unscaled.py fixed by hand for Keras 3: a LossScaleOptimizer and scale_loss."""

import keras
import tensorflow as tf

keras.mixed_precision.set_dtype_policy("mixed_float16")


def build_model():
    inputs = keras.Input(shape=(32,), name="features")
    x = keras.layers.Dense(64, activation="relu")(inputs)
    x = keras.layers.Dense(16)(x)
    outputs = keras.layers.Activation("softmax", dtype="float32")(x)
    return keras.Model(inputs, outputs)


model = build_model()
optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.Adam(learning_rate=1e-3))
loss_fn = keras.losses.SparseCategoricalCrossentropy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        predictions = model(x, training=True)
        loss = loss_fn(y, predictions)
        scaled_loss = optimizer.scale_loss(loss)
    gradients = tape.gradient(scaled_loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss
