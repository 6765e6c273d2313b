"""train_step that unpacks with keras.utils.unpack_x_y_sample_weight, and forgets to
scale its loss: verify runs it and measures the unscaled loss."""

import keras
import tensorflow as tf

keras.mixed_precision.set_dtype_policy("mixed_float16")


class CustomModel(keras.Model):
    def train_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        return {"loss": loss}


def build_model():
    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(8, dtype="float32")(keras.layers.Dense(64, activation="relu")(inputs))
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    return model
