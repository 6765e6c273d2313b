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

from mplint.facts.policy import MIXED_POLICIES
from mplint.facts.project_context import ExternalValue

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts
    from mplint.facts.policy import PolicySetting


def never_mixed(facts: ModuleFacts, setting: PolicySetting) -> bool:
    """Whether every call of the function holding `setting` picks a policy that is not
    mixed, the choice being an `x if <parameter> else y` on one of its parameters."""
    found = facts.policy.parameter_choice(setting)
    if found is None:
        return False
    truths = _argument_truths(facts, found.function, found.param)
    if not truths:
        return False
    for truth in truths:
        names = found.when_true if truth else found.when_false
        if names is None or any(n in MIXED_POLICIES for n in names):
            return False
    return True


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
