"""Which command-line flags a place runs under: `if args.fp16:` ... `else:`.

    flag_guards(facts, node)        # {"fp16": False} for code in the `else:` of `if self.args.fp16:`
    common_guards([...])            # the guards every one of several places shares
    never_under(facts, node, flags) # whether `node` never runs where the flags have those values

A program parses its flags once, so two places that test the same flag agree: a policy
set only `if args.fp16:` is not in effect in the `else:` of `if self.args.fp16:` in the
trainer that program runs. A flag is an attribute of a parsed flag namespace (`args`,
`FLAGS`, `opt`, ... as `ValueResolver.is_flag_namespace` knows them), also kept on
`self` (`self.args = args`). `flag_guards` reads only tests that are a flag or its
negation (`not args.fp16`) and the conjuncts of a body's `and`; `never_under` evaluates
any `and`/`or`/`not` of flags under known values, so the `else:` of
`if args.mixed_precision and not args.use_tpu:` never runs where mixed_float16 is set
(`if args.mixed_precision:` with `"mixed_float16" if not args.use_tpu else ...`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import libcst as cst

from mplint.analysis.calls import string_value
from mplint.analysis.guards import branches_to_module, guard_of
from mplint.analysis.values import FLAG_NAMESPACE_NAMES
from mplint.facts.entries import FRAMEWORK_METHODS

# The facts of a module (mplint.facts.module), named, not imported: the module's policy
# facts import this one.
ModuleFacts = Any

Guards = dict[str, bool]


def _flag_read(facts: ModuleFacts, test: cst.BaseExpression) -> str | None:
    """The flag a test reads as it is (`args.fp16`, `self.args.fp16`, `FLAGS.amp`), a key
    of a settings object or of one of its sections (`config["training"].get("amp")`,
    `cfg["amp"]`, `cfg.train.amp`), or a name the module binds once at its top level
    (`mp = params.train.mixed_precision`), keyed by the module: another module's `mp` is
    another variable. A key is named as the settings spell it, whichever section holds it:
    the configuration files say its value (`mplint.project.config_values`)."""
    if isinstance(test, cst.Name):
        return f"{facts.path}::{test.value}" if _bound_once_at_top(facts, test) else None
    if isinstance(test, cst.Call):  # `config.get("use_amp", False)`
        func = test.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "get" and test.args
                and test.args[0].keyword is None and not test.args[0].star):
            return None
        key = string_value(test.args[0].value)
        return key if key and _settings_holder(facts, func.value) else None
    if isinstance(test, cst.Subscript):  # `cfg["use_amp"]`
        key = _key_of(test)
        return key if key and _settings_holder(facts, test.value) else None
    if not isinstance(test, cst.Attribute):
        return None
    return test.attr.value if _settings_holder(facts, test.value) else None


def _key_of(subscript: cst.Subscript) -> str | None:
    """The string key of `x["key"]`, or None."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    return string_value(subscript.slice[0].slice.value)


_MAX_SECTION_DEPTH = 3


def _settings_holder(facts: ModuleFacts, holder: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether `holder` holds a run's settings: parsed flags, a settings object made once
    per run (`self.args` too), or a section of one (`config["training"]`, `cfg.train`)."""
    if isinstance(holder, cst.Attribute) and isinstance(holder.value, cst.Name) and holder.value.value == "self":
        return holder.attr.value in FLAG_NAMESPACE_NAMES
    if facts.values.is_flag_namespace(holder) or _settings_object(facts, holder):
        return True
    if depth >= _MAX_SECTION_DEPTH:
        return False
    if isinstance(holder, cst.Subscript):
        return _key_of(holder) is not None and _settings_holder(facts, holder.value, depth + 1)
    if isinstance(holder, cst.Attribute):
        return _settings_holder(facts, holder.value, depth + 1)
    return False


def _settings_object(facts: ModuleFacts, holder: cst.BaseExpression) -> bool:
    """A flag namespace's name bound to what a call returns (`args = setup_args.Args()`,
    `cfg = load_config(path)`): a settings object made once per run, as parsed flags are."""
    if not isinstance(holder, cst.Name) or holder.value not in FLAG_NAMESPACE_NAMES:
        return False
    values = facts.values.bindings.values_visible(holder, facts.index)
    return bool(values) and all(isinstance(value, cst.Call) for value in values)


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


def choice_guards(facts: ModuleFacts, expr: cst.BaseExpression | None,
                  names_of: Callable[[cst.BaseExpression], frozenset[str] | None], name: str) -> Guards:
    """The flags under which `expr` evaluates to `name`: through its conditional
    expressions, the test of each one whose other arm cannot give `name`
    (`"mixed_float16" if not args.use_tpu else "mixed_bfloat16"`: `{"use_tpu": False}`)."""
    found: Guards = {}
    while isinstance(expr, cst.IfExp):
        test = expr.test
        possible = [(arm, truth) for arm, truth in ((expr.body, True), (expr.orelse, False))
                    if names_of(arm) is None or name in (names_of(arm) or ())]
        if len(possible) != 1:
            break
        expr, truth = possible[0]
        for flag, value in _test_guards(facts, test, truth).items():
            found.setdefault(flag, value)
    return found


def common_guards(all_guards: Iterable[Guards]) -> Guards:
    """The guards every one of the places shares ({} if there are none)."""
    common: Guards | None = None
    for guards in all_guards:
        common = dict(guards) if common is None else {f: t for f, t in common.items() if guards.get(f) == t}
        if not common:
            return {}
    return common or {}


def truth_under(facts: ModuleFacts, test: cst.BaseExpression, known: Guards) -> bool | None:
    """The truth of a test where the flags of `known` have those values: `not`, `and`
    and `or` of flags; None where it depends on anything else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = truth_under(facts, test.expression, known)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = truth_under(facts, test.left, known), truth_under(facts, test.right, known)
        decisive = isinstance(test.operator, cst.Or)  # the operand value that decides: True for `or`
        if left is decisive or right is decisive:
            return decisive
        return (not decisive) if left is not None and right is not None else None
    flag = _flag_read(facts, test)
    return known.get(flag) if flag else None


def never_under(facts: ModuleFacts, node: cst.CSTNode, required: Guards, depth: int = 0) -> bool:
    """Whether `node` never runs where the flags have the values of `required`: a test
    around it (an `if` up to the module, a conditional expression) is then decided the
    other way, or every use of the function holding it is in such a place."""
    if not required:
        return False
    for test, negated in guard_of(facts.index, node, to_module=True):
        if truth_under(facts, test, required) is negated:
            return True
    uses = _uses_of_function(facts, node, depth)
    return bool(uses) and all(never_under(facts, use, required, depth + 1) for use in uses)


def _uses_of_function(facts: ModuleFacts, node: cst.CSTNode, depth: int) -> list[cst.CSTNode]:
    """Every place that runs or hands on the function holding `node`, where they are all
    known: a module-level or nested function's calls and references (`strategy.run(step_fn)`); a method's
    `self.name` references in its class (`self.step = tf.function(self.train_step)`),
    where nothing else in the module names it, no other module of the project names it
    (a public method), and the framework does not run it (a hook name on a class with
    bases). Empty where they are not known."""
    index = facts.index
    function = index.enclosing(node, cst.FunctionDef)
    if depth >= _MAX_SELECTION_DEPTH or function is None:
        return []
    name = function.name.value
    if index.parent_of(function) is index.module or index.enclosing(function, cst.FunctionDef) is not None:
        return list(facts.call_graph.sites_of(function))  # a module-level or a nested function
    owner = facts.call_graph.owner(function)
    if owner is None or index.parent_of(owner) is not index.module or name.startswith("__"):
        return []
    if owner.bases and (name in FRAMEWORK_METHODS or name.startswith("on_")):
        return []
    if not name.startswith("_") and facts.project is not None and facts.project.used_elsewhere(name):
        return []
    uses = []
    for attribute in index.nodes(cst.Attribute):
        if attribute.attr.value != name:
            continue
        receiver = attribute.value
        if not (isinstance(receiver, cst.Name) and receiver.value in ("self", "cls")
                and index.enclosing(attribute, cst.ClassDef) is owner):
            return []  # named on another object, or in another class: not all uses are known
        uses.append(attribute)
    return uses
