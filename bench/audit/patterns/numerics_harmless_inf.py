# category: numerics:harmless-inf (debatable; no rule change proposed)
# origin: keras-hub keras_hub/src/models/rwkv7/rwkv7_layer.py (MP501)
# reported on main: MP501 `ops.where(padding_mask, w, -1e9)`, fix `w.dtype.min` (breaks keras.ops on JAX/torch)
# right: -1e9 becomes -inf in float16, but w only feeds exp(-exp(w)): -inf gives exactly
# what -1e9 gives in float32 (decay 1), no NaN
import keras
from keras import ops


class TimeMix(keras.layers.Layer):
    def call(self, w, padding_mask):
        w = ops.where(padding_mask, w, -1e9)
        return ops.exp(-ops.exp(w))
