"""Layers and models built before the mixed policy that should reach them is set.

A layer reads the global policy when it is created, so what is built before the first
mixed `set_global_policy` of its scope keeps the previous policy (float32). MP102
reports it; MP403 must not call an environment switch redundant beside such a policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import callee_name, get_arg
from mplint.facts.model_graph import SEQUENTIAL_CLASSES, ModelGraph, listed_layers
from mplint.facts.policy import PolicySetting, scope_of

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts


def late_mixed_settings(facts: "ModuleFacts") -> list[tuple[PolicySetting, list[cst.Call]]]:
    """(the first mixed global setting of a scope, the layers/models created before it in
    that scope, in source order), for every setting that comes after some."""
    index = facts.index
    policy = facts.policy
    first_in_scope: dict[int, PolicySetting] = {}
    for setting in policy.mixed_global_settings:
        first_in_scope.setdefault(id(scope_of(facts, setting.call)), setting)
    if not first_in_scope:
        return []
    graph = facts.analysis(ModelGraph)
    global_calls = [s.call for s in policy.global_settings if s.kind == "global"]
    created = list(graph.constructions())
    known = {id(c) for c in created}
    created += [c for c in _models_of_other_modules(facts) if id(c) not in known]
    created.sort(key=index.position_in_order)
    found = []
    for setting in first_in_scope.values():
        scope = scope_of(facts, setting.call)
        early = [
            call
            for call in created
            if scope_of(facts, call) is scope
            and not _given_its_dtype(facts, call)
            and index.before(call, setting.call)
            and not index.contains(setting.call, call)
            and not any(index.before(g, call) and index.contains(scope_of(facts, g), call) for g in global_calls)
        ]
        reads: dict[str, bool] = {}
        early = [call for call in early if _used_after(facts, call, setting.call, reads)]
        if early:
            found.append((setting, early))
    return found


# What only a Keras model is used for: a name used so was bound to one (methods called,
# attributes read).
_MODEL_METHODS = frozenset({"fit", "compile", "summary", "load_weights", "save_weights", "train_on_batch"})
_MODEL_ATTRIBUTES = frozenset({"trainable_weights", "trainable_variables"})


def _used_after(facts: "ModuleFacts", call: cst.Call, setting: cst.Call, reads: dict[str, bool]) -> bool:
    """Whether what `call` builds is used after the setting: a name its statement binds
    (`model = Sequential([...])`, `x = Dense(8)(x)`; for `model.add(Dense(8))` the
    model) is read there before anything rebinds it, or read by a function (which may
    run after it). A notebook's earlier sections build and train float32 baselines the
    policy was never meant to reach. Where the statement binds no name mplint can
    follow, it counts as used. `reads` memoises the answer per name for one setting."""
    statement = facts.index.statement_of(call)
    names: set[str] = set()
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            names = {t.value for t in targets if isinstance(t, cst.Name)}
            if len(names) != len(targets):
                return True
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and isinstance(small.value.func, cst.Attribute) and isinstance(small.value.func.value, cst.Name):
            names = {small.value.func.value.value}  # `model.add(Dense(8))`
    if not names:
        return True
    for name in names:
        if name not in reads:
            reads[name] = _read_after(facts, name, setting)
    return any(reads[name] for name in names)


def _read_after(facts: "ModuleFacts", name: str, setting: cst.Call) -> bool:
    """The variable `name` of the setting's scope is read after the setting before it is
    bound again there, or read by a function of that scope (ModelGraph's loads: a
    function's own local of that name is not it)."""
    index = facts.index
    graph = facts.analysis(ModelGraph)
    scope = scope_of(facts, setting)
    later = [b.node for b in graph.bindings.in_scope(scope, name) if index.before(setting, b.node)]
    rebinding = later[0] if later else None
    for node in graph.name_loads(scope, name):
        if scope_of(facts, node) is not scope:
            return True  # read by a function, which may run after the policy is set
        if index.before(setting, node) and (rebinding is None or index.before(node, rebinding)
                                            or index.contains(rebinding, node)):
            return True
    return False


def _models_of_other_modules(facts: "ModuleFacts") -> list[cst.Call]:
    """`model_G = Generator(out_dim=3)` (a class of another module) whose name is then
    used as a Keras model (`model_G.summary()`, `.fit(...)`, `.trainable_weights`); a
    class of this module is a model only through its bases (ModelGraph), and
    `config.load_weights` (a flag read) is no use as a model."""
    index = facts.index
    used_as_model: set[str] = set()
    for node in index.nodes(cst.Attribute):
        if not isinstance(node.value, cst.Name):
            continue
        parent = index.parent_of(node)
        called = isinstance(parent, cst.Call) and parent.func is node
        if (called and node.attr.value in _MODEL_METHODS) or node.attr.value in _MODEL_ATTRIBUTES:
            used_as_model.add(node.value.value)
    local_classes = {c.name.value for c in index.nodes(cst.ClassDef)}
    found = []
    for assign in index.nodes(cst.Assign):
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        if assign.targets[0].target.value not in used_as_model or not isinstance(assign.value, cst.Call):
            continue
        name = callee_name(assign.value)
        if name[:1].isupper() and not (isinstance(assign.value.func, cst.Name) and name in local_classes):
            found.append(assign.value)
    return found


def _given_its_dtype(facts: "ModuleFacts", call: cst.Call) -> bool:
    """A layer built with its own `dtype=` (`Dense(1, dtype=tf.float16)`), or a Sequential
    of such layers only: the global policy set later would not have applied to it."""
    if get_arg(call, None, "dtype") is not None:
        return True
    if facts.qualified(call.func) not in SEQUENTIAL_CLASSES:
        return False
    layers = listed_layers(call)
    return bool(layers) and all(layer is not None and get_arg(layer, None, "dtype") is not None for layer in layers)
