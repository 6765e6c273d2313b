"""Whether a model's outputs are final outputs: the role premise of MP101.

A float16 output only matters where something consumes it as the model's result: a loss,
a caller that trains, evaluates, predicts with or exports the model, or a softmax (a
probability distribution). A model whose output goes on into other layers is a part
(`ModelGraph` marks those `component`); one whose consumer mplint cannot see might be
either. So the role is

- *proved* where this module shows the consumer: `.compile()`, `.fit()`, `.predict()`,
  `.evaluate()`, `.save()`/`.export()` on the model (through names, `self.<attribute>`,
  the functions that return it and the functions it is handed to), its call's result in a
  loss (`loss_fn(y, model(x))`, `loss = ...`), its own `train_step`, or an output that
  is a softmax or sigmoid;
- *inferred* where another module of the project does so with what this module's function
  or class returns (its summary says so: `final`), or with the model this module hands to
  its function (its module table says which parameters each function consumes);
- *assumed* otherwise: such findings go to the extended tier.
"""

from __future__ import annotations

import libcst as cst

from mplint.analysis.assigned_reads import element_position, paired_target
from mplint.analysis.calls import arg_value, string_value
from mplint.core.consuming_methods import CONSUMING_METHODS
from mplint.core.diagnostics import ROLE, Premise, Status
from mplint.facts.model_graph import WRAPPERS, ModelDef, ModelGraph, Output, is_self
from mplint.facts.policy import scope_of
from mplint.facts.receivers import project_function

# Functions that export a model (its outputs are what it serves).
EXPORTERS = frozenset(
    {
        "tensorflow.saved_model.save", "keras.models.save_model", "keras.saving.save_model",
        "tensorflow.lite.TFLiteConverter.from_keras_model",
    }
)
_PROBABILITY_ACTIVATIONS = frozenset({"softmax", "sigmoid", "log_softmax"})
_LOSS_NAMES = ("loss", "entropy", "mean_squared_error", "mean_absolute_error", "huber", "kl_divergence", "ctc_")
_LOSS_FUNCTIONS = frozenset({"mse", "mae", "kld", "hinge"})
_MAX_DEPTH = 4

Evidence = tuple[Status, str]


def output_role(graph: ModelGraph, model: ModelDef) -> Premise:
    """The role premise of a finding on `model`'s outputs."""
    found = ModelRoles(graph).evidence_for(model)
    if found is None:
        return Premise(ROLE, "model output", Status.ASSUMED,
                       "nothing here compiles, trains, evaluates, predicts with or exports this model, "
                       "nor puts its output into a loss")
    status, evidence = found
    return Premise(ROLE, "model output", status, evidence)


def final_uses(graph: ModelGraph, call: cst.Call) -> list[int | None]:
    """Whether this module consumes what `call` returns (a model) as a model's result:
    what a summary records for the callee's module (`final`): [None] for the whole value,
    the positions of the tuple items it consumes (`model, _ = build()`, `build()[0]`)."""
    parent = graph.index.parent_of(call)
    items: list[int | None] = [None]
    if isinstance(parent, cst.Subscript) and parent.value is call:
        index = parent.slice[0].slice if len(parent.slice) == 1 else None
        if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
            items = [index.value.evaluated_value]
    elif isinstance(parent, cst.Assign) and len(parent.targets) == 1 and \
            isinstance(parent.targets[0].target, (cst.Tuple, cst.List)):
        items = list(range(len(parent.targets[0].target.elements)))
    return [item for item in items if ModelRoles(graph, local=True).of_value(call, 0, item) is not None]


class ModelRoles:
    def __init__(self, graph: ModelGraph, local: bool = False) -> None:
        self.graph = graph
        self.facts = graph.facts
        self.index = graph.index
        self.local = local  # this module only (a summary asks nothing of the project)
        self._seen: set[tuple[int, int | None]] = set()

    def evidence_for(self, model: ModelDef) -> Evidence | None:
        if any(self._is_probabilities(output) for output in model.outputs):
            return Status.PROVED, "its output is a softmax or sigmoid"
        if isinstance(model.node, cst.ClassDef):
            return self._of_class(model.node)
        return self.of_value(model.node, 0)

    # -- a model class -----------------------------------------------------------------------
    def _of_class(self, classdef: cst.ClassDef) -> Evidence | None:
        if self.graph.overrides(classdef, ("train_step", "compute_loss", "test_step")):
            return Status.PROVED, f"`{classdef.name.value}` trains itself (`train_step`)"
        best: Evidence | None = None
        for node in self.index.descendants(classdef):  # `self.compile(...)` in its own code
            if isinstance(node, cst.Attribute) and is_self(node.value) and node.attr.value in CONSUMING_METHODS \
                    and isinstance(self.index.parent_of(node), cst.Call):
                return Status.PROVED, f"`self.{node.attr.value}()`"
        for call in self.graph.calls_of(classdef.name.value):
            best = _better(best, self.of_value(call, 1))
            if best is not None and best[0] is Status.PROVED:
                return best
        return best or self._elsewhere(self.facts.call_graph.class_keys[id(classdef)])

    # -- a value holding a model ----------------------------------------------------------
    def of_value(self, node: cst.CSTNode, depth: int, item: int | None = None) -> Evidence | None:
        """What consumes the model `node` evaluates to (a construction, a call of a function
        returning it, a name or attribute reading it); with `item`, the model is that item
        of the tuple `node` evaluates to (`return model, encoder`)."""
        if depth > _MAX_DEPTH or (id(node), item) in self._seen:
            return None
        self._seen.add((id(node), item))
        parent = self.index.parent_of(node)
        if item is not None:
            return self._item(node, parent, depth, item)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            method = parent.attr.value
            if method in CONSUMING_METHODS and isinstance(self.index.parent_of(parent), cst.Call):
                return Status.PROVED, f"`.{method}()` on it"
            return None
        if isinstance(parent, cst.Call) and parent.func is node:
            return self._result_in_a_loss(parent)
        if isinstance(parent, cst.Arg):
            return self._handed_on(parent, depth)
        if isinstance(parent, cst.Return):
            return self._returned(parent, depth, None)
        if isinstance(parent, cst.Element) and isinstance(self.index.parent_of(parent), cst.Tuple):
            holder = self.index.parent_of(parent)
            returned = self.index.parent_of(holder)
            if isinstance(returned, cst.Return) and returned.value is holder:
                position = element_position(holder, parent)
                return self._returned(returned, depth, position)
            paired = paired_target(self.index, node)  # `G, C = make_generator(), make_critic()`
            return self._uses_of_name(node, paired[1], paired[0].value, depth) if paired is not None else None
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
            return self._bound(node, parent, depth)
        return None

    def _item(self, node: cst.CSTNode, parent: cst.CSTNode | None, depth: int, item: int) -> Evidence | None:
        """The `item`th value of the tuple `node` evaluates to: `node[item]`, `a, b = node`."""
        if isinstance(parent, cst.Subscript) and parent.value is node and len(parent.slice) == 1:
            index = parent.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and \
                    index.value.evaluated_value == item:
                return self.of_value(parent, depth + 1)
            return None
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, (cst.Tuple, cst.List)) and item < len(target.elements) and \
                    not any(isinstance(e, cst.StarredElement) for e in target.elements):
                name = target.elements[item].value
                if isinstance(name, cst.Name):
                    return self._uses_of_name(node, parent, name.value, depth)
        if isinstance(parent, cst.Return):
            return self._returned(parent, depth, item)
        return None

    def _bound(self, node: cst.CSTNode, assign: cst.Assign | cst.AnnAssign, depth: int) -> Evidence | None:
        targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
        best: Evidence | None = None
        for target in targets:
            if isinstance(target, cst.Name):
                best = _better(best, self._uses_of_name(node, assign, target.value, depth))
            elif isinstance(target, cst.Attribute) and is_self(target.value):
                owner = self.index.class_of(node)
                for use in self.graph.attribute_uses(owner, target.attr.value) if owner is not None else []:
                    best = _better(best, self.of_value(use, depth + 1))
                    if best is not None and best[0] is Status.PROVED:
                        return best
            if best is not None and best[0] is Status.PROVED:
                return best
        return best

    def _uses_of_name(self, node: cst.CSTNode, assign: cst.CSTNode, name: str, depth: int) -> Evidence | None:
        statement = self.index.statement_of(assign) or assign
        best: Evidence | None = None
        for use in self.graph.loads_after(scope_of(self.facts, node), name, statement):
            best = _better(best, self.of_value(use, depth + 1))
            if best is not None and best[0] is Status.PROVED:
                return best
        return best

    def _returned(self, returned: cst.Return, depth: int, item: int | None) -> Evidence | None:
        function = self.index.function_of(returned)
        if function is None:
            return None
        best: Evidence | None = None
        for call in self.graph.calls_of_function(function):
            best = _better(best, self.of_value(call, depth + 1, item))
            if best is not None and best[0] is Status.PROVED:
                return best
        key = self.facts.call_graph.key_of(function)
        return best or (self._elsewhere(key, item) if key else None)

    def _handed_on(self, argument: cst.Arg, depth: int) -> Evidence | None:
        """The model given to a call: an exporter, or a function of the module that
        consumes its parameter."""
        call = self.index.parent_of(argument)
        if not isinstance(call, cst.Call):
            return None
        qualified = self.facts.qualified(call.func) or ""
        name = _callee_name(call.func)
        if qualified in EXPORTERS or "export" in name.lower():
            return Status.PROVED, f"exported by `{name}()`"
        best: Evidence | None = None
        for use in self.graph.parameter_reads(argument):
            best = _better(best, self.of_value(use, depth + 1))
            if best is not None and best[0] is Status.PROVED:
                return best
        return best or self._handed_elsewhere(call, argument, name)

    def _handed_elsewhere(self, call: cst.Call, argument: cst.Arg, name: str) -> Evidence | None:
        """The model given to a function of another project module that trains, evaluates,
        predicts with or saves that parameter (`train_model(model, ...)` in trainer.py)."""
        project = self.facts.project
        if self.local or project is None or argument.star:
            return None
        function = project_function(self.facts, call)
        if function is None:
            return None
        keyword = argument.keyword.value if argument.keyword is not None else None
        position = None if keyword is not None else [a for a in call.args if a.keyword is None].index(argument)
        found = project.consumer_of_argument(function, position, keyword)
        if found is None:
            return None
        where, method = found
        return Status.INFERRED, f"`{name}()` ({where}) calls `.{method}()` on it"

    def _result_in_a_loss(self, application: cst.Call) -> Evidence | None:
        """`model(x)`: its result (or the names it is bound to) is an argument of a loss,
        or part of the value of a name that says it is one (`loss = ...`)."""
        values: list[cst.CSTNode] = [application]
        parent = self.index.parent_of(application)
        if isinstance(parent, cst.Assign) and parent.value is application:
            scope = scope_of(self.facts, application)
            statement = self.index.statement_of(parent) or parent
            for name in _target_names(parent):
                values += [u for u in self.graph.name_loads(scope, name) if not self.index.before(u, statement)]
        for value in values:
            found = self._in_a_loss(value)
            if found is not None:
                return Status.PROVED, found
        return None

    def _in_a_loss(self, value: cst.CSTNode) -> str | None:
        for ancestor in self.index.ancestors(value):
            if isinstance(ancestor, cst.Call) and ancestor is not value:
                name = _callee_name(ancestor.func)
                qualified = self.facts.qualified(ancestor.func) or ""
                if _is_loss_name(name) or qualified.startswith(("keras.losses.", "tensorflow.losses.")):
                    return f"its output goes into `{name}()`"
            if isinstance(ancestor, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                names = _target_names(ancestor) if isinstance(ancestor, cst.Assign) else \
                    [ancestor.target.value] if isinstance(ancestor.target, cst.Name) else []
                loss = next((n for n in names if "loss" in n.lower()), None)
                return f"its output goes into `{loss}`" if loss else None
            if isinstance(ancestor, (cst.BaseStatement, cst.BaseSmallStatement)):
                return None
        return None

    def _elsewhere(self, key: str, item: int | None = None) -> Evidence | None:
        project = self.facts.project
        if self.local or project is None:
            return None
        where = project.final_use_elsewhere(key, item)
        return (Status.INFERRED, f"`{where}` trains or predicts with what it returns") if where else None

    # -- the output itself ----------------------------------------------------------------
    def _is_probabilities(self, output: Output) -> bool:
        layer = output.layer
        if output.status != "layer" or layer is None:
            return False
        if layer.qualified in WRAPPERS:  # `TimeDistributed(Dense(7, activation="softmax"))`
            layer = self.graph.wrapped_layer(layer.constructor)
            if layer is None:
                return False
        if layer.qualified == "keras.layers.Softmax":
            return True
        activation = arg_value(layer.constructor, 0, "activation") if layer.qualified == "keras.layers.Activation" \
            else arg_value(layer.constructor, None, "activation")
        if activation is None:
            return False
        text = string_value(activation)
        if text is None:
            qualified = self.facts.qualified(activation) or ""
            text = qualified.rsplit(".", 1)[-1] if qualified.startswith(("tensorflow.", "keras.")) else ""
        return text in _PROBABILITY_ACTIVATIONS


def _better(best: Evidence | None, other: Evidence | None) -> Evidence | None:
    if other is None:
        return best
    if best is None or (other[0] is Status.PROVED and best[0] is not Status.PROVED):
        return other
    return best


def _target_names(assign: cst.Assign) -> list[str]:
    names = []
    for target in assign.targets:
        t = target.target
        if isinstance(t, cst.Name):
            names.append(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            names += [e.value.value for e in t.elements if isinstance(e.value, cst.Name)]
    return names


def _callee_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _is_loss_name(name: str) -> bool:
    lowered = name.lower()
    return lowered in _LOSS_FUNCTIONS or any(part in lowered for part in _LOSS_NAMES)
