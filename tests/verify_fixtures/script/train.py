"""A training script: the model comes from model_lib, the custom loop is here, and the
step takes the model as an argument. It scales its loss (Keras 3)."""

import keras
import tensorflow as tf
from model_lib import create_classifier

keras.mixed_precision.set_dtype_policy("mixed_float16")

optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(learning_rate=0.01))
loss_fn = keras.losses.SparseCategoricalCrossentropy()


@tf.function
def train_step(model, images, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
        scaled_loss = optimizer.scale_loss(loss)
    gradients = tape.gradient(scaled_loss, model.trainable_variables)
    optimizer.apply(gradients, model.trainable_variables)
    return loss


def main():
    model = create_classifier()
    for images, labels in []:
        print(train_step(model, images, labels))


if __name__ == "__main__":
    main()
