"""Networks whose every layer is pinned to float32: their gradients are float32.

    class QNetwork(network.Network):
        def __init__(self, ...):
            self._trunk = tf.keras.Sequential([tf.keras.layers.Dense(256, dtype=tf.float32)])
            self._value = tf.keras.layers.Dense(1, dtype=tf.float32)
    ...
    grads = tape.gradient(loss, self._q_network.trainable_variables)   # self._q_network = QNetwork(...)

A layer given `dtype="float32"` computes and keeps its variables in float32 whatever the
global policy: the gradients of its variables are float32 and cannot underflow, so a loop
that trains only such layers needs no loss scaling under mixed_float16. The network is
known where the variables are `<network>.trainable_variables` (or `trainable_weights`) of an
attribute that the class's `__init__` binds once to a construction of a class of this
module, and that class's `__init__` makes nothing but Keras layers pinned to float32 or
float64 (or layers without float variables), `Sequential` containers of them, regularisers,
initialisers and constraints, and builtins. Anything else it calls or keeps (another
model, a parameter, `add_weight`, a `build` method, layers or variables made in another
method, a base class of the project) leaves the network unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import arg_value
from mplint.facts.layer_variables import owns_no_float_variables
from mplint.facts.receivers import construction_of_attribute

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts
    from mplint.facts.training import GradientStep

_VARIABLE_LISTS = frozenset({"trainable_variables", "trainable_weights"})
_WIDE = frozenset({"float32", "float64"})
_HELPER_MODULES = ("keras.regularizers.", "keras.initializers.", "keras.constraints.")
_CONTAINERS = frozenset({"keras.Sequential", "keras.models.Sequential"})
_BUILTINS = frozenset({"int", "float", "bool", "str", "len", "range", "list", "tuple", "dict", "min", "max", "super",
                       "isinstance", "enumerate", "zip", "print"})


def trains_only_float32_layers(facts: ModuleFacts, step: GradientStep) -> bool:
    """Whether the variables `step` differentiates belong to a network of this module whose
    every layer is pinned to float32 (see the module's doc)."""
    if step.kind != "tape":
        return False
    sources = arg_value(step.call, 1, "sources")
    if not (isinstance(sources, cst.Attribute) and sources.attr.value in _VARIABLE_LISTS):
        return False
    holder = sources.value
    if not (isinstance(holder, cst.Attribute) and isinstance(holder.value, cst.Name) and holder.value.value == "self"):
        return False
    construction = construction_of_attribute(facts, holder)
    if construction is None or not isinstance(construction.func, cst.Name):
        return False
    classdef = _module_class(facts, construction.func.value)
    return classdef is not None and _every_layer_float32(facts, classdef)


def _module_class(facts: ModuleFacts, name: str) -> cst.ClassDef | None:
    found = [c for c in facts.index.module.body if isinstance(c, cst.ClassDef) and c.name.value == name]
    return found[0] if len(found) == 1 else None


def _every_layer_float32(facts: ModuleFacts, classdef: cst.ClassDef) -> bool:
    index = facts.index
    methods = {m.name.value: m for m in classdef.body.body if isinstance(m, cst.FunctionDef)}
    init = methods.get("__init__")
    if init is None or "build" in methods:
        return False
    for base in classdef.bases:
        raw = facts.names.raw(base.value)
        local = isinstance(base.value, cst.Name) and _module_class(facts, base.value.value) is not None
        if raw is None or local or (facts.project is not None and facts.project.resolve(raw) is not None):
            return False  # a base of this project may make layers of its own
    params = {p.name.value for p in init.params.params if p.name.value != "self"}
    layers = 0
    for node in index.descendants(classdef):
        if not isinstance(node, cst.Call) or index.contains(init, node):
            continue
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "add_weight":
            return False
        qualified = facts.names.qualified(node.func) or ""
        if qualified in ("tensorflow.Variable", "keras.Variable") or _is_layer(qualified):
            return False  # variables or layers made outside `__init__` (in `call`): their dtype is not checked
    for node in index.descendants(init):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value in params:
            return False  # keeps what its caller gives (a layer, a model)
        if not isinstance(node, cst.Call):
            continue
        kind = _call_kind(facts, node)
        if kind is None:
            return False
        layers += kind == "layer"
    return layers > 0


def _call_kind(facts: ModuleFacts, call: cst.Call) -> str | None:
    """"layer" (a float32 or variable-free Keras layer), "other" (harmless), or None."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) \
            and func.value.func.value == "super":
        return "other"  # super().__init__(...)
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value in ("append", "extend"):
        return "other"  # collecting layers in a local list: each is checked as a call of its own
    qualified = facts.names.qualified(func) or ""
    if isinstance(func, cst.Name) and func.value in _BUILTINS and qualified in ("", f"builtins.{func.value}"):
        return "other"
    if qualified.startswith(_HELPER_MODULES) or qualified in _CONTAINERS:
        return "other"
    if _is_layer(qualified):
        if owns_no_float_variables(facts, call):
            return "layer"
        names = facts.policy.layer_policy_names(call)
        return "layer" if names and names <= _WIDE else None
    return None


def _is_layer(qualified: str) -> bool:
    return qualified.startswith("keras.layers.") and qualified.rsplit(".", 1)[-1][:1].isupper()
