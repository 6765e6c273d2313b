"""The dtype policy a module runs under.

A mixed policy is "in force" in a module when it sets one globally (every spelling of
`set_global_policy` / `set_dtype_policy` / experimental `set_policy`, with a string, a
`Policy`/`DTypePolicy` object, a variable or a flag default, also under an `if`),
gives a layer a mixed `dtype=`, or is covered by `assume-policy` in config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import arg_value

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

SET_GLOBAL_POLICY = frozenset(
    {
        "keras.mixed_precision.set_global_policy",
        "keras.mixed_precision.set_dtype_policy",
        "keras.config.set_dtype_policy",
        "keras.mixed_precision.experimental.set_policy",
        "keras.mixed_precision.policy.set_global_policy",
    }
)
SET_FLOATX = frozenset({"keras.backend.set_floatx", "keras.config.set_floatx"})
POLICY_CONSTRUCTORS = frozenset(
    {
        "keras.mixed_precision.Policy",
        "keras.mixed_precision.DTypePolicy",
        "keras.mixed_precision.experimental.Policy",
        "keras.mixed_precision.policy.Policy",
        "keras.DTypePolicy",
        "keras.dtype_policies.DTypePolicy",
        "keras.dtype_policies.FloatDTypePolicy",
    }
)
DTYPE_CONSTANTS = {
    f"{module}.{name}": name
    for module in ("tensorflow", "tensorflow.dtypes", "numpy", "jax.numpy", "torch")
    for name in ("float16", "bfloat16", "float32", "float64", "half")
}
DTYPE_CONSTANTS.update({k: "float16" for k, v in list(DTYPE_CONSTANTS.items()) if v == "half"})

MIXED_POLICIES = ("mixed_float16", "mixed_bfloat16")


@dataclass(frozen=True)
class PolicySetting:
    """One place that sets a policy: a global call or a layer's `dtype=`."""

    call: cst.Call
    argument: cst.BaseExpression | None  # the expression holding the policy
    names: frozenset[str] | None  # the policy names it can take; None: unknown
    kind: str  # "global", "floatx" or "layer"

    @property
    def is_mixed(self) -> bool:
        return bool(self.names) and any(n in MIXED_POLICIES for n in self.names or ())


class PolicyFacts:
    def __init__(self, facts: "ModuleFacts") -> None:
        self._facts = facts
        self.global_settings: list[PolicySetting] = []
        self.layer_settings: list[PolicySetting] = []
        self.assumed: str | None = facts.assumed_policy
        names = facts.names
        for call in facts.index.nodes(cst.Call):
            qualified = names.qualified(call.func)
            if qualified in SET_GLOBAL_POLICY:
                arg = arg_value(call, 0, "policy", "value", "name")
                self.global_settings.append(
                    PolicySetting(call, arg, self.policy_names(arg) if arg is not None else None, "global")
                )
            elif qualified in SET_FLOATX:
                arg = arg_value(call, 0, "value", "dtype")
                self.global_settings.append(
                    PolicySetting(call, arg, self.policy_names(arg) if arg is not None else None, "floatx")
                )
            else:
                arg = arg_value(call, None, "dtype")
                if arg is not None and qualified not in POLICY_CONSTRUCTORS:
                    policy = self.policy_names(arg)
                    if policy and any(n in MIXED_POLICIES for n in policy):
                        self.layer_settings.append(PolicySetting(call, arg, policy, "layer"))

    # -- resolving policy expressions ------------------------------------------------
    def policy_names(self, expr: cst.BaseExpression | None, depth: int = 0) -> frozenset[str] | None:
        """Policy/dtype names an expression can evaluate to; None if unknown."""
        if expr is None or depth > 8:
            return None
        facts = self._facts
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            value = expr.evaluated_value
            return frozenset({value}) if isinstance(value, str) else None
        if isinstance(expr, cst.IfExp):
            found = [self.policy_names(expr.body, depth + 1), self.policy_names(expr.orelse, depth + 1)]
            known = [f for f in found if f]
            return frozenset().union(*known) if known else None
        if isinstance(expr, cst.Call):
            if facts.names.qualified(expr.func) in POLICY_CONSTRUCTORS:
                return self.policy_names(arg_value(expr, 0, "name"), depth + 1)
            return None
        if isinstance(expr, cst.Attribute):
            qualified = facts.names.qualified(expr)
            if qualified in DTYPE_CONSTANTS:
                return frozenset({DTYPE_CONSTANTS[qualified]})
            value = facts.values.resolve(expr)
            if value is not None and isinstance(value.value, str):
                return frozenset({value.value})
            return None
        if isinstance(expr, cst.Name):
            qualified = facts.names.qualified(expr)
            if qualified in DTYPE_CONSTANTS:
                return frozenset({DTYPE_CONSTANTS[qualified]})
            collected: set[str] = set()
            for value in facts.bindings.values_visible(expr, facts.index):
                found = self.policy_names(value, depth + 1)
                if found:
                    collected |= found
            return frozenset(collected) if collected else None
        return None

    # -- summary --------------------------------------------------------------------
    @property
    def settings(self) -> list[PolicySetting]:
        return self.global_settings + self.layer_settings

    @property
    def mixed_policies(self) -> frozenset[str]:
        """The mixed policies the module can run under."""
        found = {n for s in self.settings for n in (s.names or ()) if n in MIXED_POLICIES}
        if self.assumed:
            found.add(self.assumed)
        return frozenset(found)

    @property
    def mixed_in_force(self) -> bool:
        return bool(self.mixed_policies)

    @property
    def float16(self) -> bool:
        return "mixed_float16" in self.mixed_policies

    @property
    def bfloat16(self) -> bool:
        return "mixed_bfloat16" in self.mixed_policies

    @property
    def compute_dtypes(self) -> frozenset[str]:
        return frozenset(p.split("_", 1)[1] for p in self.mixed_policies)

    def describe(self) -> str:
        if not self.mixed_in_force:
            return "no mixed policy"
        source = "assume-policy" if self.assumed and not self.settings else "set in the file"
        return f"{', '.join(sorted(self.mixed_policies))} ({source})"
