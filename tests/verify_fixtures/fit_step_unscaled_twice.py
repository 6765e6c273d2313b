"""A Keras 3 train_step, driven by fit, that scales the loss and then divides the
gradients by 32768 itself before `apply`, which unscales them again: every update is
32768x too small. It must fail loss-scaling (issue #27)."""

import keras
import tensorflow as tf

keras.mixed_precision.set_dtype_policy("mixed_float16")


class CustomModel(keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
            scaled_loss = self.optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled_loss, self.trainable_variables)
        gradients = [g / 32768.0 for g in gradients]
        self.optimizer.apply(gradients, self.trainable_variables)
        return {"loss": loss}


def build_model():
    inputs = keras.Input(shape=(32,))
    x = keras.layers.Dense(64, activation="relu")(inputs)
    outputs = keras.layers.Dense(8, dtype="float32")(x)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    return model
