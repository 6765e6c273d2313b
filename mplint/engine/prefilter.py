"""The cheap scans that decide whether a file is worth parsing with libcst at all.

Most Python files in a repository have nothing to do with mixed precision. Two stages,
each asking only for what the enabled rules need (`mplint.catalogue.rule_evidence`):

1. Text (`needs_parse`, C-speed substring tests, first on the raw bytes): a file is a
   candidate only if it mentions a mixed-precision token (or NumPy's `np.half`) or a
   LossScaleOptimizer method, or it mentions Keras/TensorFlow and also contains a
   float16 numerics hazard literal or a `.half` dtype, or `assume-policy` covers it
   and it mentions Keras/TensorFlow; and if the words some rule needs appear together
   (a float16 dtype *and* a policy setter or a layer `dtype=`, a hazard literal *and*
   a `def call` ...).
2. Code (`worth_parsing`): Python's own parser (`mplint.inputs.code_scan`, ~10x faster than
   libcst) reads the candidate's code, without comments and docstrings, and asks the
   same questions of identifiers, string values and where hazard literals flow.

Names are matched as the code spells them: a policy name written with escape sequences
(`"mixed_\\x66loat16"`) is not recognised. Every rule must be unable to fire on a file
these scans reject: tests/test_fixtures.py checks that against every fixture, and
tests/test_prefilter.py checks the name lists against the rules' own tables.
"""

from __future__ import annotations

from typing import Iterable

from mplint.core.float16_literals import (  # noqa: F401  (re-exported: the prefilter's API)
    FLOAT16_OVERFLOW_FROM, FLOAT16_ZERO_UP_TO, NUMBER, has_float16_hazard_literal, is_float16_hazard,
)

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


def mentions_tokens(text: str, assume_policy: bool = False) -> bool:
    """The coarse token test: a mixed-precision or loss-scaling token, or Keras with a
    `.half` dtype (MP503), a hazard literal (MP5xx) or an assumed policy."""
    if mentions_mixed_precision(text) or any(token in text for token in LOSS_SCALING_TOKENS):
        return True
    if not mentions_keras(text):
        return False
    return assume_policy or ".half" in text or has_float16_hazard_literal(text)


def needs_parse(text: str, assume_policy: bool = False, codes: Iterable[str] | None = None,
                unreadable_parts: bool = False) -> bool:
    """Stage 1: could one of the enabled rules (`codes`, default every rule) fire, judged
    by the words in the text? (See `worth_parsing` for `unreadable_parts`.)"""
    from mplint.catalogue.rule_evidence import evidence_for

    if not mentions_tokens(text, assume_policy):
        return False
    wanted = evidence_for(codes)
    return wanted is None or unreadable_parts or any(evidence.in_text(text, assume_policy) for evidence in wanted)


def worth_parsing(text: str, assume_policy: bool = False, flags: int = 0, unreadable_parts: bool = False,
                  codes: Iterable[str] | None = None) -> bool:
    """Both stages: could one of the enabled rules fire on this file? `flags` are the
    compile flags of the document (a notebook allows top-level `await`); a document with
    parts that could not be read (a notebook cell that is not Python) goes to the
    engine, which reports them, once the text stage lets it through."""
    from mplint.catalogue.rule_evidence import evidence_for

    if not mentions_tokens(text, assume_policy):
        return False
    wanted = evidence_for(codes)
    if wanted is None or unreadable_parts:
        return True  # a rule the pre-filter does not know (a plugin's, a test's) always may fire
    candidates = [evidence for evidence in wanted if evidence.in_text(text, assume_policy)]
    if not candidates:
        return False
    if any(evidence.without_code(assume_policy) for evidence in candidates):
        return True
    from mplint.inputs.code_scan import CodeScan

    scan = CodeScan.of(text, flags)
    return scan is None or any(evidence.in_code(scan, assume_policy) for evidence in candidates)


