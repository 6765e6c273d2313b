"""Whether a place can run: branches that the values given to them say never run.

    never_runs(facts, node)   # why `node` never runs, or None

A finding is true only where its code runs. Two kinds of branch are known not to (also
inside `and`/`or`/`not`: `if self.optimizer and self.mixed_precision:`):
- an `if` on a constant written in the code (`DEBUG = False` ... `if DEBUG:`), and
- an `if` on an attribute that a class sets once in `__init__` from a parameter
  (`self.mixed_precision = mixed_precision`), where every construction of the class, in
  this module and in the other modules of the project, gives that parameter the other
  truth (`DistributedModel(..., mixed_precision=True)`): the `else:` never runs;
and the private methods (`_data_dep_init`) whose every call sits in such a branch.
Anything else (a flag, an argument nobody writes down, a class nobody constructs) can run.
Rules do not drop such findings: `Rule.report` gives them a conflicting call-path premise,
so they move to the extended tier and keep no safe fix.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from mplint.analysis.assigned_reads import assignment_targets
from mplint.analysis.calls import is_super_init
from mplint.analysis.guards import branches_to_module
from mplint.facts.policy_flow import constant_truth

# The facts of a module (mplint.facts.module), named, not imported (module -> rules -> this).
ModuleFacts = Any


def never_runs(facts: ModuleFacts, node: cst.CSTNode, depth: int = 0) -> str | None:
    """Why `node` never runs (a few words), or None when it can."""
    for test, negated in branches_to_module(facts.index, node):
        truth = _truth(facts, test)
        if truth is not None and truth[0] == negated:
            code = " ".join(facts.module.code_for_node(test).split())
            return f"`if {code}:` is always {'true' if truth[0] else 'false'} here ({truth[1]})"
    return _only_called_where_never_run(facts, node, depth)


_MAX_CALL_DEPTH = 2


def _only_called_where_never_run(facts: ModuleFacts, node: cst.CSTNode, depth: int) -> str | None:
    """Why the private method holding `node` never runs: every call of it in its class
    (`self._data_dep_init(x)`) sits where it never runs (`if self.data_init:` with every
    construction giving `data_init=False`). A public method or function may be called
    from anywhere, so only private methods (`_name`, not dunders) count."""
    function = facts.index.enclosing(node, cst.FunctionDef)
    if depth >= _MAX_CALL_DEPTH or function is None or facts.index.enclosing(function, cst.ClassDef) is None:
        return None
    name = function.name.value
    if not name.startswith("_") or name.endswith("__"):
        return None
    sites = facts.call_graph.sites_of(function)
    if not sites or not all(isinstance(site, cst.Call) for site in sites):
        return None  # never called here, or handed on as a value
    reasons = [never_runs(facts, site, depth + 1) for site in sites]
    if any(reason is None for reason in reasons):
        return None
    return f"`{name}` is called only where it never runs: {reasons[0]}"


def _truth(facts: ModuleFacts, test: cst.BaseExpression) -> tuple[bool, str] | None:
    """(the truth the test always has, why), or None."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _truth(facts, test.expression)
        return None if inner is None else (not inner[0], inner[1])
    if isinstance(test, cst.BooleanOperation):
        # `self.optimizer and self.mixed_precision`: one operand known false decides an
        # `and`, one known true an `or`; both known decide either
        deciding = isinstance(test.operator, cst.Or)
        sides = [_truth(facts, test.left), _truth(facts, test.right)]
        for side in sides:
            if side is not None and side[0] == deciding:
                return side
        return sides[0] if None not in sides else None
    if isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == "self":
        return _attribute_truth(facts, test)
    if isinstance(test, (cst.Name, cst.Integer, cst.Comparison)):
        found = constant_truth(facts, test)
        return None if found is None else (found, "a constant of the code")
    return None


def _attribute_truth(facts: ModuleFacts, test: cst.Attribute) -> tuple[bool, str] | None:
    index = facts.index
    classdef = index.enclosing(test, cst.ClassDef)
    if classdef is None:
        return None
    name = test.attr.value
    stores = [n for kind in (cst.Assign, cst.AugAssign, cst.AnnAssign) for n in index.nodes(kind)
              if any(_is_attribute(t, name) for t in assignment_targets(n))]
    if len(stores) != 1 or not isinstance(stores[0], cst.Assign) or not isinstance(stores[0].value, cst.Name) \
            or not all(_is_self_attribute(t, name) for t in assignment_targets(stores[0])):
        return None  # set more than once, or from outside the class
    init = index.init_of(stores[0], classdef)
    if init is None:
        return None
    branch = index.enclosing(stores[0], cst.If, cst.For, cst.While, cst.Try, cst.With)
    if branch is not None and index.contains(init, branch):
        return None  # set only sometimes
    param_name = stores[0].value.value
    truths = _constructor_truths(facts, classdef, init, param_name, 0)
    if not truths or any(t is None for t in truths) or len(set(truths)) != 1:
        return None
    why = f"each `{classdef.name.value}(...)` made in the project (subclasses too) gives `{param_name}` {truths[0]}"
    return truths[0], why


def _constructor_truths(facts: ModuleFacts, classdef: cst.ClassDef, init: cst.FunctionDef, param_name: str,
                        depth: int) -> list[bool | None] | None:
    """The truth each construction of the class (and of its subclasses in this module,
    whose `__init__` hands the parameter on to `super().__init__`) gives `param_name`;
    None where some construction is not seen."""
    index = facts.index
    param = next((p for p in (*init.params.params, *init.params.kwonly_params) if p.name.value == param_name), None)
    if depth > 3 or param is None or facts.values.bindings.is_bound(init, param_name):
        return None
    sites = facts.call_graph.sites_of(init)
    if any(not isinstance(site, cst.Call) or any(a.star for a in site.args) for site in sites) \
            or _handed_on(facts, classdef):
        return None  # the class is handed on as a value, or called with `*args`
    truths: list[bool | None] = [_literal_truth(facts, argument) for site, argument in facts.values.arguments(init, param)
                                 if not is_super_init(site)]  # a subclass's: followed below
    project = facts.project
    if project is not None:
        for given in project.arguments(f"{classdef.name.value}.__init__", param_name):
            value = getattr(given, "value", _UNKNOWN) if given is not None else _UNKNOWN
            truths.append(bool(value) if isinstance(value, (bool, int, type(None))) else None)
    for subclass in index.nodes(cst.ClassDef):
        if not _names_base(subclass, classdef.name.value):
            continue
        sub_init = facts.call_graph.method(subclass, "__init__")
        if sub_init is None or sub_init is init:
            return None  # constructed with the base's `__init__`: not followed
        handed = _handed_to_super(facts, sub_init, param_name)
        if handed is None:
            return None
        found = _constructor_truths(facts, subclass, sub_init, handed, depth + 1)
        if found is None:
            return None
        truths += found
    return truths


def _handed_on(facts: ModuleFacts, classdef: cst.ClassDef) -> bool:
    """Whether the module uses the class other than by calling it, subclassing it or
    reading its attributes (`factory = Trainer`: whoever calls `factory` is not seen)."""
    index = facts.index
    for name in index.names(classdef.name.value):
        if name is classdef.name:
            continue
        parent = index.parent_of(name)
        if isinstance(parent, cst.Call) and parent.func is name:
            continue
        if isinstance(parent, cst.Attribute) or (isinstance(parent, cst.Arg) and parent.keyword is name) \
                or isinstance(parent, (cst.FunctionDef, cst.Param)):
            continue  # `Trainer.attr`, `tf.keras.Model`, `f(Trainer=...)`, a parameter's name
        holder = index.parent_of(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(holder, cst.ClassDef) or (isinstance(holder, cst.Call) and isinstance(holder.func, cst.Name)
                                                and holder.func.value in ("super", "isinstance", "issubclass")):
            continue
        if isinstance(parent, (cst.ImportAlias, cst.Comparison)) or isinstance(index.parent_of(parent), cst.ImportAlias):
            continue
        return True
    return False


def _handed_to_super(facts: ModuleFacts, init: cst.FunctionDef, param_name: str) -> str | None:
    """The parameter of a subclass's `__init__` that it hands on as `param_name=` to
    `super().__init__(...)`."""
    for node in facts.index.descendants(init):
        if isinstance(node, cst.Call) and is_super_init(node):
            argument = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == param_name), None)
            return argument.value if isinstance(argument, cst.Name) else None
    return None


_UNKNOWN = object()


def _literal_truth(facts: ModuleFacts, argument: cst.BaseExpression) -> bool | None:
    value = facts.values.resolve(argument)
    if value is None or not value.written_in_code or not isinstance(value.value, (bool, int, type(None))):
        return None
    return bool(value.value)


def _is_attribute(target: cst.BaseExpression, name: str) -> bool:
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_is_attribute(e.value, name) for e in target.elements)
    return isinstance(target, cst.Attribute) and target.attr.value == name


def _is_self_attribute(target: cst.BaseExpression, name: str) -> bool:
    return _is_attribute(target, name) and isinstance(target, cst.Attribute) \
        and isinstance(target.value, cst.Name) and target.value.value == "self"


def _names_base(classdef: cst.ClassDef, base: str) -> bool:
    return any(isinstance(b.value, cst.Name) and b.value.value == base for b in classdef.bases)
