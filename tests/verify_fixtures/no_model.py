"""Helpers only: no build_model(), create_model(), get_model(), make_model() or `model`."""

import tensorflow as tf


def normalize(images):
    return tf.cast(images, tf.float32) / 255.0
