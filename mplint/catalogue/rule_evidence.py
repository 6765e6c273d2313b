"""What each rule needs to see in a file before it can fire, asked of the text (substring
tests, C-speed) and of the code (`mplint.inputs.code_scan`: identifiers, string values, where
hazard literals flow). The pre-filter (`mplint.engine.prefilter`) parses a file with libcst only
if an enabled rule's evidence is there; a question answered on the text must never be
stricter than the same question on the code.

The names are the last part of what the rules resolve (`set_global_policy` for
`keras.mixed_precision.set_global_policy` however it is imported): an import or an
attribute always spells it in the code. tests/test_prefilter.py checks these lists
against the rules' own tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from mplint.core.float16_literals import has_float16_hazard_literal

MIXED_POLICY_NAMES = frozenset({"mixed_float16", "mixed_bfloat16"})
HALF_STRINGS = frozenset({"float16", "bfloat16"})
HALF_NAMES = frozenset({"float16", "bfloat16", "half"})  # tf.float16, np.half, ...
KERAS_ROOTS = frozenset({"keras", "tensorflow", "tf_keras", "keras_core"})  # where Keras layers can be imported from
POLICY_SETTERS = frozenset({"set_global_policy", "set_dtype_policy", "set_policy", "set_floatx"})
FLAG_CHOICES = frozenset({"choices", "DEFINE_enum"})  # argparse and absl flags with a fixed set of values
# LossScaleOptimizer methods (MP203, MP404; MP2xx under a mixed policy are let through
# by the policy name), and the constructor MP404 checks for `dynamic=False`.
LOSS_SCALE_METHODS = frozenset({"get_scaled_loss", "get_unscaled_gradients", "scale_loss"})
LOSS_SCALE_OPTIMIZER = "LossScaleOptimizer"
GRAPH_REWRITE_NAMES = frozenset({"enable_mixed_precision_graph_rewrite"})
AUTO_MIXED_PRECISION_ENV = "TF_ENABLE_AUTO_MIXED_PRECISION"
# The TF 2.1-2.3 API (MP401): loss-scale objects, the renamed `set_policy`, the
# `experimental` module, and policies given a loss scale (`Policy(name, loss_scale)`,
# `loss_scale=`, `policy.loss_scale` of a policy object or the global policy).
OLD_API_NAMES = frozenset({"LossScale", "DynamicLossScale", "FixedLossScale", "set_policy"})
POLICY_CLASSES = frozenset({"Policy", "DTypePolicy", "FloatDTypePolicy"})
POLICY_HOLDERS = POLICY_CLASSES | {"global_policy", "dtype_policy", "LossScaleOptimizer"}
# Where MP503 looks for input pipelines: `Dataset.map` functions (a `.map` given
# tf.data's keywords, or on a tf.data dataset: `tf.data.*`, a dataset utility, tf.data-only
# methods), data given to a Keras model's training methods (a model: compiled, or built by
# a model constructor), data given to `Dataset.from_tensor_slices`.
DATASET_EVIDENCE = frozenset({"num_parallel_calls", "deterministic", "data", "tensorflow_datasets",
                              "image_dataset_from_directory", "text_dataset_from_directory",
                              "timeseries_dataset_from_array", "audio_dataset_from_directory",
                              "prefetch", "padded_batch", "unbatch", "interleave", "with_options"})
TRAINING_METHODS = frozenset({"fit", "evaluate", "predict", "train_on_batch", "test_on_batch", "predict_on_batch",
                              "fit_generator"})
MODEL_EVIDENCE = frozenset({"compile", "Sequential", "Model", "load_model", "clone_model", "applications"})
DATA_SOURCES = frozenset({"from_tensor_slices", "from_tensors"})
# Calls whose arguments MP501/MP502 check: where/switch fills, full_like, conversions
# with a dtype, floors, ops and layers that add their epsilon in float16.
HAZARD_USE_CALLS = frozenset({"where", "where_v2", "switch", "full_like", "constant", "cast", "convert_to_tensor",
                              "maximum", "clip_by_value", "clip", "l2_normalize", "batch_normalization",
                              "GroupNormalization", "InstanceNormalization"})
# Code MP501/MP502 check besides the `call` of layer classes: functions given to Lambda
# layers, and the float16 normalization layers (anywhere); @tf.function code only under
# a float16 policy.
HAZARD_REGION_NAMES = frozenset({"Lambda", "GroupNormalization", "InstanceNormalization"})

# Two string literals next to each other: `"mixed_" "float16"` is one string.
_ADJACENT_STRINGS = re.compile(r"""["']\s+[rRbBuUfF]{0,2}["']""")
_CALL_METHOD = re.compile(r"\bdef\s+call\b")


def _any(text: str, words: Iterable[str]) -> bool:
    return any(word in text for word in words)


# -- a mixed policy in force (MP101, MP102, MP104, MP201, MP202, MP205, MP3xx) -------------

def _mixed_policy_text(text: str, assumed: bool) -> bool:
    return assumed or _any(text, MIXED_POLICY_NAMES) or ("mixed" in text and _ADJACENT_STRINGS.search(text) is not None)


def _mixed_policy(scan, assumed: bool) -> bool:
    """Assumed, or a mixed policy's name is a string value of the code."""
    return assumed or scan.strings_any(MIXED_POLICY_NAMES)


# -- MP103: float16/bfloat16 variables -------------------------------------------------

def _half_text(text: str) -> bool:
    return "float16" in text or "half" in text


def _half(scan) -> bool:
    return scan.strings_any(HALF_STRINGS) or scan.names_any(HALF_NAMES)


def _float16_variables_text(text: str, assumed: bool) -> bool:
    return _half_text(text) and (_any(text, POLICY_SETTERS) or ("dtype" in text and "layers" in text))


def _float16_variables(scan, assumed: bool) -> bool:
    """A float16/bfloat16 dtype, and a policy setter or a Keras layer given a `dtype=`
    that may be one (a layer: a class under keras/tensorflow/tf_keras)."""
    callees = scan.half_dtype_callees
    if scan.names_any(FLAG_CHOICES):  # any attribute may take the choices of a flag of its name
        callees = [*callees, *scan.flag_dtype_callees]
    return _half(scan) and (
        scan.names_any(POLICY_SETTERS) or any(scan.may_resolve_into(callee, KERAS_ROOTS) for callee in callees)
    )


# -- MP203, MP404: the LossScaleOptimizer API --------------------------------------------

def _keras2_scaling_text(text: str, assumed: bool) -> bool:
    return "get_scaled_loss" in text


def _keras2_scaling(scan, assumed: bool) -> bool:
    return "get_scaled_loss" in scan.identifiers


def _loss_scale_mismatch_text(text: str, assumed: bool) -> bool:
    return _any(text, LOSS_SCALE_METHODS) or LOSS_SCALE_OPTIMIZER in text


def _loss_scale_mismatch(scan, assumed: bool) -> bool:
    return scan.names_any(LOSS_SCALE_METHODS) or (
        LOSS_SCALE_OPTIMIZER in scan.identifiers
        and ("dynamic" in scan.identifiers or scan.called_with_two_positional((LOSS_SCALE_OPTIMIZER,)))
    )


# -- MP206, MP207: Keras 3 training steps on any backend -------------------------------
# (the hints rules/backend_steps.py asks of the text before it looks for steps)

JAX_TORCH_GRADIENT_NAMES = frozenset({"value_and_grad", "grad", "backward", "autograd"})
SCALED_LOSS_NAMES = frozenset({"get_scaled_loss", "scale_loss", "compute_loss_and_updates"})


def _jax_torch_step_text(text: str, assumed: bool) -> bool:
    return _any(text, JAX_TORCH_GRADIENT_NAMES)


def _jax_torch_step(scan, assumed: bool) -> bool:
    """A JAX or torch gradient: `jax.value_and_grad`, `jax.grad`, `loss.backward()`,
    `torch.autograd`."""
    return scan.names_any(JAX_TORCH_GRADIENT_NAMES)


def _scaled_loss_text(text: str, assumed: bool) -> bool:
    return _any(text, SCALED_LOSS_NAMES)


def _scaled_loss(scan, assumed: bool) -> bool:
    return scan.names_any(SCALED_LOSS_NAMES)


# -- MP204, MP403: the graph rewrite -----------------------------------------------------

def _graph_rewrite_text(text: str, assumed: bool) -> bool:
    return _any(text, GRAPH_REWRITE_NAMES)


def _graph_rewrite(scan, assumed: bool) -> bool:
    return scan.names_any(GRAPH_REWRITE_NAMES)


def _graph_rewrite_api_text(text: str, assumed: bool) -> bool:
    return _any(text, GRAPH_REWRITE_NAMES) or AUTO_MIXED_PRECISION_ENV in text


def _graph_rewrite_api(scan, assumed: bool) -> bool:
    return scan.names_any(GRAPH_REWRITE_NAMES) or AUTO_MIXED_PRECISION_ENV in scan.strings


# -- MP401: the TF 2.1-2.3 API -------------------------------------------------------------

def _old_api_text(text: str, assumed: bool) -> bool:
    return (
        _any(text, OLD_API_NAMES)
        or ("experimental" in text and "mixed_precision" in text)
        or _any(text, POLICY_CLASSES)  # `Policy(name, loss_scale)`, `loss_scale=`, `.loss_scale`
        or ("loss_scale" in text and _any(text, POLICY_HOLDERS))
    )


def _old_api(scan, assumed: bool) -> bool:
    identifiers = scan.identifiers
    return (
        scan.names_any(OLD_API_NAMES)
        or {"experimental", "mixed_precision"} <= identifiers
        or ("loss_scale" in identifiers and scan.names_any(POLICY_HOLDERS))
        or scan.called_with_two_positional(POLICY_CLASSES)
    )


# -- MP501, MP502: constants float16 cannot hold --------------------------------------------

def _float16_policy_text(text: str, assumed: bool) -> bool:
    return _mixed_policy_text(text, assumed) or (_half_text(text) and _any(text, POLICY_SETTERS))


def _float16_policy(scan, assumed: bool) -> bool:
    """A float16 policy (mixed or pure) can be set or assumed."""
    return _mixed_policy(scan, assumed) or (_half(scan) and scan.names_any(POLICY_SETTERS))


def _float16_constants_text(text: str, assumed: bool) -> bool:
    region = (
        _CALL_METHOD.search(text) is not None
        or _any(text, HAZARD_REGION_NAMES)
        or ("function" in text and _float16_policy_text(text, assumed))
    )
    return region and has_float16_hazard_literal(text)


def _float16_constants(scan, assumed: bool) -> bool:
    if not scan.hazards:
        return False
    region = (
        scan.layer_like
        or scan.names_any(HAZARD_REGION_NAMES)
        or ("function" in scan.identifiers and _float16_policy(scan, assumed))  # @tf.function code
    )
    return region and scan.hazard_reaches(HAZARD_USE_CALLS)


# -- MP503: float16 input pipelines ---------------------------------------------------------

def _float16_pipeline_text(text: str, assumed: bool) -> bool:
    return ("float16" in text or "half" in text) and (
        ("map" in text and _any(text, DATASET_EVIDENCE))
        or (_any(text, TRAINING_METHODS) and _any(text, MODEL_EVIDENCE))
        or _any(text, DATA_SOURCES)
    )


def _float16_pipeline(scan, assumed: bool) -> bool:
    if not ("float16" in scan.strings or scan.names_any(("float16", "half"))):
        return False
    identifiers = scan.identifiers
    return (
        ("map" in identifiers and scan.names_any(DATASET_EVIDENCE))
        or (scan.names_any(TRAINING_METHODS) and scan.names_any(MODEL_EVIDENCE))
        or scan.names_any(DATA_SOURCES)
    )


@dataclass(frozen=True)
class Evidence:
    """What a group of rules needs: asked of the text, then of the code."""

    codes: frozenset[str]
    text: Callable[[str, bool], bool]
    code: Callable[..., bool]
    decided_by_assumption: bool = False  # an assumed policy is all these rules need

    def in_text(self, text: str, assumed: bool) -> bool:
        return self.text(text, assumed)

    def in_code(self, scan, assumed: bool) -> bool:
        return self.code(scan, assumed)

    def without_code(self, assumed: bool) -> bool:
        """Whether the answer is yes without reading the code."""
        return assumed and self.decided_by_assumption


EVIDENCE = (
    # rules the engine runs only with a mixed policy in force
    Evidence(frozenset({"MP101", "MP102", "MP104", "MP201", "MP202", "MP205", "MP301", "MP302", "MP303", "MP304"}),
             _mixed_policy_text, _mixed_policy, decided_by_assumption=True),
    Evidence(frozenset({"MP103"}), _float16_variables_text, _float16_variables),
    Evidence(frozenset({"MP203"}), _keras2_scaling_text, _keras2_scaling),
    Evidence(frozenset({"MP204"}), _graph_rewrite_text, _graph_rewrite),
    Evidence(frozenset({"MP206"}), _jax_torch_step_text, _jax_torch_step),
    Evidence(frozenset({"MP207"}), _scaled_loss_text, _scaled_loss),
    Evidence(frozenset({"MP401"}), _old_api_text, _old_api),
    Evidence(frozenset({"MP403"}), _graph_rewrite_api_text, _graph_rewrite_api),
    Evidence(frozenset({"MP404"}), _loss_scale_mismatch_text, _loss_scale_mismatch),
    Evidence(frozenset({"MP501", "MP502"}), _float16_constants_text, _float16_constants),
    Evidence(frozenset({"MP503"}), _float16_pipeline_text, _float16_pipeline),
)
KNOWN_CODES = frozenset().union(*(e.codes for e in EVIDENCE))


def evidence_for(codes: Iterable[str] | None) -> list[Evidence] | None:
    """The evidence the enabled rules need (every rule's when `codes` is None); None if
    a rule without evidence here (a plugin's, a test's) is enabled."""
    if codes is None:
        return list(EVIDENCE)
    wanted = set(codes)
    if not wanted <= KNOWN_CODES:
        return None
    return [e for e in EVIDENCE if e.codes & wanted]
