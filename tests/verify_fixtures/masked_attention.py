"""A Keras 3 attention layer written with keras.ops that fills padded positions with
-1e9 before the softmax, as keras-hub's T5 did: -1e9 overflows float16 to -inf, and a
fully padded sequence then gets softmax(all -inf) = NaN under mixed_float16. Float32
is fine. Verify must see it (its inputs carry padding) and name the layer."""

import keras
from keras import layers, ops

keras.mixed_precision.set_global_policy("mixed_float16")
MASK_FILL = -1e9


class MaskedSelfAttention(layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.query = layers.Dense(units)
        self.key = layers.Dense(units)

    def call(self, x, padding_mask):
        scores = ops.matmul(self.query(x), ops.transpose(self.key(x), (0, 2, 1)))
        keep = ops.cast(padding_mask[:, None, :], "bool")
        scores = ops.where(keep, scores, ops.cast(MASK_FILL, scores.dtype))
        return ops.matmul(ops.softmax(scores, axis=-1), x)


def build_model():
    tokens = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    mask = keras.Input(shape=(None,), dtype="int32", name="padding_mask")
    x = layers.Embedding(64, 16)(tokens)
    x = MaskedSelfAttention(16, name="attention")(x, mask)
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(8, dtype="float32")(x)
    model = keras.Model({"token_ids": tokens, "padding_mask": mask}, outputs)
    model.compile(optimizer="adam", loss="mse")
    return model
