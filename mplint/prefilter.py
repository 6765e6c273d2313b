"""The cheap text scan that decides whether a file is worth parsing at all.

Most Python files in a repository have nothing to do with mixed precision. A file is
parsed only if it mentions a mixed-precision token, or it mentions Keras/TensorFlow
and also contains a float16 numerics hazard literal (for MP5xx in library layer code
that sets no policy), or `assume-policy` covers it and it mentions Keras/TensorFlow.
Plain substring tests (C-speed) do most of the work; one regex runs only on files
that mention Keras/TensorFlow. Every rule must be unable to fire on a file this scan
rejects: tests/test_fixtures.py checks that against every fixture.
"""

from __future__ import annotations

import re

MIXED_PRECISION_TOKENS = (
    "float16",  # also mixed_float16, mixed_bfloat16, bfloat16
    "mixed_precision",
    "LossScale",
    "set_global_policy",
    "set_dtype_policy",
    "set_policy",
    "graph_rewrite",
    "AUTO_MIXED_PRECISION",
    "set_floatx",
    "DTypePolicy",
    "TF_USE_LEGACY_KERAS",
)
KERAS_TOKENS = ("keras", "tensorflow")
# Literals float16 cannot hold: magnitudes >= 1e5 (max is 65504) or below ~6e-8.
NUMERICS_HAZARD = re.compile(
    r"\d[eE]\+?0*(?:[5-9]|[1-9]\d)\b|\d{6,}|\d[eE]-0*(?:[89]|[1-9]\d)\b"
)


def mentions_mixed_precision(text: str) -> bool:
    return any(token in text for token in MIXED_PRECISION_TOKENS)


def mentions_keras(text: str) -> bool:
    return any(token in text for token in KERAS_TOKENS)


def needs_parse(text: str, assume_policy: bool = False) -> bool:
    if mentions_mixed_precision(text):
        return True
    if not mentions_keras(text):
        return False
    return assume_policy or NUMERICS_HAZARD.search(text) is not None
