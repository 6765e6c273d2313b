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

from mplint.analysis.guards import branches_to_module
from mplint.analysis.values import FLAG_NAMESPACE_NAMES

# The facts of a module (mplint.facts.module), named, not imported: the module's policy
# facts import this one.
ModuleFacts = Any

Guards = dict[str, bool]


def _flag_read(facts: ModuleFacts, test: cst.BaseExpression) -> str | None:
    """The flag a test reads as it is (`args.fp16`, `self.args.fp16`, `FLAGS.amp`)."""
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


def flag_guards(facts: ModuleFacts, node: cst.CSTNode) -> Guards:
    """The flags whose value the branches around `node` fix (up to the module's top)."""
    found: Guards = {}
    for test, negated in branches_to_module(facts.index, node):
        for flag, truth in _test_guards(facts, test, not negated).items():
            if found.get(flag, truth) != truth:
                return {}  # contradictory tests: dead code, say nothing
            found.setdefault(flag, truth)
    return found


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
