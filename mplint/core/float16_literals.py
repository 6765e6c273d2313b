"""Number literals float16 cannot hold: the text test the prefilter, the code scan, the
rules' evidence and the numerics rules share (no parse, no import of the rest of mplint)."""

from __future__ import annotations

import re

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
