"""The cheap text scan that decides whether a file is worth parsing at all.

Most Python files in a repository have nothing to do with mixed precision. A file is
parsed only if it mentions a mixed-precision token (or NumPy's `np.half`) or a
LossScaleOptimizer method, or it mentions Keras/TensorFlow and also contains a float16
numerics hazard literal (for MP5xx in library layer code that sets no policy) or a
`.half` dtype (MP503), or
`assume-policy` covers it and it mentions Keras/TensorFlow.
Plain substring tests (C-speed) do most of the work; the literal scan runs only on
files that mention Keras/TensorFlow. Every rule must be unable to fire on a file this
scan rejects: tests/test_fixtures.py checks that against every fixture.
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
    "np.half",  # NumPy's other name for float16 (MP503)
    "numpy.half",
)
# The LossScaleOptimizer API, also where the policy is set in another module (a
# `train_step` using the compiled optimizer, MP203/MP404).
LOSS_SCALING_TOKENS = (".get_scaled_loss(", ".scale_loss(", "get_unscaled_gradients")
KERAS_TOKENS = ("keras", "tensorflow")
# A Python int/float literal (underscores allowed; hex, octal, binary ints), not part
# of a name, a longer number or an imaginary literal.
NUMBER = re.compile(
    r"(?<![\w.])(?:0[xXoObB](?:_?[0-9a-fA-F])+"
    r"|(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?)(?![\w.])"
)
# float16 turns magnitudes of 65520 and above into inf (its max is 65504) and those of
# 2**-25 (2.98e-08) and below into 0: the exact round-to-nearest-even thresholds.
FLOAT16_OVERFLOW_FROM = 65520.0
FLOAT16_ZERO_UP_TO = 2.0**-25


_BYTE_TOKENS = tuple(t.encode() for t in (*MIXED_PRECISION_TOKENS, *LOSS_SCALING_TOKENS, *KERAS_TOKENS))


def may_need_parse(data: bytes) -> bool:
    """On the raw bytes, before decoding: could `needs_parse` (or the policy-inheritance
    scan) want this file? Every token is ASCII, so this holds for any ASCII-compatible
    encoding; a file without any of them is never decoded."""
    return any(token in data for token in _BYTE_TOKENS)


def mentions_mixed_precision(text: str) -> bool:
    return any(token in text for token in MIXED_PRECISION_TOKENS)


def mentions_keras(text: str) -> bool:
    return any(token in text for token in KERAS_TOKENS)


def is_float16_hazard(magnitude: float) -> bool:
    """A (non-negative) literal value float16 cannot hold: it becomes inf or 0."""
    return magnitude >= FLOAT16_OVERFLOW_FROM or 0.0 < magnitude <= FLOAT16_ZERO_UP_TO


def has_float16_hazard_literal(text: str) -> bool:
    """Whether `text` spells a number literal that float16 turns into inf or 0 (the
    literal as written, without its sign: `-1e9` is `-` and `1e9`)."""
    for match in NUMBER.finditer(text):
        literal = match.group()
        # below 5 characters without an exponent: at most 9999, at least .0001
        if len(literal) < 5 and "e" not in literal and "E" not in literal:
            continue
        digits = literal.replace("_", "")
        try:
            value = float(int(digits, 0)) if digits[1:2] in ("x", "X", "o", "O", "b", "B") else float(digits)
        except (ValueError, OverflowError):  # e.g. 0b12: not a number Python accepts
            continue
        if is_float16_hazard(value):
            return True
    return False


def needs_parse(text: str, assume_policy: bool = False) -> bool:
    if mentions_mixed_precision(text) or any(token in text for token in LOSS_SCALING_TOKENS):
        return True
    if not mentions_keras(text):
        return False
    # `tf.half`/`np.half` (float16's other name) for MP503, or a hazard literal for MP5xx
    return assume_policy or ".half" in text or has_float16_hazard_literal(text)
