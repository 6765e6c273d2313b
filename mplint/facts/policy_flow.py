"""The global dtype policy in effect at each place of a module, not per file.

    flow = facts.policy.flow
    flow.at(node)          # the policies that can be in effect when `node` runs
    flow.entry_of(func)    # ... when `func` is entered
    flow.summary           # the module's flow as data (mplint.facts.entries.ModuleFlow)

A policy set in a function is in effect from that statement on, in that function and in
what it calls afterwards; not in sibling functions, nor in what ran before it. Each
scope (the module, each function) is read once into a *symbolic* state: the policies
set before a place, or `ENTRY` ("whatever was in effect when the scope was entered")
where no setting certainly ran in between. A setting in a branch or loop the place is
not in may or may not have run, so it adds its policy and the search goes on; one that
certainly ran ends it; one in the other branch of an `if` never ran before the place.
Calls to functions that set the policy (of the module, or of another module of the
project) apply their effect (the state at their end); `set_global_policy(saved)` with
`saved = global_policy()` restores the state saved; `with policy_scope(p):` holds `p`
inside only.

Entries are then solved (`mplint.facts.entries.solve`) over the call graph
(`mplint.facts.call_graph`), with what the project index says about callers in other
modules: a function is entered with the states of the places that run it; one nobody
calls is entered after the module has run (tests: after their setUp and fixtures, each
test on its own; methods: where their class is instantiated). The module itself is
entered under the assumed policy (`assume-policy`), else float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, Iterable

import libcst as cst

from mplint.analysis.calls import arg_value, has_star_args
from mplint.analysis.guards import name_tests
from mplint.analysis.node_types import SUITES, kinds
from mplint.analysis.values import call_position
from mplint.facts.receivers import method_of_known_receiver
from mplint.facts.entries import ENTRY, MODULE, UNKNOWN, FunctionFlow, ModuleFlow, deciding_guard, solve, substitute

if TYPE_CHECKING:
    from mplint.facts.call_graph import CallGraph

# (parameter, its position among positional arguments, its default's truth) -> the truth
# a call gives it, or None.
TruthOf = Callable[[str, "int | None", "bool | None"], "bool | None"]

# ModuleFacts (mplint.facts.module) and PolicyFacts (mplint.facts.policy) build this fact
# and hand themselves in: their types are named, not imported, so that the imports run
# one way only (module -> policy -> policy_flow).
ModuleFacts = Any
PolicyFacts = Any
PolicySetting = Any

# Parameters taken to be true or false (`setup(fp16=False)`): (name, truth), sorted.
Assumption = tuple[tuple[str, bool], ...]

# Statements whose blocks run only sometimes (or several times).
_CONDITIONAL_PARENTS = (cst.If, cst.Else, cst.For, cst.While, cst.Try, cst.TryStar, cst.ExceptHandler,
                        cst.Finally, cst.MatchCase)
_CONDITIONAL_KINDS = kinds(*_CONDITIONAL_PARENTS)
_BRANCHING_KINDS = kinds(cst.If, cst.Match)
_GETTERS = ("global_policy", "dtype_policy")
_POLICY_SCOPES = ("policy_scope",)


def _imported_module_names(node: cst.Import | cst.ImportFrom) -> list[str]:
    """The modules an import statement runs, as written (relative ones with dots)."""
    from mplint.analysis.names import dotted_name

    if isinstance(node, cst.Import):
        return [dotted_name(alias.name) or "" for alias in node.names]
    module = "." * len(node.relative) + (dotted_name(node.module) or "" if node.module is not None else "")
    found = [module] if module.strip(".") or node.relative else []
    if not isinstance(node.names, cst.ImportStar):  # `from pkg import sub`: the package, then its submodule
        separator = "" if module.endswith(".") or not module else "."
        found += [f"{module}{separator}{alias.name.value}" for alias in node.names
                  if isinstance(alias.name, cst.Name)]
    return found


def constant_truth(facts: "ModuleFacts", test: cst.BaseExpression) -> bool | None:
    """The truth of a test whose value is written in the code: `False`, `0`, `not True`,
    or a name bound only to such literals or module constants (not a flag, not a
    parameter); None otherwise."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = constant_truth(facts, test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        return _constant_comparison(facts, test.left, test.comparisons[0])
    if not isinstance(test, (cst.Name, cst.Integer)):
        return None
    found = _constant(facts, test)
    return bool(found[0]) if found is not None and isinstance(found[0], (bool, int, type(None))) else None


def _constant(facts: "ModuleFacts", expr: cst.BaseExpression) -> tuple[object] | None:
    """(the value,) of an expression written as a literal or bound only to literals and
    module constants; None otherwise."""
    value = facts.values.resolve(expr)
    return (value.value,) if value is not None and value.written_in_code else None


def _constant_comparison(facts: "ModuleFacts", left: cst.BaseExpression, target: cst.ComparisonTarget) -> bool | None:
    """`MIXED is True`, `flag == False`, `mode != "fp16"` on constants written in the code."""
    operator = target.operator
    if not isinstance(operator, (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)):
        return None
    a, b = _constant(facts, left), _constant(facts, target.comparator)
    if a is None or b is None or not all(isinstance(v[0], (bool, int, float, str, type(None))) for v in (a, b)):
        return None
    if isinstance(operator, (cst.Is, cst.IsNot)):
        if not (isinstance(a[0], (bool, type(None))) and isinstance(b[0], (bool, type(None)))):
            return None  # `is` on other values is identity, not equality
        same = a[0] is b[0]
    else:
        same = a[0] == b[0]
    return same if isinstance(operator, (cst.Is, cst.Equal)) else not same


def _is_main_test(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return len(names) == 1 and len(strings) == 1


def _all_params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


@dataclass(frozen=True)
class _Event:
    node: cst.CSTNode  # the call
    kind: str  # "set", "restore", "call"
    names: frozenset[str] = frozenset()  # "set": the policies it can set
    saved_at: cst.CSTNode | None = None  # "restore": where the saved policy was read
    callees: tuple[cst.FunctionDef, ...] = ()  # "call" of the module's functions
    exit: frozenset[str] | None = None  # "call" of another module's function: its effect
    # "set" whose policy a parameter of its function chooses (`"mixed_float16" if amp else
    # "float32"`): (the parameter, the policies when it is true, when it is false)
    chosen_by: tuple[str, frozenset[str], frozenset[str]] | None = None


class PolicyFlow:
    def __init__(self, facts: "ModuleFacts", policy: "PolicyFacts", module_entry: frozenset[str]) -> None:
        self.facts = facts
        self.index = facts.index
        self.graph: CallGraph = facts.call_graph
        self.module_entry = module_entry
        self.project = facts.project
        self._policy = policy
        self._events: dict[int, list[_Event]] = {}  # scope -> events in source order
        self._withs: dict[int, list[tuple[cst.With, frozenset[str]]]] = {}
        self._symbolic: dict[int, frozenset[str]] = {}
        self._exits: dict[tuple[int, Assumption], frozenset[str] | None] = {}
        self._guards: dict[int, dict[str, tuple[int | None, bool | None]]] = {}
        self._paths_cache: dict[int, tuple[frozenset[int], dict[int, int]]] = {}
        self._outgoing: list[tuple[cst.Call, str]] = []  # calls of other project modules' functions
        self._collect()

    # -- public ------------------------------------------------------------------
    def at(self, node: cst.CSTNode) -> frozenset[str]:
        """The global policies that can be in effect when `node` runs."""
        return substitute(self.symbolic_at(node), self._entry(self.scope_of(node)))

    def entry_of(self, function: cst.FunctionDef) -> frozenset[str]:
        return self._entry(function)

    def module_exit(self) -> frozenset[str]:
        return substitute(self.exit_of(self.index.module), self.module_entry)

    @property
    def outgoing_calls(self) -> list[tuple[cst.Call, str]]:
        """(call, absolute callee name) for the module's calls of other project modules."""
        return self._outgoing

    @property
    def changes_policy(self) -> bool:
        """Whether the module sets the global policy anywhere (itself or by a call)."""
        return any(self._events.values())

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The function whose code runs `node` (a function's own definition runs in the
        scope that defines it), else the module."""
        if isinstance(node, cst.FunctionDef):
            return self.index.enclosing(node, cst.FunctionDef) or self.index.module
        return self.index.enclosing(node, cst.FunctionDef) or self.index.module

    @cached_property
    def summary(self) -> ModuleFlow:
        """The module's flow as data: what the project index keeps of it."""
        graph = self.graph
        flow = ModuleFlow(exit=self.import_exit(), changes_policy=self.changes_policy,
                          policy_flags=self._policy.local_mixed_flag_guards,
                          float16_flags=self._policy.local_float16_flag_guards)
        for function in graph.functions:
            flow.functions[graph.key_of(function)] = self._function_flow(function)
        for classdef in graph.classes:
            sites = self._sites(graph.constructions(classdef))
            if sites:
                flow.constructions[graph.class_keys[id(classdef)]] = sites
        for call, callee in self._outgoing:
            flow.outgoing.append((self._caller_key(call), callee, self.symbolic_at(call)))
        return flow

    # -- summary pieces ----------------------------------------------------------------
    def _caller_key(self, node: cst.CSTNode) -> str:
        scope = self.scope_of(node)
        return MODULE if scope is self.index.module else self.graph.key_of(scope)  # type: ignore[arg-type]

    def _sites(self, nodes: Iterable[cst.CSTNode]) -> list[tuple[str, frozenset]]:
        return [(self._caller_key(n), self.symbolic_at(n)) for n in nodes]

    def _function_flow(self, function: cst.FunctionDef) -> FunctionFlow:
        graph = self.graph
        entry = graph.entry(function)
        flow = FunctionFlow(entry.kind, self._sites(graph.sites_of(function)), effect=self._setup_effect(function))
        for param, (position, default) in self.parameter_guards(function).items():
            flow.conditions[param] = (position, default, self.exit_of(function, ((param, False),)),
                                      self.exit_of(function, ((param, True),)))
        if entry.kind == "test":
            flow.setup = tuple(graph.key_of(s) for s in entry.setup)
        elif entry.kind == "method" and entry.classdef is not None:
            flow.owner = graph.class_keys[id(entry.classdef)]
        elif entry.kind == "nested":
            flow.defined = (self._caller_key(function), self.symbolic_at(function))
        return flow

    # -- events --------------------------------------------------------------------
    def _collect(self) -> None:
        policy = self._policy
        facts = self.facts
        for setting in policy.global_settings:
            if setting.kind != "global":
                continue
            saved = self._saved_policy(setting.argument)
            if saved is not None:
                event = _Event(setting.call, "restore", saved_at=saved)
            else:
                event = _Event(setting.call, "set", setting.names or frozenset({UNKNOWN}),
                               chosen_by=self._parameter_choice(setting))
            self._add(event)
        changing = self._policy_changing_functions()
        for call in self.index.nodes(cst.Call):
            callees = self.graph.callees(call)
            if callees:
                mine = tuple(f for f in callees if id(f) in changing)
                if mine:
                    self._add(_Event(call, "call", callees=mine))
            elif self.project is not None:
                callee = self._project_callee(call)
                if callee is None:
                    continue
                self._outgoing.append((call, callee))
                effect = self.project.exit_of(callee, self._truth_at(call))
                if effect is not None and effect != frozenset({ENTRY}):
                    self._add(_Event(call, "call", exit=effect))
        if self.project is not None:
            # Importing a project module runs its top-level code: a policy it sets
            # there is in effect from the import on (`import model`, model.py setting
            # the policy at import time).
            for node in (*self.index.nodes(cst.Import), *self.index.nodes(cst.ImportFrom)):
                for imported in _imported_module_names(node):
                    effect = self.project.import_effect(imported)
                    if effect is not None and effect != frozenset({ENTRY}):
                        self._add(_Event(node, "call", exit=effect))
                        break
        for with_node in self.index.nodes(cst.With):
            for item in with_node.items:
                call = item.item
                if isinstance(call, cst.Call):
                    qualified = facts.qualified(call.func) or ""
                    if qualified.startswith("keras.") and qualified.rsplit(".", 1)[-1] in _POLICY_SCOPES:
                        names = policy.policy_names(arg_value(call, 0, "policy"))
                        scope = self.scope_of(with_node)
                        self._withs.setdefault(id(scope), []).append((with_node, names or frozenset({UNKNOWN})))
        for events in self._events.values():
            events.sort(key=lambda e: self.index.position_in_order(e.node))

    def _project_callee(self, call: cst.Call) -> str | None:
        """The absolute name of the project function, class or method a call runs, if any
        (a method where its receiver's class is known: `mplint.facts.receivers`)."""
        assert self.project is not None
        raw = self.facts.names.raw(call.func) or method_of_known_receiver(self.facts, call.func)
        return self.project.resolve(raw) if raw is not None else None

    def _add(self, event: _Event) -> None:
        self._events.setdefault(id(self.scope_of(event.node)), []).append(event)

    def _policy_changing_functions(self) -> set[int]:
        """Functions that set the policy, or call one that does (also in another module)."""
        changing = {id(self.scope_of(s.call)) for s in self._policy.global_settings if s.kind == "global"}
        if self.project is not None:
            for call in self.index.nodes(cst.Call):
                if not self.graph.callees(call):
                    callee = self._project_callee(call)
                    effect = self.project.exit_of(callee) if callee is not None else None
                    if effect is not None and effect != frozenset({ENTRY}):
                        changing.add(id(self.scope_of(call)))
        changing.discard(id(self.index.module))
        if not changing:
            return changing
        grew = True
        while grew:
            grew = False
            for function in self.graph.functions:
                if id(function) in changing:
                    continue
                for node in self.index.descendants(function):
                    if isinstance(node, cst.Call) and any(id(f) in changing for f in self.graph.callees(node)):
                        changing.add(id(function))
                        grew = True
                        break
        return changing

    def _saved_policy(self, argument: cst.BaseExpression | None) -> cst.CSTNode | None:
        """For `set_global_policy(old)` with `old = global_policy()`: where it was saved."""
        if not isinstance(argument, cst.Name):
            return None
        values = self.facts.bindings.values_visible(argument, self.index)
        if len(values) != 1 or not isinstance(values[0], cst.Call):
            return None
        qualified = self.facts.qualified(values[0].func) or ""
        if qualified.startswith("keras.") and qualified.rsplit(".", 1)[-1] in _GETTERS:
            return values[0]
        return None

    # -- symbolic states -----------------------------------------------------------------
    def symbolic_at(self, node: cst.CSTNode) -> frozenset[str]:
        key = id(node)
        found = self._symbolic.get(key)
        if found is None:
            self._symbolic[key] = frozenset({ENTRY})  # guards a restore that reads itself
            found = self._state_before(node, self.scope_of(node))
            self._symbolic[key] = found
        return found

    def exit_of(self, scope: cst.CSTNode, assume: Assumption = ()) -> frozenset[str]:
        """The symbolic state at the end of a function (or the module); with `assume`,
        when the function's parameters named there have that truth."""
        key = (id(scope), assume)
        if key in self._exits:
            found = self._exits[key]
            return found if found is not None else frozenset({ENTRY})  # recursion: no effect assumed
        self._exits[key] = None
        result = self._state_before(None, scope, assume)
        self._exits[key] = result
        return result

    def import_exit(self) -> frozenset[str]:
        """The symbolic state after the module is imported: what an importer runs under.
        Code under `if __name__ == "__main__":` runs only when the module is the program,
        never on import, so its settings do not count here."""
        module = self.index.module
        events = self._events.get(id(module), [])
        kept = [e for e in events if not self._under_main_guard(e.node)]
        if len(kept) == len(events):
            return self.exit_of(module)
        self._events[id(module)] = kept
        try:
            return self._state_before(None, module)
        finally:
            self._events[id(module)] = events

    def _under_main_guard(self, node: cst.CSTNode) -> bool:
        for ancestor in self.index.ancestors(node):
            if isinstance(ancestor, cst.If) and _is_main_test(ancestor.test):
                return True
        return False

    def _state_before(self, node: cst.CSTNode | None, scope: cst.CSTNode, assume: Assumption = ()) -> frozenset[str]:
        index = self.index
        events = self._events.get(id(scope), [])
        base = frozenset({ENTRY})
        start = -1
        holder = self._policy_scope_holding(node, scope) if node is not None else None
        if holder is not None:
            with_node, names = holder
            base, start = names, index.position_in_order(with_node)
        position = index.position_in_order(node) if node is not None else None
        here = self._paths(node, scope)[0] if node is not None else frozenset()
        result: set[str] = set()
        for event in reversed(events):
            at = index.position_in_order(event.node)
            if position is not None and at >= position:
                continue
            if at <= start:
                break
            if node is not None and index.contains(event.node, node):
                continue
            if self._inside_other_policy_scope(event.node, node, scope):
                continue
            if node is not None and self._exclusive(event.node, node, scope):
                continue
            if assume and any(dict(assume).get(param, truth) != truth
                              for param, truth in self._parameter_conditions(event.node, scope)):
                continue  # `if fp16:` in a call that passes `fp16=False`
            contribution, certain = self._effect(event, assume)
            result |= contribution
            if certain and self._paths(event.node, scope)[0] <= here:
                return frozenset(result)
        return frozenset(result | base)

    def _effect(self, event: _Event, assume: Assumption = ()) -> tuple[frozenset[str], bool]:
        """(the policies an event leaves, whether it certainly replaces the state); with
        `assume`, a setting its function's parameter chooses sets what that truth picks."""
        if event.kind == "set":
            if event.chosen_by is not None and event.chosen_by[0] in dict(assume):
                param, when_true, when_false = event.chosen_by
                return (when_true if dict(assume)[param] else when_false), True
            return event.names, True
        if event.kind == "restore":
            assert event.saved_at is not None
            return self.symbolic_at(event.saved_at), True
        if event.exit is not None:
            exits = event.exit
        else:
            truth_of = self._truth_at(event.node)
            exits = frozenset().union(*(self._call_exit(f, truth_of) for f in event.callees))
        return exits - {ENTRY}, ENTRY not in exits

    def _exclusive(self, event_node: cst.CSTNode, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
        """Whether the two are in different branches of one `if`/`match` (one never runs
        before the other)."""
        mine, theirs = self._paths(event_node, scope)[1], self._paths(node, scope)[1]
        return any(theirs.get(key, branch) != branch for key, branch in mine.items())

    def _paths(self, node: cst.CSTNode, scope: cst.CSTNode) -> tuple[frozenset[int], dict[int, int]]:
        """The conditional blocks (branches, loop bodies, try parts) between `node` and its
        scope, and the branch taken at each `if`/`match` on the way."""
        key = id(node)
        found = self._paths_cache.get(key)
        if found is None:
            blocks = set()
            branches: dict[int, int] = {}
            child = node
            for ancestor in self.index.ancestors(node):
                if ancestor is scope:
                    break
                kind = type(ancestor)
                if kind in _CONDITIONAL_KINDS and type(child) in SUITES:
                    blocks.add(id(child))
                if kind in _BRANCHING_KINDS:
                    branches[id(ancestor)] = id(child)
                child = ancestor
            found = self._paths_cache[key] = (frozenset(blocks), branches)
        return found

    def _policy_scope_holding(self, node: cst.CSTNode, scope: cst.CSTNode) -> tuple[cst.With, frozenset[str]] | None:
        withs = self._withs.get(id(scope))
        if not withs:
            return None
        holding = [(w, n) for w, n in withs if self.index.contains(w.body, node)]
        if not holding:
            return None
        return max(holding, key=lambda pair: self.index.position_in_order(pair[0]))

    def _inside_other_policy_scope(self, event_node: cst.CSTNode, node: cst.CSTNode | None, scope: cst.CSTNode) -> bool:
        """An event inside a `with policy_scope(...)` that does not hold `node` is undone
        when the block ends."""
        withs = self._withs.get(id(scope))
        if not withs:
            return False
        for with_node, _ in withs:
            if self.index.contains(with_node.body, event_node) and (
                node is None or not self.index.contains(with_node.body, node)
            ):
                return True
        return False

    def _setup_effect(self, function: cst.FunctionDef) -> frozenset[str]:
        """What a setUp or fixture leaves for the test: its state at `yield` (a fixture
        that yields resets afterwards), else at its end."""
        if not self._events.get(id(function)):
            return frozenset({ENTRY})
        for node in self.index.descendants(function):
            if isinstance(node, cst.Yield) and self.scope_of(node) is function:
                return self.symbolic_at(node)
        return self.exit_of(function)

    # -- settings a parameter guards ------------------------------------------------------
    def parameter_guards(self, function: cst.FunctionDef) -> dict[str, tuple[int | None, bool | None]]:
        """The parameters whose truth alone decides whether one of `function`'s policy
        settings runs (`def setup(fp16=True): if fp16: set_global_policy(...)`), with their
        position among the positional arguments of a call (None: keyword only) and the
        truth of their constant default (None: none)."""
        found = self._guards.get(id(function))
        if found is None:
            found = self._guards[id(function)] = {}
            in_class = self.graph.owner(function) is not None
            for event in self._events.get(id(function), ()):
                chosen = [(event.chosen_by[0], True)] if event.chosen_by is not None else []
                for name, _ in [*self._parameter_conditions(event.node, function), *chosen]:
                    if name not in found:
                        param = next(p for p in _all_params(function) if p.name.value == name)
                        default = param.default
                        found[name] = (call_position(function, param, in_class),
                                       constant_truth(self.facts, default) if default is not None else None)
        return found

    def _parameter_choice(self, setting: PolicySetting) -> tuple[str, frozenset[str], frozenset[str]] | None:
        """(parameter, policies when true, when false) for a setting whose function's
        parameter picks the policy (`PolicyFacts.parameter_choice`), both named."""
        found = self._policy.parameter_choice(setting)
        if found is None or not found.when_true or not found.when_false:
            return None
        return found.param.name.value, found.when_true, found.when_false

    def _parameter_conditions(self, node: cst.CSTNode, scope: cst.CSTNode) -> list[tuple[str, bool]]:
        """The `if param:` / `if not param:` tests on `scope`'s own parameters (never
        rebound in it) that `node` runs under: (parameter, the truth it needs)."""
        if not isinstance(scope, cst.FunctionDef):
            return []
        names = {p.name.value for p in _all_params(scope)}
        bindings = self.facts.bindings
        return [(test.value, needed) for test, needed in name_tests(self.index, node)
                if test.value in names and not bindings.is_bound(scope, test.value)]

    def _truth_at(self, call: cst.CSTNode) -> "TruthOf":
        """How `call` sets a parameter: the truth of its constant argument, else of the
        parameter's default where it passes none; None where that is not known."""
        def truth_of(param: str, position: int | None, default: bool | None) -> bool | None:
            if not isinstance(call, cst.Call) or has_star_args(call):
                return None  # `*args` / `**kwargs` may pass it
            given = arg_value(call, position, param)
            return constant_truth(self.facts, given) if given is not None else default
        return truth_of

    def _call_exit(self, function: cst.FunctionDef, truth_of: "TruthOf") -> frozenset[str]:
        """The effect of a call of one of the module's functions, under the arguments it
        passes to a parameter that guards a setting."""
        guards = sorted((param, *rest) for param, rest in self.parameter_guards(function).items())
        decided = deciding_guard(guards, truth_of)
        return self.exit_of(function, (decided,) if decided is not None else ())

    # -- entries ---------------------------------------------------------------------
    @cached_property
    def _entries(self) -> dict[tuple[str, str], frozenset]:
        external = self.project.external_flow() if self.project is not None else None
        if not self.changes_policy and external is None:
            # Nothing sets a policy here or reaches this module from elsewhere.
            return {("", self.graph.key_of(f)): self.module_entry for f in self.graph.functions}
        return solve({"": self.summary}, {"": self.module_entry}, {"": external} if external is not None else None)

    def _entry(self, scope: cst.CSTNode) -> frozenset[str]:
        if scope is self.index.module:
            return self.module_entry
        return self._entries.get(("", self.graph.key_of(scope)), self.module_exit())  # type: ignore[arg-type]
