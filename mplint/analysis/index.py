"""One fast walk over a libcst tree: parents, source order and nodes by type.

libcst's metadata providers cost several parses' worth of time (its own visitor
rebuilds every node). Rules only need parents, source order and "all the Calls", so
this walk reads the dataclass fields directly and skips pure-whitespace children.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Iterator, TypeVar

import libcst as cst

from mplint.analysis.node_types import STATEMENTS

N = TypeVar("N", bound=cst.CSTNode)

# Children that are only whitespace, punctuation or comments: never interesting to rules.
_SKIP_FIELDS = frozenset(
    {
        "leading_lines", "lines_after_decorators", "lpar", "rpar", "lbracket", "rbracket",
        "lbrace", "rbrace", "comma", "equal", "semicolon", "colon", "star", "dot",
        "footer", "header", "indent", "trailing_whitespace", "asynchronous", "operator",
        "newline", "walrus", "first_line", "empty_lines", "whitespace", "posonly_ind",
    }
)

# Fields in source order where the dataclass order differs from the text's order.
_SOURCE_ORDER = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Parameters: ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg"),
    cst.Arg: ("keyword", "value"),
    cst.MatchCase: ("pattern", "guard", "body"),
}

_FIELDS_CACHE: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    fields = _FIELDS_CACHE.get(node_type)
    if fields is None:
        if node_type in _SOURCE_ORDER:
            fields = _SOURCE_ORDER[node_type]
        else:
            fields = tuple(
                f.name
                for f in dataclasses.fields(node_type)
                if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
            )
        _FIELDS_CACHE[node_type] = fields
    return fields


_IS_NODE_TYPE: dict[type, bool] = {}


def _is_node_type(value_type: type) -> bool:
    """Whether instances of `value_type` are libcst nodes. Looked up in the MRO, not with
    `issubclass`: CSTNode is an ABC, and ABC checks of a non-node type (str, sentinels)
    walk every node class the first time."""
    flag = _IS_NODE_TYPE.get(value_type)
    if flag is None:
        flag = _IS_NODE_TYPE[value_type] = cst.CSTNode in value_type.__mro__
    return flag


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The non-whitespace child nodes of `node`, in source order."""
    children: list[cst.CSTNode] = []
    is_node = _IS_NODE_TYPE
    for name in _child_fields(type(node)):
        value = getattr(node, name, None)
        value_type = type(value)
        if value_type is tuple or value_type is list:
            for item in value:
                item_type = type(item)
                flag = is_node.get(item_type)
                if flag or (flag is None and _is_node_type(item_type)):
                    children.append(item)
        else:
            flag = is_node.get(value_type)
            if flag or (flag is None and _is_node_type(value_type)):
                children.append(value)
    return children


# Nodes that open a scope: `scope_of` answers "the nearest one of these" in O(1).
SCOPE_TYPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


class ModuleIndex:
    """Parents, scopes, source order and per-type lists for every non-whitespace node."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.parent: dict[int, cst.CSTNode] = {}
        self.scope: dict[int, cst.CSTNode] = {}  # nearest enclosing function/lambda/class/module
        self.order: dict[int, int] = {}
        self.by_type: dict[type, list[cst.CSTNode]] = defaultdict(list)
        self._walk(module)

    def _walk(self, root: cst.CSTNode) -> None:
        parent, scope, order, by_type = self.parent, self.scope, self.order, self.by_type
        stack: list[tuple[cst.CSTNode, cst.CSTNode]] = [(root, root)]
        counter = 0
        children_of = _children
        scopes = SCOPE_TYPES
        while stack:
            node, enclosing_scope = stack.pop()
            key = id(node)
            order[key] = counter
            scope[key] = enclosing_scope
            counter += 1
            node_type = type(node)
            by_type[node_type].append(node)
            inner_scope = node if node_type in scopes else enclosing_scope
            for child in reversed(children_of(node)):
                parent[id(child)] = node
                stack.append((child, inner_scope))

    # -- queries -----------------------------------------------------------------
    def nodes(self, node_type: type[N]) -> list[N]:
        """All nodes of exactly this type, in source order."""
        return self.by_type.get(node_type, [])  # type: ignore[return-value]

    def names(self, value: str) -> list[cst.Name]:
        """Every `Name` node spelled `value`, in source order (grouped on first use: a
        fact that asks for one name's reads per finding stays linear in the module)."""
        grouped = self.__dict__.get("_names_by_value")
        if grouped is None:
            grouped = defaultdict(list)
            for node in self.nodes(cst.Name):
                grouped[node.value].append(node)
            self._names_by_value = grouped
        return grouped.get(value, [])

    def parent_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parent.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parent.get(id(node))
        while current is not None:
            yield current
            current = self.parent.get(id(current))

    def scope_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The nearest enclosing function, lambda or class (the module at top level).
        A function's own scope is the one it is defined in."""
        return self.scope.get(id(node), self.module)

    def enclosing(self, node: cst.CSTNode, *types: type[N]) -> N | None:
        if all(t in SCOPE_TYPES for t in types):
            # Walk the chain of scopes instead of every ancestor.
            current = self.scope.get(id(node))
            while current is not None and current is not self.module:
                if isinstance(current, types):
                    return current  # type: ignore[return-value]
                current = self.scope.get(id(current))
            return None
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, types):
                return ancestor  # type: ignore[return-value]
        return None

    def position_in_order(self, node: cst.CSTNode) -> int:
        return self.order[id(node)]

    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """Whether `a` starts before `b` in the source."""
        return self.order[id(a)] < self.order[id(b)]

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The statement line or compound statement that contains `node`."""
        current: cst.CSTNode | None = node
        while current is not None:
            if type(current) in STATEMENTS:
                return current
            current = self.parent.get(id(current))
        return None

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        return self.enclosing(node, cst.FunctionDef)

    def class_of(self, node: cst.CSTNode) -> cst.ClassDef | None:
        return self.enclosing(node, cst.ClassDef)

    def init_of(self, node: cst.CSTNode, classdef: cst.ClassDef) -> cst.FunctionDef | None:
        """The `__init__` of `classdef` that `node` is written in (directly, not in a
        nested function), or None."""
        init = self.function_of(node)
        if init is None or init.name.value != "__init__" or self.class_of(init) is not classdef:
            return None
        return init

    def top_level_statement(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The statement directly in the module's body that holds `node` (None for the
        module itself)."""
        current = node
        parent = self.parent.get(id(current))
        while parent is not None and parent is not self.module:
            current = parent
            parent = self.parent.get(id(current))
        return current if parent is self.module else None

    def descendants(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """Every indexed node under `node` (not `node` itself), in source order."""
        stack = [node]
        while stack:
            current = stack.pop()
            children = _children(current)
            children.reverse()
            stack.extend(children)
            if current is not node:
                yield current

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        return inner is outer or any(a is outer for a in self.ancestors(inner))
