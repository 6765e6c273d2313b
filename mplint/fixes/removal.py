"""Deleting a statement without leaving an empty block behind.

    change = remove_statement(facts.index, statement)

A statement that shares its block with others is simply deleted. The only statement of
an `if` (no `else`/`elif`, no comments inside) whose test has no side effects takes its
`if` with it (and so on outwards, while each `if` is all its block holds). Otherwise the
statement becomes `pass`, which keeps the block, any test with side effects and every
comment as they were.
"""

from __future__ import annotations

import libcst as cst

from mplint.analysis.index import ModuleIndex
from mplint.catalogue.rule import Change, RemoveStatement, ReplaceText

# Builtins that only inspect their arguments.
_PURE_CALLS = frozenset({"isinstance", "hasattr", "callable", "len", "bool", "issubclass"})


def remove_statement(index: ModuleIndex, statement: cst.SimpleStatementLine) -> Change:
    target: cst.CSTNode = statement
    while True:
        block = index.parent_of(target)
        if isinstance(block, cst.Module) or (isinstance(block, cst.IndentedBlock) and len(block.body) > 1):
            return RemoveStatement(target)
        owner = index.parent_of(block) if block is not None else None
        if not (isinstance(owner, cst.If) and owner.body is block and owner.orelse is None
                and not isinstance(index.parent_of(owner), cst.If) and side_effect_free(owner.test)
                and not _comments_inside(index, owner)):
            break
        target = owner
    return ReplaceText(statement.body[0], "pass")


def _comments_inside(index: ModuleIndex, statement: cst.If) -> bool:
    """Comments in the `if` past its own leading lines (they would go with it)."""
    return "#" in index.module.code_for_node(statement.with_changes(leading_lines=()))


def side_effect_free(expr: cst.BaseExpression) -> bool:
    """Names, attributes, constants, subscripts, comparisons and boolean logic of them,
    `isinstance`/`hasattr`-style builtins and a mapping's `.get(key[, default])`:
    evaluating it changes nothing."""
    if isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)):
        return True
    if isinstance(expr, cst.Attribute):
        return side_effect_free(expr.value)
    if isinstance(expr, cst.UnaryOperation):
        return side_effect_free(expr.expression)
    if isinstance(expr, cst.BooleanOperation):
        return side_effect_free(expr.left) and side_effect_free(expr.right)
    if isinstance(expr, cst.Comparison):
        return side_effect_free(expr.left) and all(side_effect_free(c.comparator) for c in expr.comparisons)
    if isinstance(expr, (cst.Tuple, cst.List)):
        return all(side_effect_free(e.value) for e in expr.elements)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in _PURE_CALLS:
        return all(a.star == "" and side_effect_free(a.value) for a in expr.args)
    if isinstance(expr, cst.Subscript):  # `params["amp"]`
        return side_effect_free(expr.value) and all(
            isinstance(s.slice, cst.Index) and side_effect_free(s.slice.value) for s in expr.slice)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get" \
            and isinstance(expr.func.value, (cst.Name, cst.Attribute)) and 1 <= len(expr.args) <= 2:
        # `params.get("amp", False)`: a mapping's lookup
        return side_effect_free(expr.func.value) and all(a.star == "" and side_effect_free(a.value) for a in expr.args)
    return False
