"""Whether a mask fill is scaled up after it is applied.

    weights += tf.cast(~valid, weights.dtype) * -100000.0     # the fill (MP501)
    return weights, values
    ...
    weights, values = filter_weight_value(weights, values, mask)
    weights = tf.nn.softmax(weights / self._attention_temperature)   # scaled: / 0.01

A dtype limit (`x.dtype.min`, -3.4e38 in float32) has no headroom: divided by a
temperature below 1 it overflows to -inf in float32 too, and a fully masked row becomes NaN
where the written constant worked. The fix that writes the limit is then wrong; this fact
finds such a scaling: the name the filled expression is assigned to (`x = ...`,
`x += ...`), read later in its function as the left side of a division by anything but a
constant of at least 1, or returned and read so by the caller that unpacks it (calls in
this module, two levels deep).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from mplint.analysis.assigned_reads import element_position, reads_after

# The facts of a module (mplint.facts.module), named, not imported.
ModuleFacts = Any

_MAX_DEPTH = 2


def scaled_after_fill(facts: ModuleFacts, fill: cst.CSTNode) -> str | None:
    """The division that scales the tensor the fill at `fill` goes into (its code), or None."""
    statement = facts.index.statement_of(fill)
    small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
    if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
        return _scaled_reads(facts, small, small.target.value, 0)
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return _scaled_reads(facts, small, small.targets[0].target.value, 0)
    return None


def _scaled_reads(facts: ModuleFacts, binding: cst.CSTNode, name: str, depth: int) -> str | None:
    for read in reads_after(facts.index, binding, name):
        parent = facts.index.parent_of(read)
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Divide) and parent.left is read:
            divisor = facts.values.resolve(parent.right)
            if divisor is None or not isinstance(divisor.value, (int, float)) or divisor.value < 1:
                return " ".join(facts.module.code_for_node(parent).split())
        elif depth < _MAX_DEPTH:
            found = _through_return(facts, read, depth)
            if found is not None:
                return found
    return None


def _through_return(facts: ModuleFacts, read: cst.Name, depth: int) -> str | None:
    """`return weights, values`: the callers in this module that unpack it, read on."""
    index = facts.index
    parent = index.parent_of(read)
    position: int | None = None
    if isinstance(parent, cst.Element) and isinstance(index.parent_of(parent), cst.Tuple):
        holder = index.parent_of(parent)
        position = element_position(holder, parent)
        parent = index.parent_of(holder)
    if not isinstance(parent, cst.Return):
        return None
    function = index.function_of(parent)
    if function is None:
        return None
    for site in facts.call_graph.sites_of(function):
        assign = index.parent_of(site)
        if not (isinstance(assign, cst.Assign) and assign.value is site and len(assign.targets) == 1):
            continue
        target = assign.targets[0].target
        if position is not None and isinstance(target, (cst.Tuple, cst.List)) and position < len(target.elements):
            target = target.elements[position].value
        elif position is not None:
            continue
        if isinstance(target, cst.Name):
            found = _scaled_reads(facts, assign, target.value, depth + 1)
            if found is not None:
                return found
    return None
