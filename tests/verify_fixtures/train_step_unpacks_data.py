"""A Keras 3 subclassed model whose train_step starts with `x, y = data`, as the
TensorFlow custom train_step guide writes it (and scales its loss): it trains with
model.fit, so it must verify."""

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
        self.optimizer.apply(gradients, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def build_model():
    inputs = keras.Input(shape=(32,))
    x = keras.layers.Dense(64, activation="relu")(inputs)
    outputs = keras.layers.Dense(8, dtype="float32")(x)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    return model
