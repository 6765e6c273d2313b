# category: numerics:no-mixed-policy (debatable)
# origin: fastestimator apphub/image_generation/pggan/pggan_tf.py (MP502 twice)
# reported on main: MP502 on the 1e-8 epsilons of two layers
# right: debatable: layer code, but of an application that never enables mixed
# precision (no policy, no fe.build(mixed_precision=True)); a library layer would be true
import tensorflow as tf
from tensorflow.keras import layers


class PixelNormalization(layers.Layer):
    def __init__(self, eps=1e-8):
        super().__init__()
        self.eps = eps

    def call(self, inputs):
        return inputs * tf.math.rsqrt(tf.reduce_mean(tf.square(inputs), axis=-1, keepdims=True) + self.eps)


def build_generator():
    return tf.keras.Sequential([layers.Dense(64), PixelNormalization()])
