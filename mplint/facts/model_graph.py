"""The Keras models a module builds, and the layer call that computes each output.

Shared by the MP1xx rules (`facts.analysis(ModelGraph)`). It finds

- Functional models: `Model(inputs, outputs)` / `Model(inputs=..., outputs=...)` with a
  tensor, list, tuple or dict of outputs (also through a variable);
- Sequential models: a list/tuple literal of layers, then `.add()` calls on the same
  variable in the same scope; the last layer is the output;
- subclassed models: classes deriving from `Model` (directly or through a class of the
  module); the values `call` returns;

through every spelling of `Model`/`Sequential` (canonical names). Each output tensor is
traced back through single assignments (`x = layer(x)`, reaching definitions in
straight-line code) to the layer call that produced it: an inline constructor
`Dense(...)(x)`, a layer bound to a name first and called later (`head = Dense(...)`,
`head(x)`), or a layer attribute set in the class (`self.head = Dense(...)`,
`self.head(x)`). A cast to float32 (`tf.cast`, `keras.ops.cast`) ends a trace as float32.
Anything else (an op on tensors, a custom layer, a nested model, a name bound in a
branch) is "unknown": precision over recall, the rules stay silent there.

Models used as parts of other models (a backbone called on a symbolic tensor, an
element of a Sequential, a sub-model attribute) are marked `component`: their outputs
are not final outputs.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from mplint.analysis.assigned_reads import paired_target
from mplint.analysis.calls import arg_value, get_arg, has_star_args
from mplint.facts.policy import FULL_DTYPES, controls_between, scope_of

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

MODEL_CLASSES = frozenset(
    {
        "keras.Model",
        "keras.models.Model",
        "keras.engine.training.Model",
        "keras.engine.functional.Functional",
        "keras.src.models.model.Model",
        "keras.src.engine.training.Model",
    }
)
# Keras 2's premade models that combine the models they are given: `WideDeepModel(linear_model,
# dnn_model)` adds the two towers' outputs and applies its own activation (TF 2.1-2.15, tf-keras).
COMBINING_MODELS = frozenset({"keras.experimental.WideDeepModel", "keras.premade.WideDeepModel",
                              "keras.premade_models.wide_deep.WideDeepModel",
                              "keras.src.premade_models.wide_deep.WideDeepModel"})
SEQUENTIAL_CLASSES = frozenset(
    {
        "keras.Sequential",
        "keras.models.Sequential",
        "keras.engine.sequential.Sequential",
        "keras.src.models.sequential.Sequential",
        "keras.src.engine.sequential.Sequential",
    }
)
LAYER_BASES = frozenset({"keras.layers.Layer", "keras.Layer", "keras.engine.base_layer.Layer", "keras.src.layers.layer.Layer"})
INPUTS = frozenset({"keras.Input", "keras.layers.Input"})
CAST_FUNCTIONS = frozenset(
    {"tensorflow.cast", "tensorflow.dtypes.cast", "keras.ops.cast", "keras.backend.cast", "keras.src.ops.cast"}
)
# Keras layers whose output dtype is not simply the compute dtype of their policy.
UNTRACED_LAYERS = frozenset(
    {
        "keras.layers.Input",
        "keras.layers.InputLayer",
        "keras.layers.InputSpec",
        "keras.layers.Layer",
        "keras.layers.Wrapper",
        "keras.layers.Lambda",  # the function may cast
        "keras.layers.TFSMLayer",
        "keras.layers.StringLookup",
        "keras.layers.IntegerLookup",
        "keras.layers.TextVectorization",
        "keras.layers.Hashing",
        "keras.layers.HashedCrossing",
        "keras.layers.CategoryEncoding",
        "keras.layers.Discretization",
    }
)
WRAPPERS = frozenset({"keras.layers.TimeDistributed", "keras.layers.Bidirectional"})
# Layers whose `activation=` is applied last, so `Layer(act)` == `Activation(act)(Layer())`.
SPLITTABLE_ACTIVATION = frozenset(
    f"keras.layers.{name}"
    for name in (
        "Dense", "EinsumDense", "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
        "Conv3DTranspose", "SeparableConv1D", "SeparableConv2D", "DepthwiseConv1D", "DepthwiseConv2D",
        "Convolution1D", "Convolution2D", "Convolution3D", "Convolution2DTranspose",
        "Convolution3DTranspose", "SeparableConvolution1D", "SeparableConvolution2D",
        "LocallyConnected1D", "LocallyConnected2D",
    )
)


def is_keras_layer_name(qualified: str | None) -> bool:
    """`keras.layers.Dense` and the like: a Keras layer class (not a function)."""
    if qualified is None or not qualified.startswith("keras.layers."):
        return False
    rest = qualified[len("keras.layers."):]
    return "." not in rest and rest[:1].isupper()


# -- what the module binds ---------------------------------------------------------------

@dataclass(frozen=True)
class Binding:
    """One binding of a name in a scope: `name = value` (value None: not a plain value)."""

    name: str
    node: cst.CSTNode  # the statement (or expression) that binds
    value: cst.BaseExpression | None


class BindingTable:
    """Every binding of every name, per scope, in source order."""

    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        index = facts.index
        self.by_scope: dict[tuple[int, str], list[Binding]] = {}
        self._positions: dict[tuple[int, str], list[int]] = {}
        for node in index.nodes(cst.Assign):
            statement = index.statement_of(node) or node
            for target in node.targets:  # `a = b = value` binds both to value
                self._bind(node, statement, target.target, node.value)
        for node in index.nodes(cst.AnnAssign):
            self._bind(node, index.statement_of(node) or node, node.target, node.value)
        for node in index.nodes(cst.AugAssign):
            self._bind(node, index.statement_of(node) or node, node.target, None)
        for node in index.nodes(cst.For):
            self._bind(node, node, node.target, None)
        for node in index.nodes(cst.AsName):
            parent = index.parent_of(node)
            if isinstance(parent, (cst.WithItem, cst.ExceptHandler, cst.ImportAlias)):
                self._bind(node, index.statement_of(node) or node, node.name, None)
        for node in index.nodes(cst.NamedExpr):
            self._bind(node, node, node.target, node.value)
        for node in index.nodes(cst.ImportAlias):
            if node.asname is None:
                head = node.name
                while isinstance(head, cst.Attribute):
                    head = head.value
                self._bind(node, index.statement_of(node) or node, head, None)
        self.local_definitions: set[str] = set()
        for kind in (cst.FunctionDef, cst.ClassDef):
            for node in index.nodes(kind):
                self._add(scope_of(facts, node), Binding(node.name.value, node, None))
                self.local_definitions.add(node.name.value)
        for kind in (cst.FunctionDef, cst.Lambda):
            for node in index.nodes(kind):
                params = node.params
                for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                    self._add(node, Binding(param.name.value, node, None))
                for star in (params.star_arg, params.star_kwarg):
                    if isinstance(star, cst.Param):
                        self._add(node, Binding(star.name.value, node, None))
        self._sort()

    def _bind(self, owner: cst.CSTNode, statement: cst.CSTNode, target: cst.BaseExpression,
              value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            scope = scope_of(self.facts, owner)
            self._add(scope, Binding(target.value, statement, value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(owner, statement, element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._bind(owner, statement, target.value, None)

    def _add(self, scope: cst.CSTNode, binding: Binding) -> None:
        self.by_scope.setdefault((id(scope), binding.name), []).append(binding)

    def _sort(self) -> None:
        order = self.facts.index.position_in_order
        for bindings in self.by_scope.values():
            bindings.sort(key=lambda b: order(b.node))

    def in_scope(self, scope: cst.CSTNode, name: str) -> list[Binding]:
        return self.by_scope.get((id(scope), name), [])

    def positions(self, scope: cst.CSTNode, name: str) -> list[int]:
        """Source positions of `in_scope(scope, name)` (for bisecting)."""
        key = (id(scope), name)
        found = self._positions.get(key)
        if found is None:
            order = self.facts.index.position_in_order
            found = self._positions[key] = [order(b.node) for b in self.by_scope.get(key, [])]
        return found


# -- results -----------------------------------------------------------------------------

@dataclass(eq=False)
class LayerRef:
    """A Keras layer constructor call and how the code refers to the layer."""

    constructor: cst.Call
    qualified: str  # canonical class name, `keras.layers.Dense`
    via: str  # "inline", "name" or "attribute"
    name: str | None = None  # the variable or attribute the layer is bound to
    statement: cst.CSTNode | None = None  # `head = Dense(...)` / `self.head = Dense(...)`
    owner: cst.ClassDef | None = None  # the class holding the attribute

    @property
    def short_name(self) -> str:
        return self.qualified.rsplit(".", 1)[-1]


@dataclass(eq=False)
class SequentialSlot:
    """Where the last layer of a Sequential model is written."""

    container: cst.List | cst.Tuple | None = None  # `Sequential([..., last])`
    element: cst.Element | None = None
    add_call: cst.Call | None = None  # `model.add(last)`


@dataclass(eq=False)
class Output:
    """One output of a model, traced back to what computes it."""

    status: str  # "layer", "float32" (a cast to float32) or "unknown"
    expr: cst.BaseExpression | None = None  # the output as written in the model
    layer: LayerRef | None = None
    application: cst.Call | None = None  # `Dense(...)(x)`, `head(x)`, `self.head(x)`
    slot: SequentialSlot | None = None


@dataclass(eq=False)
class ModelDef:
    kind: str  # "functional", "sequential" or "subclassed"
    node: cst.CSTNode  # the Model(...)/Sequential(...) call, or the ClassDef
    label: str
    outputs: list[Output] = field(default_factory=list)
    component: bool = False

    @property
    def single_output(self) -> bool:
        return len(self.outputs) == 1


_UNKNOWN = Output("unknown")


# -- the analysis -------------------------------------------------------------------------

class ModelGraph:
    MAX_DEPTH = 24

    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.index = facts.index
        self.bindings = BindingTable(facts)
        self._class_kinds = self._local_classes()
        self._loads_by_owner: dict[str, dict[int, list[cst.Name]]] = {}
        self._calls_by_func_name: dict[str, list[cst.Call]] | None = None
        self._assigned_values: dict[str, list[tuple[cst.Assign, cst.BaseExpression]]] | None = None

    @cached_property
    def models(self) -> list[ModelDef]:
        """Every model the module builds, in source order."""
        models: list[ModelDef] = []
        for call in self.facts.calls_to(MODEL_CLASSES):
            model = self._functional(call)
            if model is not None:
                models.append(model)
        for call in self._functional_subclass_calls():
            model = self._functional(call)
            if model is not None:
                models.append(model)
        for call in self.facts.calls_to(SEQUENTIAL_CLASSES):
            models.append(self._sequential(call))
        for kind, classdef in self._class_kinds.values():
            if kind == "model" and classdef is not None:
                models.append(self._subclassed(classdef))
        models.sort(key=lambda m: self.index.position_in_order(m.node))
        for model in models:
            if model.kind == "functional" and not model.component:
                model.component = self._intermediate_of(model, models)
        return models

    # -- classes of the module ------------------------------------------------------------
    def _local_classes(self) -> dict[str, tuple[str, cst.ClassDef | None]]:
        """Module classes deriving (maybe indirectly) from a Keras Model or Layer."""
        classes: dict[str, list[cst.ClassDef]] = {}
        for node in self.index.nodes(cst.ClassDef):
            classes.setdefault(node.name.value, []).append(node)
        kinds: dict[str, tuple[str, cst.ClassDef | None]] = {}
        changed = True
        while changed:
            changed = False
            for name, defs in classes.items():
                if name in kinds or len(defs) != 1:
                    continue
                kind = None
                for base in defs[0].bases:
                    qualified = self.qualified(base.value)
                    local = base.value.value if isinstance(base.value, cst.Name) else None
                    if qualified in MODEL_CLASSES or (local in kinds and kinds[local][0] == "model"):
                        kind = "model"
                    elif qualified in SEQUENTIAL_CLASSES or is_keras_layer_name(qualified) or qualified in LAYER_BASES or (
                        local in kinds and kinds[local][0] in ("layer", "sequential")
                    ):
                        kind = kind or ("sequential" if qualified in SEQUENTIAL_CLASSES else "layer")
                if kind is not None:
                    kinds[name] = (kind, defs[0])
                    changed = True
        return kinds

    def is_layer_or_model_class(self, classdef: cst.ClassDef | None) -> bool:
        if classdef is None:
            return False
        found = self._class_kinds.get(classdef.name.value)
        return found is not None and found[1] is classdef

    def local_class_kind(self, func: cst.BaseExpression) -> str | None:
        if isinstance(func, cst.Name) and func.value in self._class_kinds:
            return self._class_kinds[func.value][0]
        return None

    # -- bindings and control flow ----------------------------------------------------------
    def control(self, node: cst.CSTNode, scope: cst.CSTNode) -> set[int]:
        """Conditional/loop statements between `node` and its scope."""
        return controls_between(self.facts, node, scope)

    def reaching(self, name: cst.Name) -> Binding | None:
        """The binding of `name` that certainly holds where it is read, or None."""
        scope = scope_of(self.facts, name)
        bindings = self.bindings.in_scope(scope, name.value)
        if bindings:
            split = bisect.bisect_left(self.bindings.positions(scope, name.value), self.index.position_in_order(name))
            last = None
            for binding in reversed(bindings[:split]):
                if not self.index.contains(binding.node, name):
                    last = binding
                    break
                if isinstance(binding.node, cst.BaseCompoundStatement):
                    return None  # read inside `for name in ...:` / `with ... as name:`
                # else `x = f(x)`: the read sees the binding before
            if last is None or last.value is None:
                return None
            if not self.control(last.node, scope) <= self.control(name, scope):
                return None  # bound in a branch or loop the read is outside of
            later = bindings[split:]
            if later:
                for loop in self.index.ancestors(name):
                    if loop is scope:
                        break
                    if isinstance(loop, (cst.For, cst.While)) and any(self.index.contains(loop, b.node) for b in later):
                        return None  # re-bound later in a loop that also runs the read
            return last
        # Free variable: a binding in an enclosing function or the module, if there is one.
        outer: cst.CSTNode | None = self.index.enclosing(scope, cst.FunctionDef, cst.Lambda) if scope is not self.index.module else None
        while True:
            current = outer or self.index.module
            found = self.bindings.in_scope(current, name.value)
            if found:
                return found[0] if len(found) == 1 and found[0].value is not None else None
            if current is self.index.module:
                return None
            outer = self.index.enclosing(current, cst.FunctionDef, cst.Lambda)

    def attribute_bindings(self, classdef: cst.ClassDef, attr: str) -> list[tuple[cst.Assign, cst.BaseExpression]]:
        """`self.<attr> = value` assignments in the methods of a class."""
        found = []
        for node in self.index.descendants(classdef):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    t = target.target
                    if isinstance(t, cst.Attribute) and t.attr.value == attr and is_self(t.value):
                        found.append((node, node.value))
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                t = node.target
                if isinstance(t, cst.Attribute) and t.attr.value == attr and is_self(t.value):
                    found.append((node, node.value if isinstance(node, cst.AnnAssign) and node.value else cst.Ellipsis()))
        return found

    def attribute_uses(self, classdef: cst.ClassDef, attr: str) -> list[cst.Attribute]:
        """Reads of `self.<attr>` in a class (not the assignments)."""
        uses = []
        for node in self.index.descendants(classdef):
            if isinstance(node, cst.Attribute) and node.attr.value == attr and is_self(node.value):
                parent = self.index.parent_of(node)
                if isinstance(parent, cst.AssignTarget) or (
                    isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node
                ):
                    continue
                uses.append(node)
        return uses

    def name_loads(self, scope: cst.CSTNode, name: str) -> list[cst.Name]:
        """Reads of the variable `name` of `scope` (from nested functions too)."""
        owners = self._loads_by_owner.get(name)
        if owners is None:
            owners = {}
            for node in self.index.names(name):
                if self._is_load(node):
                    owners.setdefault(id(self._owner(node, name)), []).append(node)
            self._loads_by_owner[name] = owners
        return owners.get(id(scope), [])

    def _owner(self, node: cst.Name, name: str) -> cst.CSTNode:
        """The scope whose variable a read refers to (Python's rules, roughly: the
        nearest enclosing scope binding it; class bodies only for their own code)."""
        inner = scope_of(self.facts, node)
        first = True
        while inner is not self.index.module:
            if self.bindings.in_scope(inner, name) and (first or not isinstance(inner, cst.ClassDef)):
                return inner
            inner = scope_of(self.facts, inner)
            first = False
        return inner

    def loads_after(self, scope: cst.CSTNode, name: str, statement: cst.CSTNode) -> list[cst.Name]:
        """The reads of `scope`'s variable `name` that can see what `statement` binds: those
        after it, and those in nested functions (one defined earlier runs later, once it is
        called)."""
        return [use for use in self.name_loads(scope, name)
                if not (self.index.before(use, statement) and scope_of(self.facts, use) is scope)]

    def reads_reached_by(self, value: cst.BaseExpression, name: str) -> list[cst.Name]:
        """The reads of `name` that its binding to `value` (`name = value`) may reach: in
        its scope, those with no binding in between that certainly runs first (a binding
        in one branch of an `if` leaves the other's reaching the read); reads in nested
        functions, as `loads_after` keeps them."""
        statement = self.index.statement_of(value) or value
        scope = scope_of(self.facts, value)
        bindings = self.bindings.in_scope(scope, name)
        positions = self.bindings.positions(scope, name)
        found = []
        for read in self.loads_after(scope, name, statement):
            if scope_of(self.facts, read) is not scope:
                found.append(read)
                continue
            split = bisect.bisect_left(positions, self.index.position_in_order(read))
            for binding in reversed(bindings[:split]):
                if self.index.contains(binding.node, read):
                    continue
                if binding.value is value:
                    found.append(read)
                    break
                if self.control(binding.node, scope) <= self.control(read, scope):
                    break  # re-bound on every path to the read
        return found

    def _is_load(self, node: cst.Name) -> bool:
        parent = self.index.parent_of(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return False
        if isinstance(parent, (cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName, cst.AssignTarget)):
            return False
        if isinstance(parent, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)) and getattr(parent, "target", None) is node:
            return False
        if isinstance(parent, (cst.Element, cst.StarredElement)):
            holder = self.index.parent_of(parent)
            if isinstance(holder, (cst.Tuple, cst.List)) and isinstance(self.index.parent_of(holder), (cst.AssignTarget, cst.For)):
                return False
        return True

    # -- layers -----------------------------------------------------------------------------
    def qualified(self, func: cst.BaseExpression) -> str | None:
        """Canonical name of a callee; None for classes and functions of the module
        (which a star import would otherwise claim)."""
        if isinstance(func, cst.Name) and func.value in self.bindings.local_definitions:
            return None
        return self.facts.qualified(func)

    def layer_constructor(self, expr: cst.BaseExpression | None) -> cst.Call | None:
        """`expr` if it constructs a (traceable) Keras layer."""
        if isinstance(expr, cst.Call) and not has_star_args(expr):
            qualified = self.qualified(expr.func)
            if is_keras_layer_name(qualified) and qualified not in UNTRACED_LAYERS:
                return expr
        return None

    def layer_of(self, func: cst.BaseExpression) -> LayerRef | None:
        """The layer that `func(...)` applies: inline, bound to a name, or an attribute."""
        ctor = self.layer_constructor(func)
        if ctor is not None:
            return LayerRef(ctor, self.facts.qualified(ctor.func) or "", "inline")
        if isinstance(func, cst.Name):
            binding = self.reaching(func)
            if binding is not None:
                ctor = self.layer_constructor(binding.value)
                if ctor is not None and binding.value is ctor:
                    return LayerRef(ctor, self.facts.qualified(ctor.func) or "", "name", func.value, binding.node)
            return None
        if isinstance(func, cst.Attribute) and is_self(func.value):
            classdef = self.index.class_of(func)
            if classdef is None:
                return None
            assigned = self.attribute_bindings(classdef, func.attr.value)
            if len(assigned) != 1:
                return None
            assign, value = assigned[0]
            ctor = self.layer_constructor(value)
            if ctor is None:
                return None
            statement = self.index.statement_of(assign)
            return LayerRef(ctor, self.facts.qualified(ctor.func) or "", "attribute", func.attr.value, statement, classdef)
        return None

    def wrapped_layer(self, wrapper: cst.Call) -> LayerRef | None:
        """The layer a `TimeDistributed(...)`/`Bidirectional(...)` wraps, if traceable."""
        inner = arg_value(wrapper, 0, "layer")
        ctor = self.layer_constructor(inner)
        if ctor is not None:
            return LayerRef(ctor, self.facts.qualified(ctor.func) or "", "inline")
        if isinstance(inner, cst.Name):
            binding = self.reaching(inner)
            if binding is not None:
                ctor = self.layer_constructor(binding.value)
                if ctor is not None:
                    return LayerRef(ctor, self.facts.qualified(ctor.func) or "", "name", inner.value, binding.node)
        return None

    # -- tensors -----------------------------------------------------------------------------
    def trace(self, expr: cst.BaseExpression, depth: int = 0) -> Output:
        """What computes the tensor `expr`: a layer call, a float32 cast, or unknown."""
        if depth > self.MAX_DEPTH:
            return _UNKNOWN
        if isinstance(expr, cst.Call):
            qualified = self.facts.qualified(expr.func)
            if qualified in CAST_FUNCTIONS:
                names = self.facts.policy.policy_names(arg_value(expr, 1, "dtype"))
                if names and all(n in FULL_DTYPES for n in names):
                    return Output("float32", expr)
                return _UNKNOWN
            layer = self.layer_of(expr.func)
            if layer is not None:
                return Output("layer", expr, layer, application=expr)
            return _UNKNOWN
        if isinstance(expr, cst.Name):
            binding = self.reaching(expr)
            if binding is None or binding.value is None:
                return _UNKNOWN
            found = self.trace(binding.value, depth + 1)
            return Output(found.status, expr, found.layer, found.application, found.slot) if found.status != "unknown" else _UNKNOWN
        return _UNKNOWN

    def is_symbolic(self, expr: cst.BaseExpression | None, depth: int = 0) -> bool:
        """Whether `expr` is a symbolic tensor of a model under construction (an Input, a
        layer's or a model's output)."""
        if expr is None or depth > self.MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            if self.facts.qualified(expr.func) in INPUTS:
                return True
            if self.layer_of(expr.func) is not None or self.is_model_value(expr.func, depth + 1):
                return True
            if isinstance(expr.func, cst.Call) and self.local_class_kind(expr.func.func) in ("layer", "model"):
                return True  # `ReduceMeanLayer(axis=-1)(x)`: a layer class of this module, applied
            if isinstance(expr.func, cst.Name) and expr.args and not expr.args[0].keyword \
                    and self.is_symbolic(expr.args[0].value, depth + 1):
                # `backbone = eval(cfg.model_fn)` / `= efn.EfficientNetB0(...)`, then
                # `backbone(image)`: an object a call built, applied to a symbolic tensor (a
                # model or layer of a package this module does not know)
                return self._bound_only_to_calls(expr.func)
            return False
        if isinstance(expr, (cst.List, cst.Tuple)):
            return any(self.is_symbolic(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return any(self.is_symbolic(e.value, depth + 1) for e in expr.elements if isinstance(e, cst.DictElement))
        if isinstance(expr, cst.Name):
            binding = self.reaching(expr)
            return binding is not None and self.is_symbolic(binding.value, depth + 1)
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("output", "input", "outputs", "inputs"):
            return True
        return False

    def _bound_only_to_calls(self, name: cst.Name) -> bool:
        """Whether every binding of `name` before this read, in its scope, is the result of
        a call (`backbone = eval(...)`, then maybe `backbone = add_regularization(backbone)`)."""
        scope = scope_of(self.facts, name)
        before = [b for b in self.bindings.in_scope(scope, name.value)
                  if self.index.before(b.node, name) and not self.index.contains(b.node, name)]
        return bool(before) and all(isinstance(b.value, cst.Call) for b in before)

    def is_model_value(self, expr: cst.BaseExpression | None, depth: int = 0) -> bool:
        """Whether `expr` is (a name bound to) a model construction."""
        if expr is None or depth > self.MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            qualified = self.qualified(expr.func)
            return qualified in MODEL_CLASSES or qualified in SEQUENTIAL_CLASSES or self.local_class_kind(expr.func) == "model"
        if isinstance(expr, cst.Name):
            binding = self.reaching(expr)
            return binding is not None and self.is_model_value(binding.value, depth + 1)
        return False

    # -- Functional models ----------------------------------------------------------------
    def output_expressions(self, expr: cst.BaseExpression | None, depth: int = 0) -> list[cst.BaseExpression] | None:
        """The tensors of an outputs structure (tensor, list, tuple or dict); None if unknown."""
        if expr is None or depth > 4:
            return None
        if isinstance(expr, (cst.List, cst.Tuple)):
            if any(not isinstance(e, cst.Element) for e in expr.elements):
                return None
            return [e.value for e in expr.elements]
        if isinstance(expr, cst.Dict):
            if any(not isinstance(e, cst.DictElement) for e in expr.elements):
                return None
            return [e.value for e in expr.elements if isinstance(e, cst.DictElement)]
        if isinstance(expr, cst.Name):
            binding = self.reaching(expr)
            if binding is not None and isinstance(binding.value, (cst.List, cst.Tuple, cst.Dict)):
                return self.output_expressions(binding.value, depth + 1)
        return [expr]

    def _functional(self, call: cst.Call) -> ModelDef | None:
        outputs_arg = get_arg(call, 1, "outputs")
        if outputs_arg is None or has_star_args(call):
            return None
        model = ModelDef("functional", call, self._label(call, "model"))
        tensors = self.output_expressions(outputs_arg.value)
        model.outputs = [self.trace(t) for t in tensors] if tensors is not None else [_UNKNOWN]
        model.component = self._is_component(call)
        return model

    def _intermediate_of(self, model: ModelDef, models: list[ModelDef]) -> bool:
        """Whether a Functional model ends at an intermediate tensor of another model of
        the same scope (`encoder = Model(inputs, hidden)` beside `classifier =
        Model(inputs, Dense(10)(hidden))`)."""
        assert isinstance(model.node, cst.Call)
        mine = self.output_expressions(arg_value(model.node, 1, "outputs"))
        targets = [b for b in (self.reaching(t) for t in mine or () if isinstance(t, cst.Name)) if b is not None]
        if not targets:
            return False
        scope = scope_of(self.facts, model.node)
        for other in models:
            if other is model or other.kind != "functional" or scope_of(self.facts, other.node) is not scope:
                continue
            for expr in self.output_expressions(arg_value(other.node, 1, "outputs")) or ():  # type: ignore[arg-type]
                if any(self._depends_on(expr, t) for t in targets):
                    return True
        return False

    def _depends_on(self, expr: cst.BaseExpression, target: Binding, depth: int = 0) -> bool:
        """Whether the tensor `expr` is computed from the tensor bound by `target`."""
        if depth > self.MAX_DEPTH:
            return False
        if isinstance(expr, cst.Name):
            binding = self.reaching(expr)
            if binding is None:
                return False
            return binding is target or (binding.value is not None and self._depends_on(binding.value, target, depth + 1))
        if isinstance(expr, cst.Call):
            return any(self._depends_on(a.value, target, depth + 1) for a in expr.args)
        if isinstance(expr, (cst.List, cst.Tuple)):
            return any(self._depends_on(e.value, target, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.BinaryOperation):
            return self._depends_on(expr.left, target, depth + 1) or self._depends_on(expr.right, target, depth + 1)
        return False

    # -- Sequential models ----------------------------------------------------------------
    def _sequential(self, call: cst.Call) -> ModelDef:
        model = ModelDef("sequential", call, self._label(call, "Sequential model"))
        model.outputs = [self._sequential_output(call)]
        model.component = self._is_component(call)
        return model

    def _sequential_output(self, call: cst.Call) -> Output:
        if has_star_args(call):
            return _UNKNOWN
        adds = self._add_calls(call)
        if adds is None:
            return _UNKNOWN
        if adds:
            last = adds[-1]
            element = arg_value(last, 0, "layer")
            slot = SequentialSlot(add_call=last)
        else:
            container = arg_value(call, 0, "layers")
            if isinstance(container, cst.Name):
                binding = self.reaching(container)
                mutation = self._last_mutation(container, binding.node, call) if binding is not None else None
                if mutation is not None:
                    # `layers.append(Dense(n, activation="softmax"))` after the list was written
                    return self._appended_output(mutation, call)
                container = binding.value if binding is not None else None
            if not isinstance(container, (cst.List, cst.Tuple)) or not container.elements:
                return _UNKNOWN
            last_element = container.elements[-1]
            if not isinstance(last_element, cst.Element):
                return _UNKNOWN
            element = last_element.value
            slot = SequentialSlot(container=container, element=last_element)
        layer = self._sequential_layer(element)
        if layer is None:
            return _UNKNOWN
        return Output("layer", element, layer, slot=slot)

    _MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort"})

    def _last_mutation(self, name: cst.Name, bound: cst.CSTNode, call: cst.Call) -> cst.CSTNode | None:
        """The last change to the list a name holds between its binding and `call` (in its
        scope): a `name.append(...)`-like call, `name += ...`, `name[i] = ...`; None if none."""
        scope = scope_of(self.facts, name)
        found = None
        for load in self.name_loads(scope, name.value):
            if not (self.index.before(bound, load) and self.index.before(load, call)):
                continue
            parent = self.index.parent_of(load)
            if isinstance(parent, cst.Attribute) and parent.value is load and parent.attr.value in self._MUTATORS:
                change = self.index.parent_of(parent)
                if isinstance(change, cst.Call) and change.func is parent:
                    found = change
            elif isinstance(parent, cst.AugAssign) and parent.target is load:
                found = parent
        for target in self.index.nodes(cst.AssignTarget):  # `name[i] = layer`
            if isinstance(target.target, cst.Subscript) and isinstance(target.target.value, cst.Name) \
                    and target.target.value.value == name.value and self.index.before(bound, target) \
                    and self.index.before(target, call) and scope_of(self.facts, target) is scope:
                found = target if found is None or self.index.before(found, target) else found
        return found

    def _appended_output(self, mutation: cst.CSTNode, call: cst.Call) -> Output:
        """The output of `Sequential(layers)` whose list's last change is an `append`
        that runs whenever the call does (same block): that layer; anything else (a
        change under a condition or in a loop, an `extend`) leaves the last layer unknown."""
        if not (isinstance(mutation, cst.Call) and isinstance(mutation.func, cst.Attribute)
                and mutation.func.attr.value == "append" and len(mutation.args) == 1):
            return _UNKNOWN
        statement, at_call = self.index.statement_of(mutation), self.index.statement_of(call)
        if statement is None or at_call is None or self.index.parent_of(statement) is not self.index.parent_of(at_call):
            return _UNKNOWN
        element = mutation.args[0].value
        layer = self._sequential_layer(element)
        return Output("layer", element, layer) if layer is not None else _UNKNOWN

    def _sequential_layer(self, element: cst.BaseExpression | None) -> LayerRef | None:
        ctor = self.layer_constructor(element)
        if ctor is not None:
            return LayerRef(ctor, self.facts.qualified(ctor.func) or "", "inline")
        if isinstance(element, cst.Name):
            binding = self.reaching(element)
            if binding is not None:
                ctor = self.layer_constructor(binding.value)
                if ctor is not None and binding.value is ctor:
                    return LayerRef(ctor, self.facts.qualified(ctor.func) or "", "name", element.value, binding.node)
        return None

    def _add_calls(self, call: cst.Call) -> list[cst.Call] | None:
        """`model.add(...)` calls after `model = Sequential(...)`, in order; None if the
        last layer cannot be known (`pop()`, an `add` in a branch or loop)."""
        target = self._bound_name(call)
        if target is None:
            return []
        name, statement = target
        scope = scope_of(self.facts, call)
        later = [b for b in self.bindings.in_scope(scope, name) if self.index.before(statement, b.node) and b.node is not statement]
        end = later[0].node if later else None
        adds: list[cst.Call] = []
        for node in self.name_loads(scope, name):
            if not self.index.before(statement, node) or (end is not None and not self.index.before(node, end)):
                continue
            parent = self.index.parent_of(node)
            if not (isinstance(parent, cst.Attribute) and parent.value is node):
                continue
            method = parent.attr.value
            holder = self.index.parent_of(parent)
            if method == "pop":
                return None
            if method == "add" and isinstance(holder, cst.Call) and holder.func is parent:
                if scope_of(self.facts, holder) is not scope:
                    return None
                adds.append(holder)
        if adds and not self.control(adds[-1], scope) <= self.control(call, scope):
            return None
        return adds

    def _bound_name(self, node: cst.CSTNode) -> tuple[str, cst.CSTNode] | None:
        """(`name`, statement) when `node` is the whole value of `name = node`."""
        parent = self.index.parent_of(node)
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, cst.Name):
                return target.value, self.index.statement_of(parent) or parent
        if isinstance(parent, cst.AnnAssign) and parent.value is node and isinstance(parent.target, cst.Name):
            return parent.target.value, self.index.statement_of(parent) or parent
        paired = paired_target(self.index, node)  # `G, C = make_generator(), make_critic()`
        if paired is not None:
            return paired[0].value, self.index.statement_of(paired[1]) or paired[1]
        return None

    # -- subclassed models ----------------------------------------------------------------
    def _subclassed(self, classdef: cst.ClassDef) -> ModelDef:
        model = ModelDef("subclassed", classdef, f"model class `{classdef.name.value}`")
        call_method = next(
            (s for s in classdef.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "call"), None
        )
        if call_method is None:
            return model  # inherits `call`: the base class's outputs
        for node in self.index.descendants(call_method):
            if isinstance(node, cst.Return) and node.value is not None and self.index.function_of(node) is call_method:
                tensors = self.output_expressions(node.value)
                if tensors is None:
                    model.outputs.append(_UNKNOWN)
                else:
                    model.outputs.extend(self.trace(t) for t in tensors)
        model.component = self._class_is_component(classdef)
        return model

    def _functional_subclass_calls(self) -> list[cst.Call]:
        """`MyModel(inputs, outputs)` for a Model subclass of the module that keeps
        Model's constructor and `call` (e.g. one that only overrides `train_step`):
        Keras builds a Functional model from it."""
        found = []
        for kind, classdef in self._class_kinds.values():
            if kind != "model" or classdef is None or self.overrides(classdef, ("call", "__init__")):
                continue
            for call in self.calls_of(classdef.name.value):
                if get_arg(call, 1, "outputs") is not None:
                    found.append(call)
        return found

    def overrides(self, classdef: cst.ClassDef, names: tuple[str, ...], depth: int = 0) -> bool:
        """Whether the class (or a base class of the module) defines one of `names`."""
        if depth > 8:
            return False
        if any(isinstance(s, cst.FunctionDef) and s.name.value in names for s in classdef.body.body):
            return True
        for base in classdef.bases:
            local = self._class_kinds.get(base.value.value) if isinstance(base.value, cst.Name) else None
            if local is not None and local[1] is not None and self.overrides(local[1], names, depth + 1):
                return True
        return False

    def final_output_layers(self) -> list[cst.Call]:
        """Constructor calls of the layers that compute the outputs of the models the
        module trains (not of component models): what MP101 checks, and what MP301/MP304
        must not resize (their size is the task's)."""
        found = []
        for model in self.models:
            if model.component:
                continue
            for output in model.outputs:
                if output.status == "layer" and output.layer is not None:
                    found.append(output.layer.constructor)
                    if output.layer.qualified in WRAPPERS:
                        inner = self.wrapped_layer(output.layer.constructor)
                        if inner is not None:
                            found.append(inner.constructor)
        return found

    # -- parts of other models ------------------------------------------------------------
    def _label(self, call: cst.Call, what: str) -> str:
        bound = self._bound_name(call)
        if bound:
            return f"{what} `{bound[0]}`"
        parent = self.index.parent_of(call)
        function = self.index.function_of(call)
        if isinstance(parent, cst.Return) and function is not None:
            return f"the {what} returned by `{function.name.value}()`"
        return what

    def _is_component(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Whether the model built by `node` (a call) is used as a part of another model."""
        if depth > 3:
            return False
        if self.is_layer_or_model_class(self.index.class_of(node)):
            # Built in a Layer's or Model's own code (an attribute, a list of blocks, a
            # comprehension): Keras tracks it as a sublayer, its output feeds the owner.
            return True
        parent = self.index.parent_of(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            return any(self.is_symbolic(a.value) for a in parent.args)  # `Sequential([...])(x)`
        if isinstance(parent, (cst.Arg, cst.Element)) and paired_target(self.index, node) is None:
            return self._used_as_part(node)
        if isinstance(parent, cst.Return):
            return self._returned_as_part(parent, depth)
        if isinstance(parent, cst.Assign) and parent.value is node:
            for target in parent.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and is_self(t.value):
                    return self.is_layer_or_model_class(self.index.class_of(node)) \
                        or self._attribute_used_as_part(t, depth)
        bound = self._bound_name(node)
        if bound is None:
            return False
        name, statement = bound
        for use in self.loads_after(scope_of(self.facts, node), name, statement):
            use_parent = self.index.parent_of(use)
            if isinstance(use_parent, cst.Call) and use_parent.func is use:
                if any(self.is_symbolic(a.value) for a in use_parent.args):
                    return True
                if self._result_feeds_another_model(use_parent):
                    return True  # `extra = embedding(ids)`, `encoder(x, extra)`
            elif isinstance(use_parent, (cst.Arg, cst.Element)) and self._used_as_part(use):
                return True
            elif isinstance(use_parent, cst.Attribute) and use_parent.attr.value in ("output", "outputs"):
                return True  # its output tensor feeds another graph
            elif isinstance(use_parent, cst.Return) and self._returned_as_part(use_parent, depth):
                return True  # `model = Sequential(...)`, `model.add(...)`, `return model`
            elif isinstance(use_parent, cst.Assign) and use_parent.value is use:
                for target in use_parent.targets:
                    t = target.target
                    if isinstance(t, cst.Attribute) and is_self(t.value) and self.is_layer_or_model_class(self.index.class_of(use)):
                        return True
        return False

    def _attribute_used_as_part(self, target: cst.Attribute, depth: int) -> bool:
        """A model kept on `self.<name>` of a plain class (a GAN trainer) and used there as
        a part of another model: listed in a Sequential (`Sequential([self.net,
        Activation("softmax", dtype="float32")])`), or passed to a method or function of
        the module that does so with its parameter (`self.build_head(self.net)`)."""
        owner = self.index.class_of(target)
        if owner is None:
            return False
        name = target.attr.value
        for use in self.index.descendants(owner):
            if not (isinstance(use, cst.Attribute) and use is not target and is_self(use.value)
                    and use.attr.value == name):
                continue
            holder = self.index.parent_of(use)
            if isinstance(holder, cst.Element) and self._used_as_part(use):
                return True
            if isinstance(holder, cst.Arg) and (self._used_as_part(use) or self._parameter_used_as_part(holder, depth)):
                return True
        return False

    def _parameter_used_as_part(self, argument: cst.Arg, depth: int) -> bool:
        """The module's function a call passes `argument` to lists the parameter it binds
        among a Sequential's layers, or passes it to a layer or model constructor (which
        parameter an argument binds: `ValueResolver.arguments`)."""
        if depth > 3:
            return False
        for use in self.parameter_reads(argument):
            holder = self.index.parent_of(use)
            if isinstance(holder, (cst.Element, cst.Arg)) and self._used_as_part(use):
                return True
        return False

    def parameter_reads(self, argument: cst.Arg) -> list[cst.Name]:
        """The reads of the parameter `argument` binds in the module's functions its call
        runs (which parameter an argument binds: `ValueResolver.arguments`)."""
        call = self.index.parent_of(argument)
        if not isinstance(call, cst.Call):
            return []
        reads = []
        for function in self.facts.call_graph.callees(call):
            params = [*function.params.posonly_params, *function.params.params, *function.params.kwonly_params]
            for param in params:
                if any(site is call and given is argument.value
                       for site, given in self.facts.values.arguments(function, param)):
                    reads += self.name_loads(function, param.name.value)
        return reads

    def _result_feeds_another_model(self, call: cst.Call) -> bool:
        """What an (eager) call of a model returns goes into a call of another model or
        layer instance: a name bound to a class's construction (`encoder =
        Encoder(...)`), directly or through one name. Losses and metrics are not parts."""
        feeds = [call]
        bound = self._bound_name(call)
        if bound is not None:
            name, statement = bound
            feeds += [u for u in self.name_loads(scope_of(self.facts, call), name) if not self.index.before(u, statement)]
        for value in feeds:
            holder = self.index.parent_of(value)
            consumer = self.index.parent_of(holder) if isinstance(holder, cst.Arg) else None
            if isinstance(consumer, cst.Call) and consumer.func is not value and self._is_instance_of_a_class(consumer.func):
                return True
        return False

    def _is_instance_of_a_class(self, func: cst.BaseExpression) -> bool:
        """`func` is a name bound (once, in its scope) to a construction of a class that
        is no loss or metric (`Encoder(...)`, `keras.layers.Dense(...)`), or to what a
        function of this module that builds a Keras model returns (`critic =
        make_critic()`, also paired: `G, C = make_generator(), make_critic()`)."""
        if not isinstance(func, cst.Name):
            return False
        owner = self._owner(func, func.value)
        if self._assigned_values is None:
            self._assigned_values = {}
            for node in self.index.nodes(cst.Assign):
                if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                    self._assigned_values.setdefault(node.targets[0].target.value, []).append((node, node.value))
                elif isinstance(node.value, (cst.Tuple, cst.List)):
                    for element in node.value.elements:
                        paired = paired_target(self.index, element.value)
                        if paired is not None:
                            self._assigned_values.setdefault(paired[0].value, []).append((node, element.value))
        values = [value for node, value in self._assigned_values.get(func.value, []) if scope_of(self.facts, node) is owner]
        if len(values) != 1 or not isinstance(values[0], cst.Call):
            return False
        if self._builds_a_model(values[0].func):
            return True
        constructor = values[0].func
        last = constructor.attr.value if isinstance(constructor, cst.Attribute) else \
            constructor.value if isinstance(constructor, cst.Name) else ""
        qualified = self.facts.qualified(constructor) or ""
        return last[:1].isupper() and not qualified.startswith(("keras.losses.", "keras.metrics.")) \
            and not last.endswith(("Loss", "Metric", "Accuracy", "Checkpoint", "Optimizer"))

    def _builds_a_model(self, func: cst.BaseExpression) -> bool:
        """`func` names a function of this module whose own code constructs a Keras model."""
        return isinstance(func, cst.Name) and func.value in self._model_builders

    @cached_property
    def _model_builders(self) -> frozenset[str]:
        """The names of the module's functions that construct a Keras model in their code."""
        builders = set()
        for call in self.index.nodes(cst.Call):
            function = self.index.function_of(call) if self.is_model_value(call) else None
            while function is not None:  # and the functions it is nested in
                builders.add(function.name.value)
                function = self.index.function_of(self.index.parent_of(function))
        return frozenset(builders)

    def _returned_as_part(self, returned: cst.Return, depth: int) -> bool:
        """What a function returns is a part of another model where its calls are (here,
        or in another module of the project)."""
        function = self.index.function_of(returned)
        if function is None:
            return False
        if any(self._is_component(c, depth + 1) for c in self.calls_of_function(function)):
            return True
        return self._part_elsewhere(self.facts.call_graph.key_of(function))

    def calls_of_function(self, function: cst.FunctionDef) -> list[cst.Call]:
        """The module's calls of `function`: by its plain name, or, for a method, the
        calls the call graph resolves to it (`self.build_feature_extractor()`)."""
        graph = self.facts.call_graph
        if graph.owner(function) is None:
            return self.calls_of(function.name.value)
        return [site for site in graph.sites_of(function) if isinstance(site, cst.Call)]

    def _used_as_part(self, node: cst.CSTNode) -> bool:
        """`node` is an element of a Sequential's layers, an argument of `.add()`, of a
        layer constructor (a wrapper) or of a model constructor, or of a stack a loop
        applies one after the other (`down_stack = [downsample(64, 4), ...]`, then
        `for down in down_stack: x = down(x)`)."""
        for ancestor in self.index.ancestors(node):
            if isinstance(ancestor, cst.Call):
                func = ancestor.func
                qualified = self.facts.qualified(func)
                if qualified in SEQUENTIAL_CLASSES or is_keras_layer_name(qualified) or qualified in MODEL_CLASSES \
                        or qualified in COMBINING_MODELS:
                    return True
                if isinstance(func, cst.Attribute) and func.attr.value == "add":
                    return True
                if isinstance(func, cst.Attribute) and func.attr.value in ("append", "insert") \
                        and isinstance(func.value, cst.Name) and any(a.value is node for a in ancestor.args):
                    # `blocks.append(stem)`, then `x = blocks[i](x)` or `for b in blocks: x = b(x)`
                    return self._stack_applied(scope_of(self.facts, ancestor), func.value.value)
                return False
            if isinstance(ancestor, cst.Assign):
                return self._stack_applied_in_a_loop(ancestor, node)
            if isinstance(ancestor, (cst.BaseStatement, cst.BaseSmallStatement)):
                return False
        return False

    def _loop_item(self, use: cst.Name) -> tuple[cst.For, str] | None:
        """(the loop, the name it binds to the items of the sequence `use` reads): `for b
        in stack`, `for b in reversed(stack)`, `for i, b in enumerate(stack)`, `for b, s in
        zip(stack, skips)`; None if `use` is not what a loop iterates."""
        parent = self.index.parent_of(use)
        if isinstance(parent, cst.For) and parent.iter is use:
            return (parent, parent.target.value) if isinstance(parent.target, cst.Name) else None
        arg = parent if isinstance(parent, cst.Arg) else None
        call = self.index.parent_of(arg) if arg is not None else None
        loop = self.index.parent_of(call) if isinstance(call, cst.Call) else None
        if not (isinstance(loop, cst.For) and loop.iter is call and isinstance(call.func, cst.Name)):
            return None
        position = next(i for i, a in enumerate(call.args) if a is arg)
        target = loop.target
        if call.func.value == "reversed" and position == 0:
            return (loop, target.value) if isinstance(target, cst.Name) else None
        index = {"zip": position, "enumerate": 1 if position == 0 else None}.get(call.func.value)
        if index is None or not isinstance(target, (cst.Tuple, cst.List)) or index >= len(target.elements):
            return None
        element = target.elements[index].value
        return (loop, element.value) if isinstance(element, cst.Name) else None

    def _stack_applied_in_a_loop(self, assign: cst.Assign, element: cst.CSTNode) -> bool:
        """`stack = [a, b, ...]` (`element` one of them), and a loop over `stack` whose
        body rebinds a value to each item applied to it (`x = block(x)`): the items are
        stages of one model, not models of their own (an ensemble collects its outputs
        instead)."""
        value = assign.value
        if not isinstance(value, (cst.List, cst.Tuple)) or not any(e.value is element for e in value.elements):
            return False
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return False
        return self._stack_applied(scope_of(self.facts, assign), assign.targets[0].target.value)

    def _stack_applied(self, scope: cst.CSTNode, name: str) -> bool:
        """A loop applies the items of the list `name` one after the other, each to the
        value the one before gave: `for block in stack: x = block(x)`, or `x = stack[i](x)`
        in a loop over the indices."""
        for use in self.name_loads(scope, name):
            found = self._loop_item(use)
            if found is not None:
                loop, item = found
                if any(_rebinds_its_argument(node, item) for node in self.index.descendants(loop.body)):
                    return True
            subscript = self.index.parent_of(use)
            call = self.index.parent_of(subscript) if isinstance(subscript, cst.Subscript) else None
            statement = self.index.parent_of(call) if isinstance(call, cst.Call) and call.func is subscript else None
            if statement is not None and self.index.enclosing(use, cst.For) is not None \
                    and _result_replaces_argument(statement, call):
                return True
        return False

    def _class_is_component(self, classdef: cst.ClassDef) -> bool:
        if any(self._is_component(call) for call in self.calls_of(classdef.name.value)):
            return True
        return self._part_elsewhere(self.facts.call_graph.class_keys[id(classdef)])

    def is_part_of_a_model(self, call: cst.Call) -> bool:
        """Whether the model a call returns is used as a part of another model here (for
        the modules that define what it calls)."""
        return self._is_component(call)

    def _part_elsewhere(self, key: str) -> bool:
        """Another module of the project uses what this function (or class) builds as a
        part of its model (`x = blocks.head()(x)`)."""
        project = self.facts.project
        return project is not None and project.used_as_part(key)

    def calls_of(self, name: str) -> list[cst.Call]:
        """Calls of a plain name (`build_model(...)`, `Classifier(...)`)."""
        if self._calls_by_func_name is None:
            self._calls_by_func_name = {}
            for call in self.index.nodes(cst.Call):
                if isinstance(call.func, cst.Name):
                    self._calls_by_func_name.setdefault(call.func.value, []).append(call)
        return self._calls_by_func_name.get(name, [])

    def _preprocessing_sequential(self, call: cst.Call) -> bool:
        """`Sequential([Resizing(...), Rescaling(...), RandomFlip(...)])`: preprocessing
        layers only, written in the call (an input pipeline, best kept in float32)."""
        layers = listed_layers(call)
        if layers is None:
            return False
        names = [self.qualified(layer.func) if layer is not None else None for layer in layers]
        kept = [n for n in names if n not in INPUTS]
        return bool(kept) and all(n is not None and _is_preprocessing(n) for n in kept)

    def constructions(self) -> Iterator[cst.Call]:
        """Every call that creates a Keras layer or model (Input and preprocessing aside)."""
        for call in self.index.nodes(cst.Call):
            qualified = self.qualified(call.func)
            if qualified is None:
                kind = self.local_class_kind(call.func)
                if kind is not None:
                    yield call
                continue
            if qualified in MODEL_CLASSES or (qualified in SEQUENTIAL_CLASSES and not self._preprocessing_sequential(call)):
                yield call
            elif is_keras_layer_name(qualified) and qualified not in INPUTS and not _is_preprocessing(qualified):
                if qualified not in ("keras.layers.InputLayer", "keras.layers.InputSpec"):
                    yield call
            elif qualified.startswith("keras.applications.") and qualified.rsplit(".", 1)[-1][:1].isupper():
                yield call


_PREPROCESSING = frozenset(
    {
        "Normalization", "Rescaling", "Resizing", "CenterCrop", "StringLookup", "IntegerLookup",
        "TextVectorization", "Hashing", "HashedCrossing", "CategoryEncoding", "Discretization",
        "AutoContrast", "Equalization", "Solarization", "MelSpectrogram", "STFTSpectrogram",
    }
)


def listed_layers(call: cst.Call) -> list[cst.Call | None] | None:
    """The layers a `Sequential([...])` call lists (None for an element that is not a
    constructor call); None when its layers are not a list written in the call."""
    layers = arg_value(call, 0, "layers")
    if not isinstance(layers, (cst.List, cst.Tuple)):
        return None
    return [e.value if isinstance(e, cst.Element) and isinstance(e.value, cst.Call) else None for e in layers.elements]


def is_preprocessing_only(graph: "ModelGraph", model: ModelDef) -> bool:
    """A Sequential of preprocessing layers only (`Sequential([RandomFlip(...),
    RandomRotation(...)])`): an input pipeline, not a model whose outputs feed a loss."""
    if model.kind != "sequential" or not model.outputs or model.outputs[0].slot is None:
        return False
    slot = model.outputs[0].slot
    if slot.container is None:
        return False
    layers = [graph.layer_constructor(e.value) for e in slot.container.elements if isinstance(e, cst.Element)
              and not (isinstance(e.value, cst.Call) and graph.facts.qualified(e.value.func) in INPUTS)]
    return bool(layers) and all(
        layer is not None and _is_preprocessing(graph.facts.qualified(layer.func) or "") for layer in layers
    )


def _is_preprocessing(qualified: str) -> bool:
    name = qualified.rsplit(".", 1)[-1]
    return name in _PREPROCESSING or name.startswith("Random")


def _rebinds_its_argument(node: cst.CSTNode, callee: str) -> bool:
    """`x = callee(x, ...)`: the call's result replaces the value it was given."""
    if not (isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)):
        return False
    func = node.value.func
    return isinstance(func, cst.Name) and func.value == callee and _result_replaces_argument(node, node.value)


def _result_replaces_argument(node: cst.CSTNode, call: cst.Call) -> bool:
    """`x = <call>(x, ...)`, `node` the assignment of `call`'s result."""
    if not (isinstance(node, cst.Assign) and node.value is call and call.args):
        return False
    given = call.args[0].value
    return isinstance(given, cst.Name) and any(isinstance(t.target, cst.Name) and t.target.value == given.value
                                               for t in node.targets)


def is_self(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"
