"""The policy each function is entered with, solved over call edges (one module or many).

A module's policy flow (`mplint.facts.policy_flow`) is summarised as data, `ModuleFlow`:
for each function, the places that run it and the *symbolic* state there (relative to
the caller's own entry, `ENTRY`), how it is run when nothing calls it, and the module's
state at its end. `solve` turns such summaries into concrete entry states. The same
solver serves one module (the editor's, with what the project says about its callers
as extra sites) and the project index (every module whose callers matter), so the
rules for tests, methods and uncalled functions live in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

ENTRY = "<entry>"
UNKNOWN = "<unknown>"
DEFAULT = "float32"
MODULE = ""  # the caller key of module-level code

_MAX_ROUNDS = 50

Site = tuple[str, frozenset]  # (caller key, symbolic state at the call)


def module_entry(assumed: str | None) -> frozenset:
    """The policy a module's code starts under: the assumed one, else Keras's default."""
    return frozenset({assumed or DEFAULT})


def substitute(state: frozenset, entry: frozenset) -> frozenset:
    """A symbolic state made concrete with the state its scope was entered with."""
    if ENTRY not in state:
        return state
    return (state - {ENTRY}) | entry


@dataclass
class FunctionFlow:
    kind: str  # "module", "method", "test" or "nested" (how it runs when nothing calls it)
    sites: list[Site] = field(default_factory=list)  # calls and references in its module
    setup: tuple[str, ...] = ()  # "test": setUp/fixtures applied first, in order
    owner: str | None = None  # "method": the class whose instances run it
    effect: frozenset = frozenset({ENTRY})  # what it leaves for a test it sets up
    defined: Site | None = None  # "nested": where it is defined
    # Parameters whose truth decides whether a setting of it runs (`if fp16:`): name ->
    # (position among positional arguments or None, default's truth or None, its effect
    # when the parameter is false, when true).
    conditions: dict[str, tuple] = field(default_factory=dict)


Guard = tuple[str, "int | None", "bool | None"]  # (parameter, position among positional arguments, default's truth)


def deciding_guard(guards: Iterable[Guard], truth_of: Callable[[str, "int | None", "bool | None"], "bool | None"]
                   ) -> tuple[str, bool] | None:
    """The first guarding parameter (in the order given) whose truth a call decides,
    with that truth: which of a function's conditional effects the call gets."""
    for param, position, default in guards:
        truth = truth_of(param, position, default)
        if truth is not None:
            return param, truth
    return None


@dataclass
class ModuleFlow:
    functions: dict[str, FunctionFlow] = field(default_factory=dict)
    constructions: dict[str, list[Site]] = field(default_factory=dict)  # class key -> `Cls(...)` sites
    exit: frozenset = frozenset({ENTRY})  # the state after the module's code ran
    # Calls to other modules of the project: (caller key, callee as imported, state).
    outgoing: list[tuple[str, str, frozenset]] = field(default_factory=list)
    changes_policy: bool = False
    # The flags every mixed setting of the module requires (`if args.fp16:`), None where
    # it sets none (mplint.facts.flag_guards).
    policy_flags: dict | None = None
    # The same for the settings that can set mixed_float16, with the flags that choose it
    # in their argument (`"mixed_float16" if not args.use_tpu else "mixed_bfloat16"`).
    float16_flags: dict | None = None


@dataclass
class External:
    """What the rest of the project says about one module's functions and classes:
    concrete states of the places elsewhere that run them."""

    sites: dict[str, frozenset] = field(default_factory=dict)  # function key -> state
    constructions: dict[str, frozenset] = field(default_factory=dict)  # class key -> state
    # The states after the modules that import this one have run: a function nothing
    # calls may be called then (`from model import build` in a script that sets the
    # policy and hands `build` to an interactive session or a framework).
    after: frozenset = frozenset()
    # The modules whose code brings a mixed policy here (for `-v` and premises).
    carriers: set = field(default_factory=set)
    # The names that the modules running under the project's policies call (`f(...)`,
    # `obj.method(...)`): a method of a class built there runs there only if the
    # framework runs it or one of them calls it (`runs_where_built`). None: not known
    # (a module there does not parse), so every method may run there.
    called_there: frozenset | None = None


# Methods that the framework, not the user's code, runs on an instance: Keras layer,
# model, loss, metric, optimizer and callback hooks (`on_*` and private names count too).
FRAMEWORK_METHODS = frozenset({
    "call", "build", "__call__", "train_step", "test_step", "predict_step", "compute_loss", "compute_metrics",
    "get_config", "from_config", "compute_output_shape", "compute_output_spec", "compute_mask", "result",
    "update_state", "reset_state", "reset_states", "apply_gradients", "minimize", "get_gradients",
    "make_train_function", "make_test_function", "make_predict_function", "build_from_config",
})


def runs_where_built(method_key: str, called_there: frozenset | None) -> bool:
    """Whether a method of a class built under a policy runs under it: a hook the
    framework runs, or a name that code on that path calls. An API method nothing there
    calls (`build_ensemble`, called only by inference scripts that set no policy) runs
    under its own callers' policy."""
    if called_there is None:
        return True
    name = method_key.rsplit(".", 1)[-1].split("#")[0]
    return name.startswith(("_", "on_")) or name in FRAMEWORK_METHODS or name in called_there


def solve(
    flows: dict[str, ModuleFlow],
    module_entries: dict[str, frozenset],
    external: dict[str, External] | None = None,
    callee_of: Callable[[str, str], tuple[str, str, str] | None] | None = None,  # (module, key, kind)
    called_there: frozenset | None = None,  # the names `flows` call, where no `external` says
) -> dict[tuple[str, str], frozenset]:
    """Concrete entry states, (module, function key) -> policies.

    `external` adds states of callers outside `flows` (already concrete);
    `callee_of(module, callee)` resolves an outgoing call of `module` to (module, key,
    "function" or "class") inside `flows`, so calls between them count too."""
    external = external or {}
    entries: dict[tuple[str, str], frozenset] = {
        (m, k): frozenset() for m, flow in flows.items() for k in flow.functions
    }
    incoming: dict[tuple[str, str], list[tuple[str, str, frozenset]]] = {}
    incoming_built: dict[tuple[str, str], list[tuple[str, str, frozenset]]] = {}
    if callee_of is not None:
        for module, flow in flows.items():
            for caller, callee, state in flow.outgoing:
                target = callee_of(module, callee)
                if target is None or target[0] not in flows:
                    continue
                target_module, key, kind = target
                bucket = incoming_built if kind == "class" else incoming
                bucket.setdefault((target_module, key), []).append((module, caller, state))
    exits = {m: substitute(flow.exit, module_entries[m]) for m, flow in flows.items()}

    def concrete(module: str, caller: str, state: frozenset) -> frozenset:
        entry = module_entries[module] if caller == MODULE else entries.get((module, caller), frozenset())
        return substitute(state, entry)

    def states(module: str, sites: Iterable[Site]) -> set[str]:
        found: set[str] = set()
        for caller, state in sites:
            found |= concrete(module, caller, state)
        return found

    def entry_of(module: str, key: str, function: FunctionFlow) -> frozenset:
        flow = flows[module]
        outside = external.get(module)
        state = states(module, function.sites)
        called = bool(function.sites)
        for caller_module, caller, site_state in incoming.get((module, key), ()):
            state |= concrete(caller_module, caller, site_state)
            called = True
        if outside is not None and key in outside.sites:
            state |= outside.sites[key]
            called = True
        if function.kind == "method":
            # Run by the framework on an instance: where the class is instantiated.
            assert function.owner is not None
            # A method the framework does not run, and nothing where the class is built
            # calls, runs where its own callers run it, not where the instance is built.
            runs_there = runs_where_built(key, outside.called_there if outside is not None else called_there)
            local = flow.constructions.get(function.owner, [])
            if runs_there:
                state |= states(module, local)
            built = bool(local)
            for caller_module, caller, site_state in incoming_built.get((module, function.owner), ()):
                if runs_there:
                    state |= concrete(caller_module, caller, site_state)
                built = True
            if outside is not None and function.owner in outside.constructions:
                if runs_there:
                    state |= outside.constructions[function.owner]
                built = True
            if not built and not called:
                state |= exits[module] | (outside.after if outside is not None else frozenset())
            return frozenset(state)
        if called:
            return frozenset(state)
        if function.kind == "test":
            current = exits[module]
            for setup in function.setup:
                current = substitute(flow.functions[setup].effect, current)
            return current
        if function.kind == "nested" and function.defined is not None:
            return concrete(module, *function.defined)
        return exits[module] | (outside.after if outside is not None else frozenset())

    for _ in range(_MAX_ROUNDS):
        changed = False
        for module, flow in flows.items():
            for key, function in flow.functions.items():
                old = entries[(module, key)]
                new = old | entry_of(module, key, function)
                if new != old:
                    entries[(module, key)] = new
                    changed = True
        if not changed:
            break
    return entries
