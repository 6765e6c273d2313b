"""Which command-line flags a place runs under: `if args.fp16:` ... `else:`.

    flag_guards(facts, node)   # {"fp16": False} for code in the `else:` of `if self.args.fp16:`
    common_guards([...])       # the guards every one of several places shares

A program parses its flags once, so two places that test the same flag agree: a policy
set only `if args.fp16:` is not in effect in the `else:` of `if self.args.fp16:` in the
trainer that program runs. A flag is an attribute of a parsed flag namespace (`args`,
`FLAGS`, `opt`, ... as `ValueResolver.is_flag_namespace` knows them), also kept on
`self` (`self.args = args`). Only tests that are a flag or its negation (`not args.fp16`)
and the conjuncts of a body's `and` count; anything else says nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import libcst as cst

from mplint.analysis.guards import branches_to_module, guard_of
from mplint.analysis.values import FLAG_NAMESPACE_NAMES

# The facts of a module (mplint.facts.module), named, not imported: the module's policy
# facts import this one.
ModuleFacts = Any

Guards = dict[str, bool]


def _flag_read(facts: ModuleFacts, test: cst.BaseExpression) -> str | None:
    """The flag a test reads as it is (`args.fp16`, `self.args.fp16`, `FLAGS.amp`), or a
    name the module binds once at its top level (`mp = params.train.mixed_precision`),
    keyed by the module: another module's `mp` is another variable."""
    if isinstance(test, cst.Name):
        return f"{facts.path}::{test.value}" if _bound_once_at_top(facts, test) else None
    if not isinstance(test, cst.Attribute):
        return None
    holder = test.value
    if isinstance(holder, cst.Attribute) and isinstance(holder.value, cst.Name) and holder.value.value == "self":
        return test.attr.value if holder.attr.value in FLAG_NAMESPACE_NAMES else None
    return test.attr.value if facts.values.is_flag_namespace(holder) else None


def _test_guards(facts: ModuleFacts, test: cst.BaseExpression, truth: bool) -> Guards:
    """What a test being `truth` says about flags."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _test_guards(facts, test.expression, not truth)
    if truth and isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        found = _test_guards(facts, test.left, True)
        found.update(_test_guards(facts, test.right, True))
        return found
    flag = _flag_read(facts, test)
    return {flag: truth} if flag else {}


def _bound_once_at_top(facts: ModuleFacts, name: cst.Name) -> bool:
    """Whether `name` reads a variable the module binds exactly once, by a plain
    assignment at its top level (not in a branch, a loop or a function): one value for
    the whole run, as a parsed flag is. Read from the module's binding table
    (`ModuleFacts.bound_names`)."""
    index, bound = facts.index, facts.bound_names
    sites = [site for (_, bound_name), found in bound.sites.items() if bound_name == name.value for site in found]
    for function in index.ancestors(name):
        if isinstance(function, (cst.FunctionDef, cst.Lambda)) and any(index.contains(function, s.node) for s in sites):
            return False  # a local (or a parameter) of that name: not the module's variable
    at_top = bound.sites.get((id(index.module), name.value), [])
    if len(at_top) != 1 or any(n.name.value == name.value for g in index.nodes(cst.Global) for n in g.names):
        return False
    node = at_top[0].node
    statement = index.statement_of(node)
    return isinstance(node, cst.Assign) and statement is not None and index.parent_of(statement) is index.module \
        and any(isinstance(t.target, cst.Name) and t.target.value == name.value for t in node.targets)


def flag_guards(facts: ModuleFacts, node: cst.CSTNode, depth: int = 0) -> Guards:
    """The flags whose value the branches around `node` fix (up to the module's top),
    and, for code of a module-level function that the module only selects by a flag
    (`train = train_mp if mp else train_fp32`), that flag's value."""
    found: Guards = {}
    for test, negated in branches_to_module(facts.index, node):
        for flag, truth in _test_guards(facts, test, not negated).items():
            if found.get(flag, truth) != truth:
                return {}  # contradictory tests: dead code, say nothing
            found.setdefault(flag, truth)
    for flag, truth in _selected_under(facts, node, depth).items():
        if found.get(flag, truth) != truth:
            return {}
        found.setdefault(flag, truth)
    return found


_MAX_SELECTION_DEPTH = 2


def _selected_under(facts: ModuleFacts, node: cst.CSTNode, depth: int) -> Guards:
    """The flags every use of the module-level function holding `node` runs under: its
    calls' and references' own guards, with the arm of a conditional expression that
    picks it (`train_network_mp if mp else train`)."""
    function = facts.index.enclosing(node, cst.FunctionDef)
    if depth >= _MAX_SELECTION_DEPTH or function is None or facts.index.parent_of(function) is not facts.index.module:
        return {}
    sites = facts.call_graph.sites_of(function)
    if not sites:
        return {}
    per_site = []
    for site in sites:
        guards = flag_guards(facts, site, depth + 1)
        for test, negated in reversed(guard_of(facts.index, site)):  # conditional expressions, innermost first
            if isinstance(facts.index.parent_of(test), cst.IfExp):
                for flag, truth in _test_guards(facts, test, not negated).items():
                    guards.setdefault(flag, truth)
        per_site.append(guards)
    return common_guards(per_site)


def common_guards(all_guards: Iterable[Guards]) -> Guards:
    """The guards every one of the places shares ({} if there are none)."""
    common: Guards | None = None
    for guards in all_guards:
        common = dict(guards) if common is None else {f: t for f, t in common.items() if guards.get(f) == t}
        if not common:
            return {}
    return common or {}


def contradicts(required: Guards, here: Guards) -> bool:
    """Whether a place under `here` never runs where `required` holds."""
    return any(flag in here and here[flag] != truth for flag, truth in required.items())
