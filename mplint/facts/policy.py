"""The dtype policy a module runs under.

A mixed policy is "in force" in a module when it

- sets one globally: every spelling of `set_global_policy` / `set_dtype_policy` /
  experimental `set_policy` (`tf.keras.mixed_precision`, `keras.mixed_precision`,
  `keras.config`, `tensorflow.keras...`, `tf_keras`, `tensorflow.python.keras...`,
  `from ... import set_global_policy as p`, the experimental module), with a string, a
  `Policy`/`DTypePolicy` object, a variable, a flag default or a parameter default,
  also under an `if` (`if args.fp16:` code is meant to run mixed);
- gives a layer a mixed `dtype=` (`dtype="mixed_float16"`, `dtype=policy_var`);
- or is covered by `assume-policy` in config (code whose policy is set elsewhere).

Rules ask `mixed_in_force` (any of these), `global_mixed_at(node)` (whether the global
policy can be mixed when `node` runs, for layers that take the global policy) and
`policy_names(expr)` (what a policy expression can evaluate to).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import libcst as cst

from mplint.analysis.calls import arg_value, has_star_args, string_value
from mplint.analysis.guards import branches_to_module
from mplint.analysis.node_types import kinds
from mplint.facts.flag_guards import (
    choice_guards,
    common_guards,
    flag_guards,
    never_under,
)
from mplint.facts.policy_flow import constant_truth

if TYPE_CHECKING:
    from mplint.facts.policy_flow import PolicyFlow

# ModuleFacts (mplint.facts.module) builds this fact and hands itself in: its type is
# named, not imported, so that module.py -> this module is the only import between them.
ModuleFacts = Any

# Canonical names (see mplint.analysis.names.canonical). Internal module paths
# (`tensorflow.python.keras.mixed_precision.experimental.policy.set_policy`,
# `keras.src.dtype_policies.dtype_policy.set_dtype_policy`, ...) are recognised by
# `is_global_setter` / `is_policy_constructor` as well.
SET_GLOBAL_POLICY = frozenset(
    {
        "keras.mixed_precision.set_global_policy",
        "keras.mixed_precision.set_dtype_policy",
        "keras.config.set_dtype_policy",
        "keras.mixed_precision.experimental.set_policy",
        "keras.mixed_precision.policy.set_global_policy",
        "keras.mixed_precision.experimental.policy.set_policy",
    }
)
SET_FLOATX = frozenset({"keras.backend.set_floatx", "keras.config.set_floatx"})
POLICY_CONSTRUCTORS = frozenset(
    {
        "keras.mixed_precision.Policy",
        "keras.mixed_precision.DTypePolicy",
        "keras.mixed_precision.experimental.Policy",
        "keras.mixed_precision.policy.Policy",
        "keras.mixed_precision.experimental.policy.Policy",
        "keras.DTypePolicy",
        "keras.dtype_policies.DTypePolicy",
        "keras.dtype_policies.FloatDTypePolicy",
    }
)
_SETTER_NAMES = ("set_global_policy", "set_dtype_policy")
_POLICY_CLASS_NAMES = ("Policy", "DTypePolicy", "FloatDTypePolicy")
_POLICY_MODULE_HINTS = ("mixed_precision", "dtype_polic")

DTYPE_CONSTANTS = {
    f"{module}.{name}": name
    for module in ("tensorflow", "tensorflow.dtypes", "numpy", "jax.numpy", "torch")
    for name in ("float16", "bfloat16", "float32", "float64", "half")
}
DTYPE_CONSTANTS.update({k: "float16" for k, v in list(DTYPE_CONSTANTS.items()) if v == "half"})

MIXED_POLICIES = ("mixed_float16", "mixed_bfloat16")
FLOAT16_POLICIES = ("mixed_float16", "float16")
HALF_DTYPES = ("float16", "bfloat16")
FULL_DTYPES = ("float32", "float64")


def is_global_setter(qualified: str | None) -> bool:
    """Whether a canonical name sets the global dtype policy."""
    if qualified is None:
        return False
    if qualified in SET_GLOBAL_POLICY:
        return True
    if not qualified.startswith("keras."):
        return False
    last = qualified.rsplit(".", 1)[-1]
    if last in _SETTER_NAMES:
        return True
    return last == "set_policy" and "mixed_precision" in qualified


def is_policy_constructor(qualified: str | None) -> bool:
    """Whether a canonical name builds a dtype policy object (`Policy`, `DTypePolicy`)."""
    if qualified is None:
        return False
    if qualified in POLICY_CONSTRUCTORS:
        return True
    if not qualified.startswith("keras."):
        return False
    module, _, last = qualified.rpartition(".")
    return last in _POLICY_CLASS_NAMES and any(hint in module for hint in _POLICY_MODULE_HINTS)


def compute_dtype(policy_name: str) -> str | None:
    """The dtype a layer computes in under a policy or dtype name."""
    if policy_name in MIXED_POLICIES:
        return policy_name.split("_", 1)[1]
    if policy_name in HALF_DTYPES or policy_name in FULL_DTYPES:
        return policy_name
    return None


def scope_of(facts: "ModuleFacts", node: cst.CSTNode) -> cst.CSTNode:
    """The function, lambda or class body whose code runs `node` (else the module)."""
    return facts.index.enclosing(node, cst.FunctionDef, cst.Lambda, cst.ClassDef) or facts.index.module


def _argparse_dest(call: cst.Call) -> str | None:
    dest = string_value(arg_value(call, None, "dest"))
    if dest:
        return dest
    options = [string_value(a.value) for a in call.args if a.keyword is None]
    options = [o for o in options if o]
    longs = [o for o in options if o.startswith("--")]
    chosen = longs[0] if longs else (options[0] if options else "")
    return chosen.lstrip("-").replace("-", "_") or None


CONTROL_STATEMENTS = (cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler, cst.Finally, cst.Match)
_CONTROL_KINDS = kinds(*CONTROL_STATEMENTS)


def controls_between(facts: "ModuleFacts", node: cst.CSTNode, scope: cst.CSTNode) -> set[int]:
    """The branches and loops between `node` and its scope."""
    found: set[int] = set()
    for ancestor in facts.index.ancestors(node):
        if ancestor is scope:
            break
        if type(ancestor) in _CONTROL_KINDS:
            found.add(id(ancestor))
    return found


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


@dataclass(frozen=True)
class ParameterChoice:
    """A policy setting that a parameter of its function chooses (`PolicyFacts.parameter_choice`)."""

    function: cst.FunctionDef
    param: cst.Param
    when_true: frozenset[str] | None  # the policies it sets where the parameter is true
    when_false: frozenset[str] | None


def _in_dead_branch(facts: "ModuleFacts", node: cst.CSTNode) -> bool:
    """Whether `node` sits in a branch of an `if` on a constant written in the code (not a
    flag or a parameter) that says the branch never runs: `DEBUG_AMP = False` ... `if
    DEBUG_AMP:`, or the `else` of `if True:`."""
    return any(constant_truth(facts, test) == negated for test, negated in branches_to_module(facts.index, node))


# Policy names every setter accepts (TF 2.1-2.21, Keras 3.15): setting one never raises.
_NAMES_THAT_NEVER_RAISE = frozenset({"mixed_float16", "mixed_bfloat16", "float16", "bfloat16", "float32", "float64"})


def _in_unreachable_handler(facts: ModuleFacts, node: cst.CSTNode) -> bool:
    """Whether `node` sits in an `except` handler of a `try` whose body cannot raise:
    only global-policy settings of policy names written in the code (Keras checks a name,
    then sets it: a known name never raises, whatever the hardware; TF 2.21 and Keras
    3.15) and `print`s of written text. `try: set_global_policy("mixed_bfloat16")
    except Exception: set_global_policy("mixed_float16")` never sets `mixed_float16`."""
    index = facts.index
    child = node
    for ancestor in index.ancestors(node):
        if isinstance(ancestor, cst.FunctionDef | cst.ClassDef | cst.Lambda):
            return False
        if isinstance(ancestor, cst.Try) and child in ancestor.handlers:
            return _cannot_raise(facts, ancestor.body)
        child = ancestor
    return False


def _cannot_raise(facts: ModuleFacts, body: cst.BaseSuite) -> bool:
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for line in statements:
        if not isinstance(line, cst.SimpleStatementLine | cst.SimpleStatementSuite):
            return False
        for statement in line.body:
            call = statement.value if isinstance(statement, cst.Expr) else None
            if not isinstance(call, cst.Call) or has_star_args(call):
                return False
            qualified = facts.names.qualified(call.func)
            if is_global_setter(qualified):
                name = string_value(arg_value(call, 0, "policy", "value", "name"))
                if name is None or name not in _NAMES_THAT_NEVER_RAISE:
                    return False
            elif not (_is_builtin_print(facts, call.func) and all(_written_text(a.value) for a in call.args)):
                return False
    return True


def _is_builtin_print(facts: ModuleFacts, func: cst.BaseExpression) -> bool:
    """`print` itself (no import or alias named `print` resolves it to something else)."""
    return isinstance(func, cst.Name) and func.value == "print" and facts.names.qualified(func) in (None, "builtins.print")


def _written_text(value: cst.BaseExpression) -> bool:
    """A string written in the code, an f-string of plain names among them (formatting a
    name's value calls its `__format__`, which for the values printed here does not raise)."""
    if isinstance(value, cst.SimpleString | cst.ConcatenatedString):
        return True
    if isinstance(value, cst.FormattedString):
        return all(isinstance(p, cst.FormattedStringText) or (
            isinstance(p, cst.FormattedStringExpression) and isinstance(p.expression, cst.Name)
            and p.format_spec is None and p.conversion is None) for p in value.parts)
    return False


class PolicyFacts:
    def __init__(self, facts: "ModuleFacts") -> None:
        self._facts = facts
        self.global_settings: list[PolicySetting] = []
        self.layer_settings: list[PolicySetting] = []
        self.assumed: str | None = facts.assumed_policy
        self._choices: dict[str, set[str]] | None = None
        names = facts.names
        for call in facts.index.nodes(cst.Call):
            qualified = names.qualified(call.func)
            setter = is_global_setter(qualified)
            if (setter or qualified in SET_FLOATX) and _in_dead_branch(facts, call):
                continue  # `MIXED_PRECISION = False` ... `if MIXED_PRECISION: set_global_policy(...)`
            if setter and _in_unreachable_handler(facts, call):
                continue  # the fallback of a setting that cannot fail
            if setter:
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
                if arg is not None and not is_policy_constructor(qualified):
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
            truth = constant_truth(facts, expr.test)  # `"mixed_float16" if cfg.precision == 16 else "float32"`
            if truth is not None:
                return self.policy_names(expr.body if truth else expr.orelse, depth + 1)
            found = [self.policy_names(expr.body, depth + 1), self.policy_names(expr.orelse, depth + 1)]
            known = [f for f in found if f]
            return frozenset().union(*known) if known else None
        if isinstance(expr, cst.Call):
            if is_policy_constructor(facts.names.qualified(expr.func)):
                return self.policy_names(arg_value(expr, 0, "name"), depth + 1)
            return None
        if isinstance(expr, cst.Attribute):
            qualified = facts.names.qualified(expr)
            if qualified in DTYPE_CONSTANTS:
                return frozenset({DTYPE_CONSTANTS[qualified]})
            return self._constant(expr)
        if isinstance(expr, cst.Name):
            qualified = facts.names.qualified(expr)
            if qualified in DTYPE_CONSTANTS:
                return frozenset({DTYPE_CONSTANTS[qualified]})
            if self._is_parameter(expr):
                # `def setup(policy="mixed_float16"): set_global_policy(policy)`
                return self._constant(expr)
            reaching = self._straight_line_value(expr)
            if reaching is not None:
                # a notebook's sections each bind `policy` anew: the one before the read
                return self.policy_names(reaching, depth + 1)
            collected: set[str] = set()
            for value in facts.bindings.values_visible(expr, facts.index):
                found = self.policy_names(value, depth + 1)
                if found:
                    collected |= found
            return frozenset(collected) if collected else None
        return None

    def parameter_choice(self, setting: PolicySetting) -> ParameterChoice | None:
        """For a setting whose function's parameter picks the policy (`"mixed_float16" if
        amp else "float32"`, also through a `Policy(...)` and a name the function binds
        once): the function, the parameter, and the policies each truth of it picks (None
        where mplint cannot name them)."""
        function = self._facts.index.enclosing(setting.call, cst.FunctionDef)
        if function is None or setting.argument is None:
            return None
        found = self._choice(setting.argument, function)
        if found is None:
            return None
        choice, param, negated = found
        when_true, when_false = self.policy_names(choice.body), self.policy_names(choice.orelse)
        if negated:
            when_true, when_false = when_false, when_true
        return ParameterChoice(function, param, when_true, when_false)

    def _choice(self, expr: cst.BaseExpression, function: cst.FunctionDef,
                depth: int = 0) -> tuple[cst.IfExp, cst.Param, bool] | None:
        """(the conditional expression, the parameter of `function` its test reads, whether
        negated) that a policy expression evaluates, following the function's own names
        and policy constructors."""
        facts = self._facts
        if depth > 4:
            return None
        if isinstance(expr, cst.IfExp):
            test, negated = expr.test, False
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, negated = test.expression, True
            if not isinstance(test, cst.Name):
                return None
            params = function.params
            param = next((p for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                          if p.name.value == test.value), None)
            if param is None or facts.bindings.is_bound(function, test.value):
                return None  # not a parameter, or one the function re-binds
            return expr, param, negated
        if isinstance(expr, cst.Call) and is_policy_constructor(facts.names.qualified(expr.func)):
            inner = arg_value(expr, 0, "name")
            return self._choice(inner, function, depth + 1) if inner is not None else None
        if isinstance(expr, cst.Name):
            values = [v for v in facts.bindings.values_visible(expr, facts.index)
                      if v is not None and facts.index.enclosing(v, cst.FunctionDef) is function]
            if len(values) == 1:
                return self._choice(values[0], function, depth + 1)
        return None

    def _straight_line_value(self, name: cst.Name) -> cst.BaseExpression | None:
        """The value bound to a module-level name read at module level, where every
        binding of it is a plain top-level assignment: the last one before the read.
        None where any binding is in a branch, a loop, a function or not simple."""
        facts = self._facts
        index = facts.index
        if index.enclosing(name, cst.FunctionDef, cst.Lambda, cst.ClassDef) is not None:
            return None
        values = facts.bindings.bindings.get((id(index.module), name.value), [])
        if len(values) < 2 or any(v is None for v in values):
            return None
        read = index.top_level_statement(name)
        last = None
        for value in values:
            assign = index.parent_of(value)
            line = index.parent_of(assign) if isinstance(assign, cst.Assign) else None
            if not isinstance(line, cst.SimpleStatementLine) or index.top_level_statement(value) is not line:
                return None
            if read is not None and index.before(line, read) and line is not read:
                last = value
        return last

    def _is_parameter(self, name: cst.Name) -> bool:
        """Whether `name` refers to a parameter of an enclosing function (no assignment
        in between shadows it)."""
        facts = self._facts
        function = facts.index.enclosing(name, cst.FunctionDef)
        while function is not None:
            params = function.params
            every = (*params.posonly_params, *params.params, *params.kwonly_params)
            if any(p.name.value == name.value for p in every):
                return True
            if facts.bindings.is_bound(function, name.value):
                return False
            function = facts.index.enclosing(function, cst.FunctionDef)
        return False

    def _constant(self, expr: cst.BaseExpression) -> frozenset[str] | None:
        found: set[str] = set()
        value = self._facts.values.resolve(expr)
        if value is not None and isinstance(value.value, str):
            found.add(value.value)
        if isinstance(expr, cst.Attribute):
            # `set_global_policy(args.policy)` with `choices=["float32", "mixed_float16"]`
            found |= self._flag_choices().get(expr.attr.value, set())
        return frozenset(found) if found else None

    def _flag_choices(self) -> dict[str, set[str]]:
        """String choices of argparse flags (`choices=[...]`) and absl `DEFINE_enum`s, by dest."""
        if self._choices is None:
            self._choices = {}
            for call in self._facts.index.nodes(cst.Call):
                func = call.func
                if not isinstance(func, cst.Attribute):
                    continue
                if func.attr.value == "add_argument":
                    dest = _argparse_dest(call)
                    values = arg_value(call, None, "choices")
                elif func.attr.value == "DEFINE_enum":
                    dest = string_value(arg_value(call, 0, "name"))
                    values = arg_value(call, 2, "enum_values")
                else:
                    continue
                if dest and isinstance(values, (cst.List, cst.Tuple, cst.Set)):
                    strings = {string_value(e.value) for e in values.elements}
                    self._choices.setdefault(dest, set()).update(s for s in strings if s)
        return self._choices

    def layer_policy_names(self, call: cst.Call) -> frozenset[str] | None:
        """What a layer constructor's own `dtype=` can be. Empty: no `dtype=` (the layer
        takes the global policy); None: unknown (`**kwargs`, an unresolved expression)."""
        arg = arg_value(call, None, "dtype")
        if arg is None:
            return None if has_star_args(call) else frozenset()
        return self.policy_names(arg)

    # -- the global policy -----------------------------------------------------------
    @property
    def mixed_global_settings(self) -> list[PolicySetting]:
        return [s for s in self.global_settings if s.kind == "global" and s.is_mixed]

    @cached_property
    def flow(self) -> "PolicyFlow":
        """The global policy in effect at each place (mplint.facts.policy_flow)."""
        from mplint.facts.entries import module_entry
        from mplint.facts.policy_flow import PolicyFlow

        return PolicyFlow(self._facts, self, module_entry(self.assumed))

    def global_at(self, node: cst.CSTNode) -> frozenset[str]:
        """The global policies that can be in effect when `node` runs. A mixed policy that
        is set only under a flag (`if args.fp16:`, here or in the other modules that bring
        it) is not in effect where that flag is known to be the other way round (the
        `else:` of `if self.args.fp16:`)."""
        found = self.flow.at(node)
        if any(n in MIXED_POLICIES for n in found):
            if never_under(self._facts, node, self.mixed_flag_guards):
                return frozenset(n for n in found if n not in MIXED_POLICIES)
            if "mixed_float16" in found and never_under(self._facts, node, self.float16_flag_guards):
                return found - {"mixed_float16"}
        return found

    @cached_property
    def mixed_flag_guards(self) -> dict[str, bool]:
        """The flags every source of a mixed policy here requires: this module's mixed
        settings and the modules of the project that bring one ({} where one of them
        is not under a flag, or the policy is assumed)."""
        sources = []
        if self.assumed in MIXED_POLICIES:
            return {}
        local = self.local_mixed_flag_guards
        if local is not None:
            sources.append(local)
        if self.from_project[0]:
            project = self._facts.project
            sources.append(project.policy_flag_guards() if project is not None else {})
        return common_guards(sources)

    @cached_property
    def local_mixed_flag_guards(self) -> dict[str, bool] | None:
        """The flags every mixed global setting of this module requires; None where the
        module sets no mixed policy."""
        settings = [s for s in self.global_settings if s.is_mixed]
        if not settings:
            return None
        return common_guards(flag_guards(self._facts, s.call) for s in settings)

    @cached_property
    def float16_flag_guards(self) -> dict[str, bool]:
        """The flags every source of `mixed_float16` here requires, with the flags that
        choose it over another policy (`"mixed_float16" if not args.use_tpu else
        "mixed_bfloat16"`), as `mixed_flag_guards` does for any mixed policy."""
        if self.assumed in MIXED_POLICIES:
            return {}
        sources = []
        local = self.local_float16_flag_guards
        if local is not None:
            sources.append(local)
        if "mixed_float16" in self.from_project[0]:
            project = self._facts.project
            sources.append(project.policy_flag_guards(float16=True) if project is not None else {})
        return common_guards(sources)

    @cached_property
    def local_float16_flag_guards(self) -> dict[str, bool] | None:
        """The flags every setting of this module that can set `mixed_float16` requires,
        with those that choose it in its argument; None where none can."""
        settings = [s for s in self.global_settings if s.names and "mixed_float16" in s.names]
        if not settings:
            return None
        return common_guards({**flag_guards(self._facts, s.call), **self._chosen_under(s.argument, "mixed_float16")}
                             for s in settings)

    def _chosen_under(self, arg: cst.BaseExpression | None, name: str) -> dict[str, bool]:
        """The flags under which a policy argument evaluates to `name`: the arms of its
        conditional expressions (in a `Policy(...)` too) that alone can give it."""
        if isinstance(arg, cst.Call) and is_policy_constructor(self._facts.names.qualified(arg.func)):
            arg = arg_value(arg, 0, "name")
        return choice_guards(self._facts, arg, lambda arm: self.policy_names(arm), name)

    def global_mixed_at(self, node: cst.CSTNode) -> bool:
        """Whether the global policy can be mixed when `node` runs: set before it on
        the way there (also in a branch: `if amp: set_global_policy(...)`, or by a
        function called earlier or a caller), or assumed for the module. A place that
        runs only before every mixed setting, or after a reset, is not mixed."""
        return any(n in MIXED_POLICIES for n in self.global_at(node))

    @property
    def global_float16_somewhere(self) -> bool:
        """Whether a float16 policy can be the global one anywhere in the module (set
        here, assumed, or brought by the project): the cheap gate before `..._at`."""
        if self.assumed in FLOAT16_POLICIES or any(n in FLOAT16_POLICIES for n in self.from_project[0]):
            return True
        return any(s.kind == "global" and s.names and (s.names & set(FLOAT16_POLICIES)) for s in self.global_settings)

    def global_float16_at(self, node: cst.CSTNode) -> bool:
        """Whether layers created at `node` without a `dtype=` can compute in float16."""
        return any(n in FLOAT16_POLICIES for n in self.global_at(node))

    def loss_scaled_at(self, node: cst.CSTNode) -> bool:
        """Whether `mixed_float16` (the policy that needs loss scaling, and under which
        `compile` wraps the optimizer) can be the global policy when `node` runs."""
        return "mixed_float16" in self.global_at(node)

    def global_compute_dtypes_at(self, node: cst.CSTNode) -> frozenset[str]:
        """Half compute dtypes of the mixed global policies that can be in effect at `node`."""
        return frozenset(c for c in (compute_dtype(n) for n in self.global_at(node) if n in MIXED_POLICIES) if c)

    # -- summary --------------------------------------------------------------------
    @property
    def settings(self) -> list[PolicySetting]:
        return self.global_settings + self.layer_settings

    @cached_property
    def from_project(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """(mixed policies other modules of the project can bring here, the files that
        set them): callers that run this module's code under them, or functions of
        other modules this module calls that set them."""
        project = self._facts.project
        if project is None:
            return frozenset(), ()
        return project.mixed_policies()

    @property
    def mixed_policies(self) -> frozenset[str]:
        """The mixed policies the module can run under."""
        found = {n for s in self.settings for n in (s.names or ()) if n in MIXED_POLICIES}
        if self.assumed:
            found.add(self.assumed)
        found |= self.from_project[0]
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
        sources = []
        if any(n in MIXED_POLICIES for s in self.settings for n in (s.names or ())):
            sources.append("set in the file")
        if self.assumed:
            sources.append("assume-policy")
        if self.from_project[0]:
            sources.append("from " + (", ".join(self.from_project[1]) or "another module"))
        return f"{', '.join(sorted(self.mixed_policies))} ({'; '.join(sources)})"
