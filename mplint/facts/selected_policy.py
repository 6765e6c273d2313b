"""A policy setting whose choice the caller of its function makes.

`def setup(use_mixed_precision=False): set_global_policy("mixed_float16" if
use_mixed_precision else "float32")` sets mixed_float16 only for the callers that pass a
true value. Where every call of the function, in its module and in the rest of the
project, passes a constant written in the code (or leaves the default), the setting
sets exactly the policies those constants choose: a project whose scripts all pass
`USE_MIXED_PRECISION = False` never sets mixed_float16 there. Any argument mplint cannot
read (a flag, a computed value) leaves the setting as it was: either policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import arg_value
from mplint.facts.policy import MIXED_POLICIES, is_policy_constructor
from mplint.facts.project_context import ExternalValue

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts
    from mplint.facts.policy import PolicySetting

_DEPTH = 4


def never_mixed(facts: ModuleFacts, setting: PolicySetting) -> bool:
    """Whether every call of the function holding `setting` picks a policy that is not
    mixed, the choice being an `x if <parameter> else y` on one of its parameters."""
    function = facts.index.enclosing(setting.call, cst.FunctionDef)
    if function is None or setting.argument is None:
        return False
    found = parameter_choice(facts, setting.argument, function)
    if found is None:
        return False
    choice, param, negated = found
    truths = _argument_truths(facts, function, param)
    if not truths:
        return False
    for truth in truths:
        branch = choice.body if truth != negated else choice.orelse
        names = facts.policy.policy_names(branch)
        if names is None or any(n in MIXED_POLICIES for n in names):
            return False
    return True


def parameter_choice(facts: ModuleFacts, expr: cst.BaseExpression, function: cst.FunctionDef,
                     depth: int = 0) -> tuple[cst.IfExp, cst.Param, bool] | None:
    """(the conditional expression, the parameter its test reads, whether negated) that
    `expr` evaluates, following the function's own names and policy constructors."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, cst.IfExp):
        test, negated = expr.test, False
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, negated = test.expression, True
        if not isinstance(test, cst.Name):
            return None
        param = next((p for p in (*function.params.posonly_params, *function.params.params,
                                  *function.params.kwonly_params) if p.name.value == test.value), None)
        if param is None or facts.bindings.is_bound(function, test.value):
            return None  # not a parameter, or one the function re-binds
        return expr, param, negated
    if isinstance(expr, cst.Call) and is_policy_constructor(facts.qualified(expr.func)):
        inner = arg_value(expr, 0, "name")
        return parameter_choice(facts, inner, function, depth + 1) if inner is not None else None
    if isinstance(expr, cst.Name):
        values = [v for v in facts.bindings.values_visible(expr, facts.index)
                  if v is not None and facts.index.enclosing(v, cst.FunctionDef) is function]
        if len(values) == 1:
            return parameter_choice(facts, values[0], function, depth + 1)
    return None


def _argument_truths(facts: ModuleFacts, function: cst.FunctionDef, param: cst.Param) -> list[bool]:
    """The truth of what each call of `function` gives `param`, in this module and in the
    project's other modules; empty where there is no call or one gives a value not
    written in the code."""
    truths: list[bool] = []
    for _, argument in facts.values.arguments(function, param):
        value = facts.values.resolve(argument)
        if value is None or not value.written_in_code:
            return []
        truths.append(bool(value.value))
    project = facts.project
    if project is not None and facts.index.parent_of(function) is facts.module:
        for given in project.arguments(function.name.value, param.name.value):
            if not isinstance(given, ExternalValue) or not given.written_in_code:
                return []  # not read, an optimizer, or a flag's default the command line can change
            truths.append(bool(given.value))
    return truths
