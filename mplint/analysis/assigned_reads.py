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
    return [n for n in index.nodes(cst.Name) if n.value == name and index.scope_of(n) is scope
            and index.before(binding, n) and not index.contains(binding, n)]


def assignment_targets(statement: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an `=`, `+=` or annotated assignment binds (each target of `a = b = x`)."""
    if isinstance(statement, cst.Assign):
        return [t.target for t in statement.targets]
    if isinstance(statement, (cst.AugAssign, cst.AnnAssign)):
        return [statement.target]
    return []
