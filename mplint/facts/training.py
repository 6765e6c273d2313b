"""Custom training loops: gradient tapes, where their gradients go, and the optimizers.

    loops = facts.analysis(TrainingLoops)
    for step in loops.steps:          # one per `tape.gradient(...)` / `tf.gradients(...)` /
        step.call, step.target        #   `opt.minimize(...)`, in source order
        step.scaling                  # how the target is scaled: Scaling or None
        step.unscale                  # the `get_unscaled_gradients` call on its way, if any
        step.apply                    # `opt.apply_gradients(...)` / `opt.apply(...)` it reaches
        step.optimizer                # OptimizerInfo of the optimizer applying them

A step is found at module level, in functions, in `@tf.function`s and in `train_step`
overrides of `keras.Model` subclasses (whose `self.optimizer` comes from `compile`).
Gradients are followed through assignments (`grads`, `g`, tuple unpacking, list
comprehensions, clipping), `for` loops over them and the lists they `append` to, within
the scope, and through one `return` to the caller.

An optimizer reference (`optimizer`, `self.opt`, `self.optimizer`, `model.optimizer`)
is resolved to where it is built: a constructor call (also in another function of the
module, through `return`), a `LossScaleOptimizer` of any generation wrapping it (also
`opt = LSO(opt)` re-binding), a graph-rewrite call, or `compile`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from mplint.analysis.calls import arg_value
from mplint.analysis.names import dotted_name
from mplint.analysis.values import target_names
from mplint.facts.policy import CONTROL_STATEMENTS

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

TAPE_CONSTRUCTORS = frozenset({"tensorflow.GradientTape", "tensorflow.autodiff.GradientTape"})
TF_GRADIENTS = frozenset({"tensorflow.gradients", "tensorflow.compat.v1.gradients"})

# LossScaleOptimizer constructors, by generation.
LSO_CURRENT = frozenset(
    {
        "keras.mixed_precision.LossScaleOptimizer",
        "keras.optimizers.LossScaleOptimizer",
        "keras.mixed_precision.loss_scale_optimizer.LossScaleOptimizer",
    }
)
LSO_EXPERIMENTAL = frozenset({"keras.mixed_precision.experimental.LossScaleOptimizer"})
LSO_V1 = frozenset(
    {
        "tensorflow.compat.v1.train.experimental.MixedPrecisionLossScaleOptimizer",
        "tensorflow.train.experimental.MixedPrecisionLossScaleOptimizer",
        "tensorflow.compat.v1.mixed_precision.MixedPrecisionLossScaleOptimizer",
    }
)
GRAPH_REWRITE = frozenset(
    {
        "tensorflow.train.experimental.enable_mixed_precision_graph_rewrite",
        "tensorflow.compat.v1.train.experimental.enable_mixed_precision_graph_rewrite",
        "tensorflow.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite",
        "tensorflow.mixed_precision.enable_mixed_precision_graph_rewrite",
        "tensorflow.mixed_precision.experimental.enable_mixed_precision_graph_rewrite",
    }
)
WRAPPERS = {
    **{name: "current" for name in LSO_CURRENT},
    **{name: "experimental" for name in LSO_EXPERIMENTAL},
    **{name: "v1" for name in LSO_V1},
    **{name: "graph_rewrite" for name in GRAPH_REWRITE},
}
# Generations whose optimizer scales the loss (given the matching method calls).
LOSS_SCALING_GENERATIONS = frozenset({"current", "experimental", "compile"})

MODEL_BASES = frozenset({"keras.Model", "keras.models.Model", "keras.Sequential", "keras.models.Sequential"})
TF_FUNCTION = frozenset({"tensorflow.function", "tensorflow.compat.v1.function"})

# `gradients.append(g)`: a list of gradients built in a loop.
COLLECTING_METHODS = frozenset({"append", "extend", "insert"})
SCALE_METHODS = {"get_scaled_loss": "keras2", "scale_loss": "keras3"}
UNSCALE_METHOD = "get_unscaled_gradients"
APPLY_METHODS = frozenset({"apply_gradients", "apply"})
# LossScaleOptimizer-only attributes (besides the scaling methods).
LSO_ATTRIBUTES = frozenset(
    {"loss_scale", "inner_optimizer", "dynamic", "dynamic_counter", "dynamic_growth_steps", "initial_scale", "dynamic_scale"}
)

_MAX_DEPTH = 12


def optimizer_kind(qualified: str | None) -> str | None:
    """"keras" for a Keras optimizer constructor, "v1" for a TF1 one, else None."""
    if not qualified:
        return None
    last = qualified.rsplit(".", 1)[-1]
    if qualified in WRAPPERS:
        return None
    if qualified in ("keras.optimizers.get",):
        return "keras"
    for prefix in ("keras.optimizers.", "tensorflow.optimizers.", "tensorflow_addons.optimizers.", "tensorflow.keras.optimizers."):
        if qualified.startswith(prefix):
            rest = qualified[len(prefix):]
            if rest.startswith("schedules.") or not last[:1].isupper() or last in ("Optimizer", "LossScaleOptimizer"):
                return None
            return "keras"
    for prefix in ("tensorflow.compat.v1.train.", "tensorflow.train."):
        if qualified.startswith(prefix) and last.endswith("Optimizer") and last != "Optimizer" and "." not in qualified[len(prefix):]:
            return "v1"
    return None


# -- results ---------------------------------------------------------------------------

@dataclass
class OptimizerInfo:
    """What an optimizer reference is, as far as the module shows."""

    label: str  # as written at the use: "optimizer", "self.opt", "self.optimizer"
    origin: str  # "built" (a constructor is in the module), "compiled", "unknown"
    kind: str = "unknown"  # "keras", "v1" or "unknown"
    built: cst.Call | None = None  # the constructor call of the (inner) optimizer
    wrapper: cst.Call | None = None  # the LossScaleOptimizer / graph-rewrite call
    generation: str | None = None  # None (plain), "current", "experimental", "v1", "graph_rewrite", "compile"
    binding: cst.CSTNode | None = None  # the assignment the reference was resolved through

    @property
    def is_loss_scale_optimizer(self) -> bool:
        return self.generation in LOSS_SCALING_GENERATIONS

    @property
    def is_plain(self) -> bool:
        """Known to be an optimizer that is not loss-scaled in any way."""
        return self.origin == "built" and self.generation is None and self.built is not None


@dataclass
class Scaling:
    """How a gradient target is scaled."""

    method: str  # "get_scaled_loss", "scale_loss", "manual" or "conditional" (scaled on another path)
    call: cst.Call | None = None  # the scaling call (None for manual scaling)


@dataclass
class GradientStep:
    call: cst.Call  # tape.gradient(...) / tf.gradients(...) / opt.minimize(...)
    kind: str  # "tape", "tf.gradients" or "minimize"
    scope: cst.CSTNode  # the FunctionDef (or Module) it is in
    target: cst.BaseExpression | None = None
    tape: cst.With | None = None  # the `with tf.GradientTape() as tape` block
    scaling: Scaling | None = None
    unscale: cst.Call | None = None  # get_unscaled_gradients(...) applied to the gradients
    manual_unscale: bool = False  # gradients divided by something on the way
    transformed: bool = False  # gradients changed on the way (clipped, ...), not just renamed
    apply: cst.Call | None = None
    optimizer: OptimizerInfo | None = None
    in_train_step: bool = False  # a `train_step` override of a keras.Model subclass
    tf_function: bool = False

    @property
    def function(self) -> cst.FunctionDef | None:
        return self.scope if isinstance(self.scope, cst.FunctionDef) else None

    @property
    def receiver(self) -> cst.BaseExpression | None:
        """The optimizer expression the gradients are applied with."""
        if self.apply is not None and isinstance(self.apply.func, cst.Attribute):
            return self.apply.func.value
        return None


@dataclass
class _Binding:
    statement: cst.CSTNode  # the Assign / AnnAssign
    value: cst.BaseExpression
    position: int | None  # index in a tuple target, None for a plain target


def comprehension_source(index, name: cst.Name) -> cst.BaseExpression | None:
    """What a comprehension's target name takes its values from: `xs` for `x` in `[... for
    x in xs]`, the matching argument of `zip` for `[... for a, b in zip(as_, bs)]`; None
    where `name` is no target of an enclosing comprehension (or zip has star arguments)."""
    for ancestor in index.ancestors(name):
        if not isinstance(ancestor, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            continue
        clause: cst.CompFor | None = ancestor.for_in
        while clause is not None:
            target, iterated = clause.target, clause.iter
            if isinstance(target, cst.Name) and target.value == name.value:
                return iterated
            if isinstance(target, cst.Tuple):
                names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
                if name.value in names:
                    position = names.index(name.value)
                    if isinstance(iterated, cst.Call) and isinstance(iterated.func, cst.Name) \
                            and iterated.func.value == "zip" and all(a.star == "" and a.keyword is None for a in iterated.args) \
                            and position < len(iterated.args):
                        return iterated.args[position].value
                    return None
            clause = clause.inner_for_in
    return None


# -- the analysis -------------------------------------------------------------------------

class TrainingLoops:
    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.index = facts.index
        self._names: dict[tuple[int, str], list[_Binding]] = {}
        self._attributes: dict[tuple[int, str], list[_Binding]] = {}  # (class id, attr) -> bindings
        self._functions: dict[str, cst.FunctionDef] = {}  # the module's functions by name (the last definition)
        self._definitions: dict[str, list[cst.FunctionDef]] = {}  # ... every definition, in source order
        self._scopes: dict[int, cst.CSTNode] = {}
        self._by_scope: dict[int, list[cst.CSTNode]] | None = None
        self._top_level_calls: dict[str, list[cst.Call]] | None = None
        self._collect_bindings()
        self.tapes: dict[tuple[int, str], list[cst.With]] = {}
        self._collect_tapes()
        self.steps: list[GradientStep] = []
        self._collect_steps()

    # -- scopes and bindings ---------------------------------------------------------
    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        key = id(node)
        scope = self._scopes.get(key)
        if scope is None:
            scope = self.index.enclosing(node, cst.FunctionDef, cst.Lambda) or self.index.module
            self._scopes[key] = scope
        return scope

    def _flow_nodes(self, scope: cst.CSTNode) -> list[cst.CSTNode]:
        """Assignments, calls, returns and for loops of a scope, in source order
        (computed once)."""
        if self._by_scope is None:
            grouped: dict[int, list[cst.CSTNode]] = {}
            for kind in (cst.Assign, cst.Call, cst.Return, cst.For):
                for node in self.index.nodes(kind):
                    grouped.setdefault(id(self.scope_of(node)), []).append(node)
            for nodes in grouped.values():
                nodes.sort(key=self.index.position_in_order)
            self._by_scope = grouped
        return self._by_scope.get(id(scope), [])

    def _collect_bindings(self) -> None:
        index = self.index
        for statement in index.module.body:
            if isinstance(statement, cst.FunctionDef):
                self._functions[statement.name.value] = statement
                self._definitions.setdefault(statement.name.value, []).append(statement)
        for node in [*index.nodes(cst.Assign), *index.nodes(cst.AnnAssign)]:
            value = node.value
            if value is None:
                continue
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                self._bind(node, target, value, None)

    def _bind(self, statement: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression,
              position: int | None) -> None:
        if isinstance(target, cst.Name):
            key = (id(self.scope_of(statement)), target.value)
            self._names.setdefault(key, []).append(_Binding(statement, value, position))
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            owner = self.self_class(target.value)
            if owner is not None:
                self._attributes.setdefault((id(owner), target.attr.value), []).append(_Binding(statement, value, position))
        elif isinstance(target, (cst.Tuple, cst.List)) and position is None:
            for i, element in enumerate(target.elements):
                if isinstance(element, cst.Element):
                    self._bind(statement, element.value, value, i)

    def self_class(self, name: cst.Name) -> cst.ClassDef | None:
        """The class whose instance `name` is, when `name` is a method's first parameter
        (also read in a function nested in the method: `def train_step(x, y):` in `fit`)."""
        function = self.index.enclosing(name, cst.FunctionDef)
        while function is not None:
            params = [*function.params.posonly_params, *function.params.params, *function.params.kwonly_params]
            if any(p.name.value == name.value for p in params):
                first = function.params.posonly_params or function.params.params
                if not first or first[0].name.value != name.value:
                    return None
                parent = self.index.parent_of(function)
                grand = self.index.parent_of(parent) if parent is not None else None
                return grand if isinstance(grand, cst.ClassDef) else None
            if self._names.get((id(function), name.value)):
                return None  # rebound in the nested function
            function = self.index.enclosing(function, cst.FunctionDef)
        return None

    def name_bindings(self, name: cst.Name) -> tuple[cst.CSTNode | None, list[_Binding]]:
        """(scope, bindings) of the nearest scope binding `name`; (function, []) for a parameter."""
        scope: cst.CSTNode | None = self.index.enclosing(name, cst.FunctionDef, cst.Lambda)
        while scope is not None:
            found = self._names.get((id(scope), name.value))
            if found:
                return scope, found
            if isinstance(scope, cst.FunctionDef) and _is_parameter(scope, name.value):
                return scope, []
            scope = self.index.enclosing(scope, cst.FunctionDef, cst.Lambda)
        return self.index.module, self._names.get((id(self.index.module), name.value), [])

    def binding_before(self, name: cst.Name, at: cst.CSTNode | None = None) -> _Binding | None:
        """The binding of `name` that is in force at `at` (default: the name itself):
        the last one before it in its own scope, the last one of an outer scope."""
        at = at or name
        scope, bindings = self.name_bindings(name)
        if not bindings:
            return None
        usable = [b for b in bindings if not self.index.contains(b.statement, at)]
        if not usable:
            return None
        if scope is self.scope_of(at):
            before = [b for b in usable if self.index.before(b.statement, at)]
            if before:
                return before[-1]
            if scope is not self.index.module:
                return None
        if scope is self.index.module and len(usable) > 1:
            at_calls = self._binding_where_called(at, usable)
            if at_calls is not None:
                return at_calls
        return usable[-1]

    def _binding_where_called(self, at: cst.CSTNode, usable: list[_Binding]) -> _Binding | None:
        """A module global read in a module function is the binding in force where the
        function is called: the last one before each call at the module's top level, when
        the calls agree (a script that rebinds `optimizer` for a second experiment after
        running the first). None where the function is not called at the top level, or
        the calls see different bindings."""
        function: cst.CSTNode | None = self.index.enclosing(at, cst.FunctionDef)
        while function is not None and self.scope_of(function) is not self.index.module:
            function = self.index.enclosing(function, cst.FunctionDef)
        if not isinstance(function, cst.FunctionDef):
            return None
        name = function.name.value
        redefined = [d for d in self._definitions.get(name, ()) if self.index.before(function, d)]
        end = redefined[0] if redefined else None
        seen: set[int] = set()
        found: _Binding | None = None
        for call in self._calls_of_top_level_name(name):
            if not self.index.before(function, call) or (end is not None and not self.index.before(call, end)):
                continue
            before = [b for b in usable if self.index.before(b.statement, call)]
            if not before:
                return None
            found = before[-1]
            seen.add(id(found))
        return found if len(seen) == 1 else None

    def _calls_of_top_level_name(self, name: str) -> list[cst.Call]:
        """The module's top-level calls of the bare name `name`, in source order (the
        table is built once per module)."""
        if self._top_level_calls is None:
            table: dict[str, list[cst.Call]] = {}
            for node in self._flow_nodes(self.index.module):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                    table.setdefault(node.func.value, []).append(node)
            self._top_level_calls = table
        return self._top_level_calls.get(name, [])

    # -- optimizers -------------------------------------------------------------------
    def optimizer(self, expr: cst.BaseExpression, at: cst.CSTNode | None = None, depth: int = 0) -> OptimizerInfo:
        """Resolve an optimizer reference at a place in the code."""
        label = self.facts.module.code_for_node(expr)
        at = at or expr
        if depth > _MAX_DEPTH:
            return OptimizerInfo(label, "unknown")
        if isinstance(expr, cst.Call) and self._scales_inside(expr):
            return Scaling("manual")
        if isinstance(expr, cst.Name):
            binding = self.binding_before(expr, at)
            if binding is None:
                return self._from_callers(expr, label, depth) or OptimizerInfo(label, "unknown")
            info = self._evaluate(binding.value, binding, depth + 1)
            info.label = label
            if info.binding is None:
                info.binding = binding.statement
            return info
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            attr = expr.attr.value
            owner = self.self_class(expr.value)
            if owner is not None:
                usable = self._usable_bindings(owner, attr, at)
                if usable:
                    binding = usable[-1]
                    info = self._evaluate(binding.value, binding, depth + 1)
                    info.label = label
                    info.binding = info.binding or binding.statement
                    if not self._attribute_agrees(info, usable, depth):
                        return OptimizerInfo(label, "unknown")
                    return info
                if attr == "optimizer" and self.is_model_class(owner):
                    return OptimizerInfo(label, "compiled", kind="keras")
                return OptimizerInfo(label, "unknown")
            if attr == "optimizer" and self._compiled(expr.value.value):
                return OptimizerInfo(label, "compiled", kind="keras")
        return OptimizerInfo(label, "unknown")

    def alternatives(self, expr: cst.BaseExpression, at: cst.CSTNode) -> list[OptimizerInfo]:
        """Each optimizer a `self.<attr>` can hold at `at` where its bindings disagree
        (`self.opt = Adam()`, then `if amp: self.opt = enable_mixed_precision_graph_rewrite(self.opt)`);
        [] for anything else."""
        if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name)):
            return []
        owner = self.self_class(expr.value)
        if owner is None:
            return []
        live = self._live(self._usable_bindings(owner, expr.attr.value, at))
        return [self._evaluate(b.value, b, 1) for b in live] if len(live) > 1 else []

    def _usable_bindings(self, owner: cst.ClassDef, attr: str, at: cst.CSTNode) -> list[_Binding]:
        """The bindings of `self.<attr>` in the class, but the one whose statement holds `at`."""
        return [b for b in self._attributes.get((id(owner), attr), []) if not self.index.contains(b.statement, at)]

    def _live(self, usable: list[_Binding]) -> list[_Binding]:
        """The bindings no later one of the same function always overrides."""
        return [b for i, b in enumerate(usable) if not any(self._overrides(later, b) for later in usable[i + 1:])]

    def _attribute_agrees(self, info: OptimizerInfo, usable: list[_Binding], depth: int) -> bool:
        """Whether every binding of a `self.` attribute that can be in force gives the same
        kind of optimizer as the last one (`info`). A binding is overridden by a later one
        of the same method that always runs after it; bindings of different methods all
        can be in force (which method ran last depends on the callers): `__init__` wraps
        the optimizer in a LossScaleOptimizer, `change_params(learning_rate=...)` builds a
        plain one."""
        live = self._live(usable)
        if len(live) < 2:
            return True
        wanted = (info.origin, info.generation, info.kind)
        for binding in live[:-1]:
            other = self._evaluate(binding.value, binding, depth + 1)
            if (other.origin, other.generation, other.kind) != wanted:
                return False
        return True

    def _overrides(self, later: _Binding, earlier: _Binding) -> bool:
        """Whether `later` always runs after `earlier` in the same function, so that
        `earlier`'s value is gone once the function ran."""
        function = self.index.enclosing(later.statement, cst.FunctionDef)
        if function is None or self.index.enclosing(earlier.statement, cst.FunctionDef) is not function:
            return False
        for ancestor in self.index.ancestors(later.statement):
            if ancestor is function:
                return self.index.before(earlier.statement, later.statement)
            if isinstance(ancestor, CONTROL_STATEMENTS):
                return False  # a branch, a loop, a try: it may not run
        return False

    def _from_callers(self, name: cst.Name, label: str, depth: int) -> OptimizerInfo | None:
        """A parameter: what every call of its function in the module passes, when they
        agree (`train(model, LossScaleOptimizer(...))` in `main()` makes the parameter a
        LossScaleOptimizer in `train`)."""
        values = self.facts.values
        found = values.parameter_of(name)
        if found is None:
            return None
        function, param = found
        infos = []
        for site, argument in values.arguments(function, param):
            if isinstance(argument, (cst.Name, cst.Attribute)):
                info = self.optimizer(argument, site, depth + 1)
            else:
                info = self._evaluate(argument, None, depth + 1)
            if info.origin == "unknown":
                return None
            infos.append(info)
        if values.project is not None:
            from mplint.facts.project_context import ExternalOptimizer

            for given in values.project.arguments(self.facts.call_graph.key_of(function), param.name.value):
                if not isinstance(given, ExternalOptimizer):
                    return None  # not known, or not an optimizer
                infos.append(OptimizerInfo(label, given.origin, kind=given.kind, generation=given.generation))
        if not infos or len({(i.origin, i.generation, i.kind) for i in infos}) != 1:
            return None
        info = infos[0]
        info.label = label
        return info

    def evaluate(self, value: cst.BaseExpression) -> OptimizerInfo:
        """What an expression that builds (or names) an optimizer is."""
        return self._evaluate(value, None, 0)

    def _compiled(self, name: str) -> bool:
        """`name.compile(...)` in the module: the model `name` is compiled. Not `self`: a
        method's `self` whose class mplint cannot tell may be a trainer with a `compile` of
        its own, whose `self.optimizer` no Keras compile wraps."""
        if name in ("self", "cls"):
            return False
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "compile" and isinstance(func.value, cst.Name) \
                    and func.value.value == name:
                return True
        return False

    def _evaluate(self, value: cst.BaseExpression, binding: _Binding | None, depth: int) -> OptimizerInfo:
        label = self.facts.module.code_for_node(value)
        if depth > _MAX_DEPTH:
            return OptimizerInfo(label, "unknown")
        if binding is not None and binding.position is not None:
            if isinstance(value, (cst.Tuple, cst.List)):
                elements = value.elements
                if binding.position < len(elements) and isinstance(elements[binding.position], cst.Element):
                    return self._evaluate(elements[binding.position].value, None, depth + 1)
                return OptimizerInfo(label, "unknown")
            if not isinstance(value, cst.Call):
                return OptimizerInfo(label, "unknown")
        if isinstance(value, cst.Call):
            qualified = self.facts.qualified(value.func)
            generation = WRAPPERS.get(qualified or "")
            if generation is not None:
                inner = arg_value(value, 0, "inner_optimizer", "opt", "optimizer")
                if inner is None:
                    info = OptimizerInfo(label, "unknown")
                else:
                    info = self._evaluate(inner, None, depth + 1) if not isinstance(inner, (cst.Name, cst.Attribute)) \
                        else self.optimizer(inner, inner, depth + 1)
                    if info.origin == "compiled":
                        info.origin = "unknown"
                info.wrapper, info.generation = value, generation
                if info.origin == "unknown" and info.built is None:
                    # The wrapper itself tells us it is an optimizer, and that it is wrapped.
                    info.origin = "built"
                return info
            kind = optimizer_kind(qualified)
            if kind is not None:
                return OptimizerInfo(label, "built", kind=kind, built=value)
            if isinstance(value.func, cst.Name) and value.func.value in self._functions:
                position = binding.position if binding is not None else None
                return self._from_returns(self._functions[value.func.value], position, depth + 1)
            return OptimizerInfo(label, "unknown")
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self.optimizer(value, value, depth + 1)
        return OptimizerInfo(label, "unknown")

    def _from_returns(self, function: cst.FunctionDef, position: int | None, depth: int) -> OptimizerInfo:
        for node in self.index.descendants(function):
            if isinstance(node, cst.Return) and node.value is not None and self.scope_of(node) is function:
                value = node.value
                if position is not None:
                    if not isinstance(value, (cst.Tuple, cst.List)) or position >= len(value.elements):
                        continue
                    value = value.elements[position].value
                info = self._evaluate(value, None, depth + 1)
                if info.origin != "unknown":
                    return info
        return OptimizerInfo(function.name.value + "()", "unknown")

    def is_model_class(self, cls: cst.ClassDef, depth: int = 0) -> bool:
        """A subclass of keras.Model (directly or through classes of this module)."""
        if depth > _MAX_DEPTH:
            return False
        for base in cls.bases:
            qualified = self.facts.qualified(base.value)
            if qualified in MODEL_BASES:
                return True
            if isinstance(base.value, cst.Name):
                for other in self.index.nodes(cst.ClassDef):
                    if other.name.value == base.value.value and other is not cls and self.is_model_class(other, depth + 1):
                        return True
        return False

    def optimizer_bindings(self) -> Iterator[tuple[_Binding, OptimizerInfo]]:
        """Every assignment that binds an optimizer (plain or wrapped), with what it binds."""
        for bindings in [*self._names.values(), *self._attributes.values()]:
            for binding in bindings:
                value = binding.value
                if isinstance(value, cst.Call):
                    qualified = self.facts.qualified(value.func)
                    if qualified in WRAPPERS or optimizer_kind(qualified):
                        yield binding, self._evaluate(value, binding, 0)

    # -- tapes ------------------------------------------------------------------------
    def _is_tape_constructor(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.facts.qualified(expr.func) in TAPE_CONSTRUCTORS

    def _collect_tapes(self) -> None:
        for with_node in self.index.nodes(cst.With):
            for item in with_node.items:
                expr = item.item
                name = item.asname.name if item.asname is not None else None
                if self._is_tape_constructor(expr) and isinstance(name, cst.Name):
                    self.tapes.setdefault((id(self.scope_of(with_node)), name.value), []).append(with_node)
                elif isinstance(expr, cst.Name):
                    binding = self.binding_before(expr)
                    if binding is not None and self._is_tape_constructor(binding.value):
                        self.tapes.setdefault((id(self.scope_of(with_node)), expr.value), []).append(with_node)

    def tape_of(self, name: cst.Name) -> cst.With | None:
        """The `with` block recording the tape `name` used at that place."""
        scope: cst.CSTNode | None = self.scope_of(name)
        while scope is not None:
            withs = self.tapes.get((id(scope), name.value))
            if withs:
                before = [w for w in withs if self.index.before(w, name)]
                return before[-1] if before else withs[-1]
            if scope is self.index.module:
                break
            scope = self.index.enclosing(scope, cst.FunctionDef, cst.Lambda) or self.index.module
        return None

    # -- steps ------------------------------------------------------------------------
    def _gradient_call(self, call: cst.Call) -> tuple[str, cst.BaseExpression | None, cst.With | None] | None:
        """(kind, target, tape) of `tape.gradient(target, ...)` on a recorded tape or
        `tf.gradients(ys, ...)`; None for any other call."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "gradient" and isinstance(func.value, cst.Name):
            tape = self.tape_of(func.value)
            return ("tape", arg_value(call, 0, "target"), tape) if tape is not None else None
        if self.facts.names.qualified(func) in TF_GRADIENTS:
            return "tf.gradients", arg_value(call, 0, "ys"), None
        return None

    def _collect_steps(self) -> None:
        for call in self.index.nodes(cst.Call):
            func = call.func
            gradient = self._gradient_call(call)
            if gradient is not None:
                kind, target, tape = gradient
                step = GradientStep(call, kind, self.scope_of(call), target, tape)
            elif isinstance(func, cst.Attribute) and func.attr.value == "minimize":
                info = self.optimizer(func.value, call)
                if info.origin == "unknown":
                    continue
                step = GradientStep(call, "minimize", self.scope_of(call), arg_value(call, 0, "loss"))
                step.apply, step.optimizer = call, info
            else:
                continue
            self._context(step)
            if step.kind != "minimize":
                if step.target is not None:
                    step.scaling = self.scaling_of(step.target, step.call)
                self._follow(step)
            self.steps.append(step)
        for step in self.steps:
            # `if amp: g = tape.gradient(scaled_loss, v) else: g = tape.gradient(loss, v)`
            if step.scaling is None and step.tape is not None and self._in_branch(step.call) and any(
                other.tape is step.tape and other.scaling is not None and other is not step for other in self.steps
            ):
                step.scaling = Scaling("conditional")

    def _context(self, step: GradientStep) -> None:
        function = step.function
        if function is None:
            return
        step.tf_function = any(
            self.facts.qualified(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) in TF_FUNCTION
            for d in function.decorators
        )
        if function.name.value == "train_step":
            parent = self.index.parent_of(function)
            cls = self.index.parent_of(parent) if parent is not None else None
            step.in_train_step = isinstance(cls, cst.ClassDef) and self.is_model_class(cls)

    def scaling_of(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> Scaling | None:
        """How a gradient target is scaled (through names bound before `at`)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in SCALE_METHODS:
            return Scaling(expr.func.attr.value, expr)
        if isinstance(expr, cst.IfExp):
            # `opt.get_scaled_loss(loss) if amp else loss`: scaled where scaling is on.
            for branch in (expr.body, expr.orelse):
                found = self.scaling_of(branch, at, depth + 1)
                if found is not None:
                    return Scaling("conditional", found.call)
            return None
        # Through containers: `scaled = {k: opt.get_scaled_loss(v) for k, v in losses.items()}`
        # then `tape.gradient(scaled["loss"], ...)`; a list or dict of scaled losses alike.
        if isinstance(expr, cst.Subscript):
            return self.scaling_of(expr.value, at, depth + 1)
        if isinstance(expr, cst.DictComp):
            return self.scaling_of(expr.value, at, depth + 1)
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self.scaling_of(expr.elt, at, depth + 1)
        if isinstance(expr, (cst.Dict, cst.List, cst.Tuple)):
            values = [e.value for e in expr.elements if isinstance(e, (cst.DictElement, cst.Element))]
            found = [self.scaling_of(v, at, depth + 1) for v in values]
            return found[0] if found and all(f is not None for f in found) else None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
            if self._looks_like_scale(expr.left) or self._looks_like_scale(expr.right):
                return Scaling("manual")
            # `w * opt.get_scaled_loss(loss)`: a scaled loss, weighted
            return self.scaling_of(expr.left, at, depth + 1) or self.scaling_of(expr.right, at, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
            return self.scaling_of(expr.left, at, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
            # `w1 * scaled_a + w2 * scaled_b`: every term scaled by the same optimizer's scale
            left, right = self.scaling_of(expr.left, at, depth + 1), self.scaling_of(expr.right, at, depth + 1)
            return left if left is not None and right is not None else None
        if isinstance(expr, cst.Call) and self._scales_inside(expr):
            return Scaling("manual")
        if isinstance(expr, cst.Name):
            iterated = comprehension_source(self.index, expr)
            if iterated is not None:
                # `[tape.gradient(s, v) for s, v in zip(scaled_losses, variables)]`
                return self.scaling_of(iterated, at, depth + 1)
            binding = self.binding_before(expr, at)
            if binding is None or binding.position is not None:
                return None
            for aug in self.index.nodes(cst.AugAssign):
                if isinstance(aug.target, cst.Name) and aug.target.value == expr.value \
                        and self.scope_of(aug) is self.scope_of(expr) and isinstance(aug.operator, cst.MultiplyAssign) \
                        and self.index.before(binding.statement, aug) and self.index.before(aug, at) \
                        and self._looks_like_scale(aug.value):
                    return Scaling("manual")
            found = self.scaling_of(binding.value, binding.statement, depth + 1)
            if found is not None:
                return found
            # Scaled on another path (`if amp: scaled = opt.get_scaled_loss(loss) else:
            # scaled = loss`): the code knows about loss scaling; do not second-guess it.
            _, bindings = self.name_bindings(expr)
            for other in reversed(bindings):
                if other is not binding and other.position is None and self.index.before(other.statement, at) \
                        and not self.index.contains(other.statement, at) and self._in_branch(other.statement):
                    found = self.scaling_of(other.value, other.statement, depth + 1)
                    if found is not None:
                        return Scaling("conditional", found.call)
        return None

    def _in_branch(self, node: cst.CSTNode) -> bool:
        return any(isinstance(a, (cst.If, cst.Else, cst.Try, cst.IfExp)) for a in self.index.ancestors(node))

    def _scales_inside(self, call: cst.Call) -> bool:
        """A call of a helper that scales: its name says so (`scale_loss(loss)`), or it is
        a function of this module whose body calls a loss-scaling method."""
        dotted = dotted_name(call.func)
        if dotted is not None and "scale" in dotted.rsplit(".", 1)[-1].lower():
            return True
        if isinstance(call.func, cst.Name) and call.func.value in self._functions:
            function = self._functions[call.func.value]
            return any(
                isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in SCALE_METHODS
                for n in self.index.descendants(function)
            )
        return False

    def _looks_like_scale(self, expr: cst.BaseExpression) -> bool:
        """A constant factor, or a value whose name says it is a loss scale."""
        value = self.facts.values.resolve(expr)
        if value is not None and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
            return True
        dotted = dotted_name(expr)
        if dotted is None and isinstance(expr, cst.Call):
            dotted = dotted_name(expr.func)
        return dotted is not None and "scale" in dotted.rsplit(".", 1)[-1].lower()

    def _follow(self, step: GradientStep) -> None:
        """Follow the gradients from the gradient call to an optimizer's apply."""
        node: cst.CSTNode = step.call
        parent = self.index.parent_of(node)
        while isinstance(parent, (cst.Arg, cst.Call)):
            if isinstance(parent, cst.Call):
                func = parent.func
                if isinstance(func, cst.Attribute) and func.attr.value == UNSCALE_METHOD:
                    step.unscale = parent
                elif isinstance(func, cst.Attribute) and func.attr.value in APPLY_METHODS:
                    self._set_apply(step, parent)
                    return
                elif not (isinstance(func, cst.Name) and func.value in ("zip", "list", "tuple")):
                    step.transformed = True
            node = parent
            parent = self.index.parent_of(node)
        apply = self._enclosing_apply(step.call)
        if apply is not None:
            self._set_apply(step, apply)
            return
        names = self._assigned_names(step.call)
        if names:
            self._flow(step, names, step.scope, step.call, depth=0)
        elif isinstance(step.scope, cst.FunctionDef) and self.index.enclosing(step.call, cst.Return) is not None:
            self._flow_to_callers(step, step.scope, depth=0)

    def _flow_to_callers(self, step: GradientStep, function: cst.FunctionDef, depth: int) -> None:
        for caller in self.calls_of(function):
            caller_names = self._assigned_names(caller)
            if caller_names:
                self._flow(step, caller_names, self.scope_of(caller), caller, depth + 1)
                if step.apply is not None:
                    return

    def _enclosing_apply(self, node: cst.CSTNode) -> cst.Call | None:
        statement = self.index.statement_of(node)
        for ancestor in self.index.ancestors(node):
            if ancestor is statement:
                return None
            if isinstance(ancestor, cst.Call) and isinstance(ancestor.func, cst.Attribute) \
                    and ancestor.func.attr.value in APPLY_METHODS:
                return ancestor
        return None

    def _assigned_names(self, node: cst.CSTNode) -> set[str]:
        statement = self.index.enclosing(node, cst.Assign, cst.AnnAssign)
        if statement is None:
            return set()
        targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
        found: set[str] = set()
        for target in targets:
            found |= target_names(target)
        return found

    def _flow(self, step: GradientStep, names: set[str], scope: cst.CSTNode, start: cst.CSTNode, depth: int) -> None:
        if depth > 2:
            return
        names = set(names)
        index = self.index
        start_statement = index.statement_of(start) or start
        nodes = self._flow_nodes(scope)
        first = bisect.bisect_right([index.position_in_order(n) for n in nodes], index.position_in_order(start))
        after = [n for n in nodes[first:] if not index.contains(start_statement, n)]
        for node in after:
            if isinstance(node, cst.Assign):
                if self._mentions(node.value, names):
                    if self._differentiates(node.value, names):
                        return  # a term of another gradient's target (a gradient penalty): no update
                    unscale = self._find_method_call(node.value, UNSCALE_METHOD)
                    if unscale is not None:
                        step.unscale = step.unscale or unscale
                    if _divides(node.value):
                        step.manual_unscale = True
                    if not isinstance(node.value, cst.Name) and not self._unscaled_or_plain(node.value, unscale, names):
                        step.transformed = True
                    for target in node.targets:
                        names |= target_names(target.target)
            elif isinstance(node, cst.For):
                if self._mentions(node.iter, names):  # `for g in grads:` / `for g, v in zip(grads, ...)`
                    names |= target_names(node.target)
            elif isinstance(node, cst.Call):
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in APPLY_METHODS \
                        and any(self._mentions(a.value, names) for a in node.args):
                    for argument in node.args:  # `apply_gradients(zip(opt.get_unscaled_gradients(g), v))`
                        if self._mentions(argument.value, names):
                            step.unscale = step.unscale or self._find_method_call(argument.value, UNSCALE_METHOD)
                    if not all(self._plain(a.value, names) for a in node.args if self._mentions(a.value, names)):
                        step.transformed = True
                    self._set_apply(step, node)
                    return
                if isinstance(func, cst.Attribute) and func.attr.value in COLLECTING_METHODS \
                        and isinstance(func.value, cst.Name) \
                        and any(self._mentions(a.value, names) for a in node.args):
                    # `clipped.append(tf.clip_by_norm(g, 1.0))` in a loop over the gradients
                    if not all(self._plain(a.value, names) for a in node.args):
                        step.transformed = True
                    names.add(func.value.value)
            elif isinstance(node, cst.Return) and node.value is not None and self._mentions(node.value, names) \
                    and isinstance(scope, cst.FunctionDef):
                self._flow_to_callers(step, scope, depth)
                return

    def _differentiates(self, expr: cst.CSTNode, names: set[str]) -> bool:
        """`expr` takes a gradient (`tape.gradient`, `tf.gradients`) of a target that
        mentions `names`."""
        for node in _subtree(expr):
            gradient = self._gradient_call(node) if isinstance(node, cst.Call) else None
            if gradient is not None and gradient[1] is not None and self._mentions(gradient[1], names):
                return True
        return False

    def _unscaled_or_plain(self, value: cst.BaseExpression, unscale: cst.Call | None, names: set[str]) -> bool:
        """`opt.get_unscaled_gradients(grads)`, also only where loss scaling is on
        (`opt.get_unscaled_gradients(g) if amp else g`): the gradients are not changed
        otherwise."""
        if isinstance(value, cst.IfExp):
            return all(self._unscaled_or_plain(b, unscale, names) for b in (value.body, value.orelse))
        if value is unscale and unscale is not None:
            return self._plain(unscale.args[0].value if unscale.args else unscale, names)
        return isinstance(value, cst.Name) and self._plain(value, names)

    def _plain(self, expr: cst.BaseExpression, names: set[str]) -> bool:
        """`grads` itself, or only packed into zip/list/tuple (or a `(g, v)` pair), or
        unscaled by `get_unscaled_gradients` on the way: not changed."""
        if isinstance(expr, cst.Name):
            return expr.value in names or not self._mentions(expr, names)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return all(self._plain(e.value, names) for e in expr.elements)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("zip", "list", "tuple"):
            return all(self._plain(a.value, names) for a in expr.args)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == UNSCALE_METHOD \
                and len(expr.args) == 1:
            return self._plain(expr.args[0].value, names)  # unscaled on the way, not otherwise changed
        return not self._mentions(expr, names)

    def calls_of(self, function: cst.FunctionDef) -> list[cst.Call]:
        """Calls of a module function (`f(...)`) or of a method through `self.f(...)`."""
        name = function.name.value
        found = []
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Name) and func.value == name and self._functions.get(name) is function:
                found.append(call)
            elif isinstance(func, cst.Attribute) and func.attr.value == name and isinstance(func.value, cst.Name) \
                    and func.value.value == "self":
                found.append(call)
        return found

    def _set_apply(self, step: GradientStep, apply: cst.Call) -> None:
        assert isinstance(apply.func, cst.Attribute)
        receiver = apply
        own = self._own_method(apply)
        if own is not None:
            # `self.apply_gradients(grads)` of a trainer class whose own `apply_gradients`
            # hands them to `self.optimizer.apply_gradients(...)`: that is the optimizer.
            receiver = next((c for c in self.index.descendants(own) if isinstance(c, cst.Call)
                             and isinstance(c.func, cst.Attribute) and c.func.attr.value in APPLY_METHODS
                             and self._own_method(c) is None), None)
            if receiver is None:
                return
        assert isinstance(receiver.func, cst.Attribute)
        info = self.optimizer(receiver.func.value, receiver)
        if apply.func.attr.value == "apply" and info.origin == "unknown":
            return  # `x.apply(...)` is an optimizer's only when we know x is one
        step.apply, step.optimizer = apply, info

    def _own_method(self, call: cst.Call) -> cst.FunctionDef | None:
        """The method of the class itself that `self.<method>(...)` runs (a trainer's
        `apply_gradients`, not an optimizer's), as the module's call graph resolves it."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
            return None
        return next((f for f in self.facts.call_graph.callees(call) if not self.index.contains(f, call)), None)

    def _mentions(self, expr: cst.CSTNode, names: set[str]) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in names
        for node in self.index.descendants(expr):
            if isinstance(node, cst.Name) and node.value in names:
                parent = self.index.parent_of(node)
                if isinstance(parent, cst.Attribute) and parent.attr is node:
                    continue
                return True
        return False

    def _calls_method(self, expr: cst.CSTNode, method: str) -> bool:
        return self._find_method_call(expr, method) is not None

    def _find_method_call(self, expr: cst.CSTNode, method: str) -> cst.Call | None:
        nodes = [expr, *self.index.descendants(expr)]
        for node in nodes:
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == method:
                return node
        return None

    # -- queries for rules --------------------------------------------------------------
    def method_calls(self, *methods: str) -> list[cst.Call]:
        """Calls `x.method(...)` for the given method names, in source order."""
        return [
            call for call in self.index.nodes(cst.Call)
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in methods
        ]

    def defines(self, name: str) -> bool:
        """Whether the module defines a function or method with this name."""
        return any(f.name.value == name for f in self.index.nodes(cst.FunctionDef))

    def step_scaled_by(self, call: cst.Call) -> GradientStep | None:
        for step in self.steps:
            if step.scaling is not None and step.scaling.call is call:
                return step
        return None

    def names_in_scope(self, scope: cst.CSTNode) -> frozenset[str]:
        """The names used in `scope` (memoised: a rule asks once per fix, the tree does not change)."""
        cache = self.__dict__.setdefault("_names_in_scope", {})
        if id(scope) not in cache:
            nodes = self.index.descendants(scope) if scope is not self.index.module else iter(self.index.nodes(cst.Name))
            cache[id(scope)] = frozenset(n.value for n in nodes if isinstance(n, cst.Name))
        return cache[id(scope)]


def _is_parameter(function: cst.FunctionDef, name: str) -> bool:
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return True
    return any(isinstance(s, cst.Param) and s.name.value == name for s in (params.star_arg, params.star_kwarg))


def _divides(expr: cst.CSTNode) -> bool:
    """Whether `expr` divides by a loss scale by hand: `g / optimizer.loss_scale`,
    `g / scale`, `g / 1024.0` (a power of two, a fixed loss scale). Averaging (`g /
    smooth_samples`, `g / num_replicas`) is not unscaling."""
    return any(isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)
               and _is_loss_scale(node.right) for node in _subtree(expr))


def _is_loss_scale(divisor: cst.BaseExpression) -> bool:
    if isinstance(divisor, (cst.Integer, cst.Float)):
        try:
            value = float(divisor.evaluated_value)
        except (ValueError, OverflowError):
            return False
        return value >= 2 and value.is_integer() and int(value) & (int(value) - 1) == 0
    return any(isinstance(node, cst.Name) and "scale" in node.value.lower() for node in _subtree(divisor))


def _subtree(node: cst.CSTNode):
    """`node` and every node below it."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(c for c in current.children if isinstance(c, cst.CSTNode))
