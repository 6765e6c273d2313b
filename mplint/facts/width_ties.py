"""Whether a layer's width is a free choice: the premise of rounding it (MP301, MP302).

Rounding `LSTM(100)` to 104 units changes only that layer where nothing else depends on
the width. Where the layer's output is joined to another tensor that must have the same
width, it is not free, and rounding it alone breaks the model:

- concatenated on an axis other than the last (`concatenate([rnn_out, word_vectors],
  axis=1)`: every other axis, the features included, must match);
- added, subtracted, multiplied or averaged with another tensor (`x + Dense(n)(x)`,
  `layers.Add()([a, b])`): a residual connection ties the two widths.

The layer's output is followed through the name its application is bound to, in this
module. A tie found there makes the width's premise *assumed* ("round the tied widths
together, by hand"): the finding goes to the extended tier, without a fix.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from mplint.analysis.calls import arg_value, callee_name
from mplint.facts.model_graph import ModelGraph

ModuleFacts = Any

_CONCATENATIONS = frozenset({"concatenate", "Concatenate", "concat"})
_ELEMENTWISE_LAYERS = frozenset({"Add", "add", "Subtract", "subtract", "Multiply", "multiply", "Average", "average",
                                 "Maximum", "maximum", "Minimum", "minimum"})
_ELEMENTWISE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply)
_WRAPPERS = frozenset({"Bidirectional", "TimeDistributed"})
_RESHAPES = frozenset({"Reshape", "reshape", "expand_dims"})


def width_tie(facts: ModuleFacts, layer: cst.Call) -> str | None:
    """What ties the width of `layer`'s output to another tensor, if this module shows it
    (a phrase for the premise), else None."""
    for value in output_reads(facts, _outermost_wrapper(facts, layer)):
        tie = _tie_at(facts, value)
        if tie is not None:
            return tie
    return None


def reshaped_output(facts: ModuleFacts, layer: cst.Call) -> str | None:
    """`Reshape((n, width, 1))(Embedding(v, width)(x))`: the layer's output is reshaped
    before any layer reads it, so its width may become a spatial size (an image's width
    for a one-channel Conv2D), not the inner size of a matmul. A phrase, else None."""
    for value in output_reads(facts, layer):
        call = _call_given(facts, value)
        name = _layer_name(call) if call is not None else ""
        if name in _RESHAPES:
            return f"its output is reshaped (`{name}`) before a layer reads it: the width may not be a matmul's"
    return None


def output_reads(facts: ModuleFacts, layer: cst.Call) -> list[cst.CSTNode]:
    """Where `layer`'s output is read: its application (`layer(x)`) and the reads of the
    names that application is bound to that it reaches (`x = layer(x)`, then the next
    `x`, not one a later `x = ...` binds); nothing where the layer is not applied here."""
    application = facts.index.parent_of(layer)
    if not isinstance(application, cst.Call) or application.func is not layer:
        return []
    values: list[cst.CSTNode] = [application]
    assign = facts.index.parent_of(application)
    if isinstance(assign, cst.Assign) and assign.value is application:
        graph: ModelGraph = facts.analysis(ModelGraph)
        for target in assign.targets:
            if isinstance(target.target, cst.Name):
                values += graph.reads_reached_by(application, target.target.value)
    return values


def _call_given(facts: ModuleFacts, node: cst.CSTNode) -> cst.Call | None:
    """The call `node` is an argument of (`f(node)`, `f(x=node)`), if it is one."""
    argument = facts.index.parent_of(node)
    call = facts.index.parent_of(argument) if isinstance(argument, cst.Arg) else None
    return call if isinstance(call, cst.Call) else None


def _layer_name(call: cst.Call) -> str:
    """What a call applies: `Concatenate` for `Concatenate(axis=1)([a, b])`, `concatenate`
    for `layers.concatenate([a, b])`."""
    return callee_name(call.func) if isinstance(call.func, cst.Call) else callee_name(call)


def _outermost_wrapper(facts: ModuleFacts, layer: cst.Call) -> cst.Call:
    """`Bidirectional(LSTM(50))`: the wrapper's output is the one other tensors meet."""
    while True:
        wrapper = _call_given(facts, layer)
        if wrapper is None or callee_name(wrapper) not in _WRAPPERS:
            return layer
        layer = wrapper


def _tie_at(facts: ModuleFacts, value: cst.CSTNode) -> str | None:
    parent = facts.index.parent_of(value)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _ELEMENTWISE_OPERATORS):
        other = parent.right if parent.left is value else parent.left
        if not isinstance(other, (cst.Integer, cst.Float)):  # `x * 0.5` scales, it joins nothing
            return "its output is combined elementwise with another tensor, whose width must match"
        return None
    if not isinstance(parent, cst.Element):
        return None
    listed = facts.index.parent_of(parent)
    if not isinstance(listed, (cst.List, cst.Tuple)) or len(listed.elements) < 2:
        return None
    call = _call_given(facts, listed)
    if call is None:
        return None
    name = _layer_name(call)
    if name in _ELEMENTWISE_LAYERS:  # `add([a, b])`, `Add()([a, b])`
        return f"its output goes into `{name}` with another tensor, whose width must match"
    if name in _CONCATENATIONS:  # `concatenate([a, b], axis=1)`, `tf.concat([a, b], 1)`, `Concatenate(axis=1)([a, b])`
        return _concatenation_tie(call.func if isinstance(call.func, cst.Call) else call, call, name)
    return None


def _concatenation_tie(axis_call: cst.Call, call: cst.Call, name: str) -> str | None:
    """A concatenation on an axis other than the last keeps every other axis, the
    features included: the inputs' widths must match."""
    positional = 1 if axis_call is call else 0  # `concatenate(inputs, axis)`, `Concatenate(axis)`
    axis = arg_value(axis_call, positional, "axis")
    if axis is None:
        return None  # the default: the last axis
    if isinstance(axis, cst.UnaryOperation) and isinstance(axis.operator, cst.Minus) \
            and isinstance(axis.expression, cst.Integer) and axis.expression.value == "1":
        return None
    if isinstance(axis, cst.Integer):
        return f"its output is concatenated on axis {axis.value} (`{name}`), where the other inputs' widths must match"
    return None
