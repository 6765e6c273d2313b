"""TF 1.x graph code, and which optimizers the mixed-precision graph rewrite accepts.

What TensorFlow 2.21 does with `tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(opt)`
(checked by tests/test_migration_claims_tf.py):

* a TF 1.x optimizer (`tf.compat.v1.train.*Optimizer`, a subclass of `tf.compat.v1.train.Optimizer`,
  or one wrapped by Horovod's `DistributedOptimizer` or TPU's `CrossShardOptimizer`): runs, with a
  deprecation warning. TF 1.x estimator and session code that uses it still works;
* a Keras 2 legacy optimizer (`tf.keras.optimizers.legacy.*`, tf-keras): runs, unless a Keras 2
  mixed policy is set (ValueError);
* any other Keras optimizer (Keras 3, or tf-keras's current ones): ValueError.

A module is TF 1.x graph code when it calls `tf.compat.v1` APIs (other than the graph rewrite
itself) or APIs only TF 1.x has at the top level (sessions, placeholders, variable scopes,
estimators, `tf.contrib`, `tf.train.*Optimizer`): there is no Keras model to move to a Keras
mixed policy, and a "use the Keras API" finding does not apply. The `tf.compat.v1` calls TF 2
Keras scripts make to configure the GPU (`ConfigProto`, `Session(config=...)`) do not count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import arg_value
from mplint.facts.target import TF1_ONLY_NAMES, TF1_ONLY_PREFIXES
from mplint.facts.version_guards import tensorflow1_only
from mplint.facts.training import GRAPH_REWRITE, TrainingLoops, optimizer_kind

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

V1 = "v1"  # a TF 1.x optimizer
LEGACY = "legacy"  # a Keras 2 legacy optimizer (tf.keras.optimizers.legacy)
KERAS = "keras"  # any other Keras optimizer

V1_BASES = frozenset({"tensorflow.compat.v1.train.Optimizer", "tensorflow.train.Optimizer"})
# Wrappers that keep the kind of the optimizer they wrap (their first argument).
_WRAPPER_NAMES = ("DistributedOptimizer", "CrossShardOptimizer", "SyncReplicasOptimizer")
_WRAPPER_MODULES = ("horovod.tensorflow.", "tensorflow.")
_LEGACY_MARKERS = (".optimizers.legacy.", ".optimizer_v2.", ".optimizers.optimizer_v2.")
_KERAS_BASES = frozenset({"keras.optimizers.Optimizer"})

# Top-level names only TF 1.x has (TF 2 keeps them under tf.compat.v1); estimators too
# (TF 2 kept `tf.estimator` until 2.15, but it is TF 1.x-style graph code).
_TF1_ONLY = TF1_ONLY_NAMES
_TF1_ONLY_PREFIXES = (*TF1_ONLY_PREFIXES, "tensorflow.estimator.")
_MAX_DEPTH = 8


def optimizer_family(facts: "ModuleFacts", expr: cst.BaseExpression | None, depth: int = 0) -> str | None:
    """V1, LEGACY or KERAS for an expression that builds or names an optimizer; None if unknown."""
    if expr is None or depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Call):
        qualified = facts.qualified(expr.func)
        if qualified is not None:
            if optimizer_kind(qualified) == V1:
                return V1
            if any(marker in qualified for marker in _LEGACY_MARKERS) \
                    and qualified.rsplit(".", 1)[-1][:1].isupper():
                return LEGACY
            if optimizer_kind(qualified) == KERAS:
                return KERAS
            if qualified.rsplit(".", 1)[-1] in _WRAPPER_NAMES and qualified.startswith(_WRAPPER_MODULES):
                return optimizer_family(facts, arg_value(expr, 0, "optimizer", "opt"), depth + 1)
        if isinstance(expr.func, cst.Name):
            cls = _module_class(facts, expr.func.value)
            if cls is not None:
                return class_family(facts, cls, depth + 1)
        return None
    if isinstance(expr, cst.Name):
        binding = facts.analysis(TrainingLoops).binding_before(expr)
        return optimizer_family(facts, binding.value, depth + 1) if binding is not None else None
    return None


def class_family(facts: "ModuleFacts", cls: cst.ClassDef, depth: int = 0) -> str | None:
    """The family of an optimizer class defined in the module, from its bases."""
    if depth > _MAX_DEPTH:
        return None
    for base in cls.bases:
        qualified = facts.qualified(base.value) or ""
        if qualified in V1_BASES or optimizer_kind(qualified) == V1:
            return V1
        if any(marker in qualified for marker in _LEGACY_MARKERS):
            return LEGACY
        if qualified in _KERAS_BASES or optimizer_kind(qualified) == KERAS:
            return KERAS
        if isinstance(base.value, cst.Name):
            parent = _module_class(facts, base.value.value)
            if parent is not None and parent is not cls:
                found = class_family(facts, parent, depth + 1)
                if found is not None:
                    return found
    return None


def _module_class(facts: "ModuleFacts", name: str) -> cst.ClassDef | None:
    if name in facts.imports.aliases:
        return None
    found = [c for c in facts.index.nodes(cst.ClassDef) if c.name.value == name]
    return found[0] if len(found) == 1 else None


# `tf.compat.v1` names TF 2 Keras scripts call to configure the GPU (`config =
# tf.compat.v1.ConfigProto(); config.gpu_options.allow_growth = True;
# tf.compat.v1.Session(config=config)`) or logging: they say nothing of graph code.
_SESSION_SETUP = frozenset(
    f"tensorflow.compat.v1.{name}"
    for name in ("ConfigProto", "GPUOptions", "Session", "InteractiveSession", "keras.backend.set_session",
                 "keras.backend.get_session", "logging.set_verbosity", "set_random_seed")
)


def is_tf1_graph_code(facts: "ModuleFacts") -> bool:
    """Whether the module is TF 1.x graph code (see the module docstring)."""
    for qualified, calls in facts.calls_by_name.items():
        if qualified in GRAPH_REWRITE or qualified.startswith("tensorflow.compat.v1.mixed_precision.") \
                or qualified in _SESSION_SETUP:
            continue
        if qualified.startswith("tensorflow.compat.v1.") or qualified in _TF1_ONLY \
                or qualified.startswith(_TF1_ONLY_PREFIXES) or optimizer_kind(qualified) == V1:
            if not all(tensorflow1_only(facts, call) for call in calls):  # else TF 1.x compatibility code
                return True
    return False
