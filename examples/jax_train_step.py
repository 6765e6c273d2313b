"""A Keras 3 model with the JAX custom train_step of the keras.io guide, under
mixed_float16: it never scales its loss, so compile's LossScaleOptimizer divides its
gradients by 32768 (MP206). `mplint check --fix --verify` fixes it and proves it on JAX."""

import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras

keras.mixed_precision.set_dtype_policy("mixed_float16")


class CustomModel(keras.Model):
    def compute_loss_and_updates(self, trainable_variables, non_trainable_variables, x, y, training=False):
        y_pred, non_trainable_variables = self.stateless_call(
            trainable_variables, non_trainable_variables, x, training=training
        )
        loss = self.compute_loss(x, y, y_pred)
        return loss, (y_pred, non_trainable_variables)

    def train_step(self, state, data):
        trainable_variables, non_trainable_variables, optimizer_variables, metrics_variables = state
        x, y = data
        grad_fn = jax.value_and_grad(self.compute_loss_and_updates, has_aux=True)
        (loss, (y_pred, non_trainable_variables)), grads = grad_fn(
            trainable_variables, non_trainable_variables, x, y, training=True
        )
        trainable_variables, optimizer_variables = self.optimizer.stateless_apply(
            optimizer_variables, grads, trainable_variables
        )
        new_metrics_variables, logs = [], {}
        for metric in self.metrics:
            start = len(new_metrics_variables)
            variables = metrics_variables[start : start + len(metric.variables)]
            if metric.name == "loss":
                variables = metric.stateless_update_state(variables, loss)
            else:
                variables = metric.stateless_update_state(variables, y, y_pred)
            logs[metric.name] = metric.stateless_result(variables)
            new_metrics_variables += variables
        state = (trainable_variables, non_trainable_variables, optimizer_variables, new_metrics_variables)
        return logs, state


def build_model():
    inputs = keras.Input(shape=(32,))
    x = keras.layers.Dense(64, activation="relu")(inputs)
    outputs = keras.layers.Dense(8, dtype="float32")(x)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    return model
