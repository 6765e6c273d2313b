"""The reads of the one name an expression is assigned to.

    inv = tf.maximum(inv, eps)       # reads_of_assigned(index, <the call>) -> the `inv`
    return x * inv                   # below, in the same scope, after the assignment

A fact asks what becomes of a value (`ds = ....batch(10)`: is it only shown? a floor:
is it only multiplied with?) by looking at every later read of its name in its scope.
"""

from __future__ import annotations

import libcst as cst

from mplint.analysis.index import ModuleIndex


def reads_of_assigned(index: ModuleIndex, value: cst.CSTNode) -> list[cst.Name] | None:
    """For `name = value` (one plain name as the only target): the reads of `name` in the
    same scope after the assignment. None where `value` is not assigned so."""
    assign = index.parent_of(value)
    if not (isinstance(assign, cst.Assign) and assign.value is value and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return None
    return reads_after(index, assign, assign.targets[0].target.value)


def reads_after(index: ModuleIndex, binding: cst.CSTNode, name: str) -> list[cst.Name]:
    """The reads of `name` in the scope of `binding` (a statement that binds it) after it."""
    scope = index.scope_of(binding)
    return [n for n in index.names(name) if index.scope_of(n) is scope
            and index.before(binding, n) and not index.contains(binding, n)]


def paired_target(index: ModuleIndex, value: cst.CSTNode) -> tuple[cst.Name, cst.Assign] | None:
    """For an item of a tuple assigned item by item (`G, C = make_generator(), make_critic()`,
    no starred target, as many targets as items): the name the item binds, and the
    assignment. None otherwise."""
    element = index.parent_of(value)
    holder = index.parent_of(element) if isinstance(element, cst.Element) else None
    assign = index.parent_of(holder) if isinstance(holder, (cst.Tuple, cst.List)) else None
    if not isinstance(assign, cst.Assign) or assign.value is not holder or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(holder.elements) \
            or any(isinstance(e, cst.StarredElement) for e in target.elements):
        return None
    position = element_position(holder, element)
    name = target.elements[position].value
    return (name, assign) if isinstance(name, cst.Name) else None


def element_position(holder: cst.Tuple | cst.List, element: cst.CSTNode) -> int:
    """The index of `element` (an element node of `holder`, by identity) in `holder`."""
    return next(i for i, e in enumerate(holder.elements) if e is element)


def assignment_targets(statement: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an `=`, `+=` or annotated assignment binds (each target of `a = b = x`)."""
    if isinstance(statement, cst.Assign):
        return [t.target for t in statement.targets]
    if isinstance(statement, (cst.AugAssign, cst.AnnAssign)):
        return [statement.target]
    return []
