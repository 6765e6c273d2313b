"""A name imported from two places is, where it is read, the module of the last of its
imports before the read (fresh28: `prec` read between an experimental and a stable import
was taken for the stable module, and the message claimed an AttributeError)."""

from __future__ import annotations

from tests.support.engine import lint_and_fix

BETWEEN = """\
import tensorflow as tf


def load(config):
    if config.precision == 16:
        from tensorflow.keras.mixed_precision import experimental as prec
        prec.set_policy(prec.Policy("mixed_float16"))
    from tensorflow.keras import mixed_precision as prec
    return prec.global_policy()
"""

FALLBACK = """\
try:
    from tensorflow.keras.mixed_precision import experimental as prec
except ImportError:
    from tensorflow.keras import mixed_precision as prec
prec.set_policy("mixed_float16")
"""


def test_a_read_between_two_imports_is_the_earlier_module():
    findings, fixed = lint_and_fix(BETWEEN, frozenset({"MP401"}), "keras2")
    (renamed,) = [f for f in findings if "`set_policy` is `set_global_policy`" in f.message]
    assert "never had" not in renamed.message  # the experimental module has `set_policy`
    assert "prec.set_global_policy(" in fixed


def test_a_read_after_both_imports_is_the_last_module():
    findings, _ = lint_and_fix(FALLBACK, frozenset({"MP401"}), "keras2")
    (renamed,) = [f for f in findings if "`set_policy` is `set_global_policy`" in f.message]
    assert "the stable `mixed_precision` module never had `set_policy`" in renamed.message
