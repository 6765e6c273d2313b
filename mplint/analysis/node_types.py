"""Exact-type sets for the hot `isinstance` checks on libcst nodes.

Every libcst node class derives from `CSTNode`, an ABC, so `isinstance(node, X)` that
fails goes through `ABCMeta.__instancecheck__`: a walk up a large module's ancestors
asking "is this a `FunctionDef` or a `ClassDef`?" pays that for every node. `kinds(...)`
expands the classes (abstract ones too: `BaseSuite`, `BaseCompoundStatement`) into the
set of concrete libcst classes they cover, so `type(node) in KINDS` answers the same
question with one hash lookup. mplint only sees nodes libcst's parser made, whose
classes are exactly these.
"""

from __future__ import annotations

import libcst as cst


def kinds(*classes: type) -> frozenset[type]:
    """The concrete libcst classes that are any of `classes` or derive from them."""
    found: set[type] = set()
    stack = list(classes)
    while stack:
        cls = stack.pop()
        if cls in found:
            continue
        found.add(cls)
        stack.extend(cls.__subclasses__())
    return frozenset(c for c in found if issubclass(c, cst.CSTNode))


SCOPE_DEFINITIONS = kinds(cst.FunctionDef, cst.ClassDef)
STATEMENTS = kinds(cst.SimpleStatementLine, cst.BaseCompoundStatement)
SUITES = kinds(cst.BaseSuite)
