"""The class a method call's receiver is an instance of, where the code says so.

    ModelBuilder(image_size=512).build_model()     # a construction, then its method
    self.actor.compute_prob(state)                 # `self.actor = Actor(args)` in __init__

`names.raw` names only dotted paths (`module.function`); a method of an object needs its
receiver's class. Two receivers are known: a construction written in place, and an
attribute of `self` that the class binds once, in `__init__`, to a construction. The
answer is the method as imported (`models.model_builder.ModelBuilder.build_model`), for
the project index to resolve; None for any other receiver.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from mplint.analysis.assigned_reads import assignment_targets

# The facts of a module (mplint.facts.module), named, not imported (module -> policy -> this).
ModuleFacts = Any


def project_function(facts: ModuleFacts, call: cst.Call) -> str | None:
    """The name of the function of another project module a call runs (a dotted path, or
    a method of a known receiver), for the project index to look up; None where it is none."""
    project, names = facts.project, facts.names
    if project is None or names is None:
        return None
    raw = names.raw(call.func) or method_of_known_receiver(facts, call.func)
    return project.resolve(raw) if raw is not None else None


def method_of_known_receiver(facts: ModuleFacts, func: cst.BaseExpression) -> str | None:
    if not isinstance(func, cst.Attribute) or facts.names is None:
        return None
    receiver = func.value
    if isinstance(receiver, cst.Call):
        constructor = facts.names.raw(receiver.func)
    elif isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) \
            and receiver.value.value == "self":
        constructor = constructed_attribute(facts, receiver)
    else:
        return None
    return f"{constructor}.{func.attr.value}" if constructor is not None else None


def constructed_attribute(facts: ModuleFacts, attribute: cst.Attribute) -> str | None:
    """The imported class that `__init__` binds `self.<name>` to, where it is bound once."""
    construction = construction_of_attribute(facts, attribute)
    return facts.names.raw(construction.func) if construction is not None else None


def construction_of_attribute(facts: ModuleFacts, attribute: cst.Attribute) -> cst.Call | None:
    """The call that the class's `__init__` binds `self.<name>` to, where it binds it once
    and nothing else in the class does."""
    index = facts.index
    classdef = index.enclosing(attribute, cst.ClassDef)
    if classdef is None:
        return None
    name = attribute.attr.value
    stores = [a for a in index.descendants(classdef) if isinstance(a, (cst.Assign, cst.AugAssign, cst.AnnAssign))
              and any(isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self"
                      and t.attr.value == name for t in assignment_targets(a))]
    if len(stores) != 1 or not isinstance(stores[0], cst.Assign) or not isinstance(stores[0].value, cst.Call):
        return None
    if index.init_of(stores[0], classdef) is None:
        return None
    return stores[0].value
