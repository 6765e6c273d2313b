"""Constant values of expressions, and where they were written.

`Dense(HIDDEN * 4)`, `Dense(args.units)` with `parser.add_argument("--units",
default=1000)`, `def block(units=1000): Dense(units)`: rules want the number *and* the
literal that defines it (to report "from constant HIDDEN, line 3" and to fix it there).
Only values that are certain are resolved: a name assigned exactly once in its scope,
a flag with exactly one definition, a parameter's default.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable, Union

import libcst as cst

from mplint.analysis.index import ModuleIndex

Number = Union[int, float]


@dataclass(frozen=True)
class Source:
    """A literal that contributes to a value, and how the value reached the use."""

    literal: cst.BaseExpression  # the Integer/Float/SimpleString node as written
    via: str  # "literal", "constant HIDDEN", "flag --units default", "parameter units default"
    name: str | None = None  # the constant/flag/parameter name, if any


@dataclass(frozen=True)
class Value:
    value: object
    sources: tuple[Source, ...]

    @property
    def single_source(self) -> Source | None:
        """The one literal that defines the value (a fix can edit it), if there is one."""
        return self.sources[0] if len(self.sources) == 1 else None

    @property
    def is_literal_here(self) -> bool:
        return len(self.sources) == 1 and self.sources[0].via == "literal"


_BINARY_OPS: dict[type, Callable[[object, object], object]] = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
}


def literal_number(node: cst.BaseExpression) -> Number | None:
    """The number a numeric literal (optionally negated) spells, else None."""
    try:
        if isinstance(node, cst.Integer):
            return int(node.value, 0)
        if isinstance(node, cst.Float):
            return float(node.value.replace("_", ""))
    except ValueError:
        return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_number(node.expression)
        return -inner if inner is not None else None
    return None


class Bindings:
    """Where each name is bound, per scope (module or function)."""

    def __init__(self, index: ModuleIndex) -> None:
        # (scope node, name) -> list of assigned values (None for non-simple bindings)
        self.bindings: dict[tuple[int, str], list[cst.BaseExpression | None]] = {}
        self.module_values: dict[str, list[cst.BaseExpression]] = {}
        self.all_values: dict[str, list[cst.BaseExpression]] = {}
        for node in index.nodes(cst.Assign):
            scope = self._scope(index, node)
            for target in node.targets:
                self._bind_target(scope, target.target, node.value, index)
        for node in index.nodes(cst.AnnAssign):
            if node.value is not None:
                self._bind_target(self._scope(index, node), node.target, node.value, index)
        for node in index.nodes(cst.AugAssign):
            self._bind_target(self._scope(index, node), node.target, None, index)
        for node in index.nodes(cst.For):
            self._bind_target(self._scope(index, node), node.target, None, index)
        for node in index.nodes(cst.AsName):
            parent = index.parent_of(node)
            if isinstance(parent, cst.WithItem):
                self._bind_target(self._scope(index, node), node.name, None, index)
        for node in index.nodes(cst.NamedExpr):
            self._bind_target(self._scope(index, node), node.target, None, index)

    @staticmethod
    def _scope(index: ModuleIndex, node: cst.CSTNode) -> cst.CSTNode:
        return index.enclosing(node, cst.FunctionDef, cst.Lambda, cst.ClassDef) or index.module

    def _bind_target(
        self, scope: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression | None, index: ModuleIndex
    ) -> None:
        if isinstance(target, cst.Name):
            self.bindings.setdefault((id(scope), target.value), []).append(value)
            if value is not None:
                self.all_values.setdefault(target.value, []).append(value)
                if scope is index.module:
                    self.module_values.setdefault(target.value, []).append(value)
            elif scope is index.module:
                # A non-simple rebinding at module level still shadows an import.
                self.module_values.setdefault(target.value, []).append(cst.Ellipsis())
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(scope, element.value, None, index)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(scope, target.value, None, index)

    def single_value(self, scope: cst.CSTNode, name: str) -> cst.BaseExpression | None:
        values = self.bindings.get((id(scope), name))
        if values and len(values) == 1:
            return values[0]
        return None

    def is_bound(self, scope: cst.CSTNode, name: str) -> bool:
        return (id(scope), name) in self.bindings

    def values_visible(self, name: cst.Name, index: ModuleIndex) -> list[cst.BaseExpression]:
        """Every simple value bound to `name` in the nearest scope that binds it
        (enclosing functions, then the module): `p = "float32"; if amp: p = "mixed_float16"`
        gives both."""
        scope: cst.CSTNode | None = index.enclosing(name, cst.FunctionDef, cst.Lambda)
        while scope is not None:
            if self.is_bound(scope, name.value):
                return [v for v in self.bindings[(id(scope), name.value)] if v is not None]
            scope = index.enclosing(scope, cst.FunctionDef, cst.Lambda)
        return [v for v in self.bindings.get((id(index.module), name.value), []) if v is not None]


class FlagDefaults:
    """Defaults of argparse `add_argument` and absl `flags.DEFINE_*` flags, by dest."""

    def __init__(self, index: ModuleIndex) -> None:
        self.defaults: dict[str, list[tuple[cst.BaseExpression, str]]] = {}
        for call in index.nodes(cst.Call):
            func = call.func
            if not isinstance(func, cst.Attribute):
                continue
            method = func.attr.value
            if method == "add_argument":
                self._argparse(call)
            elif method.startswith("DEFINE_") or (isinstance(func.value, cst.Name) and func.value.value == "flags" and method.startswith("DEFINE")):
                self._absl(call)

    def _argparse(self, call: cst.Call) -> None:
        names = [a.value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        default = keywords.get("default")
        if default is None:
            return
        dest_node = keywords.get("dest")
        if isinstance(dest_node, cst.SimpleString):
            dest = str(dest_node.evaluated_value)
        else:
            options = [str(n.evaluated_value) for n in names]  # type: ignore[union-attr]
            longs = [o for o in options if o.startswith("--")]
            chosen = longs[0] if longs else (options[0] if options else "")
            dest = chosen.lstrip("-").replace("-", "_")
        if dest:
            label = next((str(n.evaluated_value) for n in names if str(n.evaluated_value).startswith("--")), dest)  # type: ignore[union-attr]
            self.defaults.setdefault(dest, []).append((default, f"flag {label} default"))

    def _absl(self, call: cst.Call) -> None:
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        name_node = keywords.get("name", positional[0] if positional else None)
        default = keywords.get("default", positional[1] if len(positional) > 1 else None)
        if isinstance(name_node, cst.SimpleString) and default is not None:
            name = str(name_node.evaluated_value)
            self.defaults.setdefault(name, []).append((default, f"flag --{name} default"))


class ValueResolver:
    """Resolves expressions to constant values with their sources."""

    MAX_DEPTH = 12

    def __init__(self, index: ModuleIndex, bindings: Bindings) -> None:
        self.index = index
        self.bindings = bindings
        self._flags: FlagDefaults | None = None

    @property
    def flags(self) -> FlagDefaults:
        if self._flags is None:
            self._flags = FlagDefaults(self.index)
        return self._flags

    def resolve(self, node: cst.BaseExpression, depth: int = 0) -> Value | None:
        """The constant value of `node` (evaluated where it appears), or None."""
        if depth > self.MAX_DEPTH:
            return None
        number = literal_number(node)
        if number is not None:
            return Value(number, (Source(node, "literal"),))
        if isinstance(node, cst.SimpleString):
            return Value(node.evaluated_value, (Source(node, "literal"),))
        if isinstance(node, cst.Name):
            if node.value in ("True", "False", "None"):
                return Value({"True": True, "False": False, "None": None}[node.value], (Source(node, "literal"),))
            return self._resolve_name(node, depth)
        if isinstance(node, cst.BinaryOperation):
            op = _BINARY_OPS.get(type(node.operator))
            if op is None:
                return None
            left = self.resolve(node.left, depth + 1)
            right = self.resolve(node.right, depth + 1)
            if left is None or right is None:
                return None
            if not all(isinstance(v.value, (int, float)) and not isinstance(v.value, bool) for v in (left, right)):
                return None
            try:
                result = op(left.value, right.value)
            except (ArithmeticError, ValueError, OverflowError):
                return None
            return Value(result, left.sources + right.sources)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self.resolve(node.expression, depth + 1)
            if inner is not None and isinstance(inner.value, (int, float)):
                return Value(-inner.value, inner.sources)
            return None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("int", "float"):
            if len(node.args) == 1 and node.args[0].keyword is None:
                inner = self.resolve(node.args[0].value, depth + 1)
                if inner is not None and isinstance(inner.value, (int, float)):
                    cast = int if node.func.value == "int" else float
                    return Value(cast(inner.value), inner.sources)
            return None
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value != "self":
            defaults = self.flags.defaults.get(node.attr.value)
            if defaults and len(defaults) == 1:
                default, label = defaults[0]
                inner = self.resolve(default, depth + 1)
                if inner is not None:
                    return Value(inner.value, tuple(Source(s.literal, label if s.via == "literal" else s.via, node.attr.value) for s in inner.sources))
        return None

    def _resolve_name(self, node: cst.Name, depth: int) -> Value | None:
        name = node.value
        function = self.index.enclosing(node, cst.FunctionDef)
        while function is not None:
            param = _parameter(function, name)
            if self.bindings.is_bound(function, name):
                if param is not None:
                    return None  # a parameter that is re-assigned: no single value
                value = self.bindings.single_value(function, name)
                return self._from_binding(value, name, "variable", depth)
            if param is not None:
                if param.default is None:
                    return None
                inner = self.resolve(param.default, depth + 1)
                if inner is None:
                    return None
                return Value(inner.value, tuple(
                    Source(s.literal, f"parameter {name} default" if s.via == "literal" else s.via, s.name or name)
                    for s in inner.sources
                ))
            function = self.index.enclosing(function, cst.FunctionDef)
        value = self.bindings.single_value(self.index.module, name)
        return self._from_binding(value, name, "constant", depth)

    def _from_binding(self, value: cst.BaseExpression | None, name: str, kind: str, depth: int) -> Value | None:
        if value is None:
            return None
        inner = self.resolve(value, depth + 1)
        if inner is None:
            return None
        return Value(inner.value, tuple(
            Source(s.literal, f"{kind} {name}" if s.via == "literal" else s.via, s.name or name) for s in inner.sources
        ))


def _parameter(function: cst.FunctionDef, name: str) -> cst.Param | None:
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param) and star.name.value == name:
            return star
    return None
