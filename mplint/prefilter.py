"""The cheap text scan that decides whether a file is worth parsing at all.

Most Python files in a repository have nothing to do with mixed precision. A file is
parsed only if it mentions a mixed-precision token or a LossScaleOptimizer method, or it
mentions Keras/TensorFlow and also contains a float16 numerics hazard literal (for MP5xx
in library layer code that sets no policy), or `assume-policy` covers it and it mentions Keras/TensorFlow.
Every rule must be unable to fire on a file this scan rejects: `tests/test_prefilter.py`
checks that against every fixture.
"""

from __future__ import annotations

import re

MIXED_PRECISION = re.compile(
    r"mixed_precision|mixed_float16|mixed_bfloat16|float16|LossScale|set_dtype_policy|"
    r"set_global_policy|set_policy|graph_rewrite|AUTO_MIXED_PRECISION|set_floatx|DTypePolicy|"
    r"TF_USE_LEGACY_KERAS"
)
# The LossScaleOptimizer API, also where the policy is set in another module (a
# `train_step` using the compiled optimizer, MP203/MP404).
LOSS_SCALING = re.compile(r"\.(?:get_scaled_loss|scale_loss)\s*\(|get_unscaled_gradients")
KERAS = re.compile(r"keras|tensorflow|\btf\b")
# Literals float16 cannot hold: magnitudes >= 1e5 (max is 65504) or below ~6e-8.
NUMERICS_HAZARD = re.compile(
    r"\d[eE]\+?0*(?:[5-9]|[1-9]\d)\b|\d{6,}|\d[eE]-0*(?:[89]|[1-9]\d)\b"
)


def needs_parse(text: str, assume_policy: bool = False) -> bool:
    if MIXED_PRECISION.search(text) or LOSS_SCALING.search(text):
        return True
    if KERAS.search(text) is None:
        return False
    return assume_policy or NUMERICS_HAZARD.search(text) is not None
