"""Layers and models built before the mixed policy that should reach them is set.

A layer reads the global policy when it is created, so what is built before the first
mixed `set_global_policy` of its scope keeps the previous policy (float32). MP102
reports it; MP403 must not call an environment switch redundant beside such a policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.facts.model_graph import ModelGraph
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
            and index.before(call, setting.call)
            and not index.contains(setting.call, call)
            and not any(index.before(g, call) and index.contains(scope_of(facts, g), call) for g in global_calls)
        ]
        if early:
            found.append((setting, early))
    return found


# What only a Keras model is used for: a name used so was bound to one.
_MODEL_USES = frozenset({"fit", "compile", "summary", "trainable_weights", "trainable_variables", "load_weights",
                         "save_weights", "train_on_batch"})


def _models_of_other_modules(facts: "ModuleFacts") -> list[cst.Call]:
    """`model_G = Generator(out_dim=3)` (a class of another module) whose name is then
    used as a Keras model (`model_G.summary()`, `.trainable_weights`, `.fit(...)`)."""
    index = facts.index
    used_as_model: set[str] = set()
    for node in index.nodes(cst.Attribute):
        if node.attr.value in _MODEL_USES and isinstance(node.value, cst.Name):
            used_as_model.add(node.value.value)
    found = []
    for assign in index.nodes(cst.Assign):
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            continue
        if assign.targets[0].target.value not in used_as_model or not isinstance(assign.value, cst.Call):
            continue
        func = assign.value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name[:1].isupper():
            found.append(assign.value)
    return found
