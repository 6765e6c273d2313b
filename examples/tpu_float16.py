"""A TPU training script that picked the GPU policy, and a layer with float16 weights."""

import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)

tf.keras.mixed_precision.set_global_policy("mixed_float16")

with strategy.scope():
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(1024, activation="relu"),
            tf.keras.layers.Dense(1024, activation="relu", dtype="float16"),  # float16 weights
            tf.keras.layers.Dense(10),
            tf.keras.layers.Activation("softmax", dtype="float32"),
        ]
    )
