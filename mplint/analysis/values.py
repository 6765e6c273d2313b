"""Constant values of expressions, and where they were written.

`Dense(HIDDEN * 4)`, `Dense(args.units)` with `parser.add_argument("--units",
default=1000)`, `def block(units=1000): Dense(units)`: rules want the number *and* the
literal that defines it (to report "from constant HIDDEN, line 3" and to fix it there).

Only values that are certain are resolved:
- a literal (int, float, string, True/False/None), also negated;
- a name assigned exactly once in its scope (module, class body or function) by a plain
  assignment; `global` declarations make a function's assignment a module one; loop,
  `with`, walrus, augmented and tuple-unpacking targets and imports are not single values;
- `Config.HIDDEN`: a class attribute assigned once in the body of a module-level class
  and never assigned from outside (`Config.HIDDEN = ...`);
- arithmetic (`+ - * / // % **`) and `int()`/`float()` of certain values;
- `args.units` / `FLAGS.units`: the default of the one argparse `add_argument` / absl
  `DEFINE_*` flag with that destination, when the namespace comes from `parse_args()`
  (also through a function of the module that returns it), is absl's `FLAGS`, or is a
  name conventionally used for parsed flags (`args`, `flags`, `opts`, ...);
- a parameter's default, when no call in the module passes that parameter (a call with
  `*args`/`**kwargs` may pass anything, so it counts as passing it);
- `resolve_cases`: one value per call site when a parameter is passed by the module's
  callers (`build_model(hidden=1020)` reaches `Dense(hidden)` in `build_model`), each
  labelled with the call it comes from;
- `CFG["hidden"]`, `SIZES[0]`: an element of a dict/list/tuple literal bound once;
- with a project (`mplint.facts.project_context`): constants imported from other modules
  of the project (`config.HIDDEN`, `from config import MODEL_CFG`), absl flags defined
  in another module, and arguments given by callers in other modules. Their sources
  say where they are written (`Source.where`) and are never edited by a fix.
Names bound by a comprehension or a lambda shadow constants and are not resolved.
"""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Union

import libcst as cst

from mplint.analysis.index import ModuleIndex
from mplint.analysis.names import dotted_name
from mplint.analysis.node_types import SCOPE_DEFINITIONS, kinds

if TYPE_CHECKING:
    from mplint.analysis.names import NameResolver

# The analysis layer sits below the facts: it sees the project (a
# mplint.facts.project_context.ProjectContext), the call graph (mplint.facts.call_graph)
# and the values other modules give (ExternalValue) only through what the module facts
# hand it, typed here without importing them.
ProjectContext = Any
CallGraph = Any
ExternalValue = Any

Number = Union[int, float]

# Names that, unbound or bound only by unpacking/parameters, mean parsed command-line flags.
FLAG_NAMESPACE_NAMES = frozenset(
    {"args", "arguments", "parsed_args", "cli_args", "cmd_args", "flags", "FLAGS", "opts", "opt",
     "options", "hparams", "hps", "params", "cfg", "config", "conf"}
)
_PARSE_METHODS = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
_COMPREHENSION_KINDS = kinds(*_COMPREHENSIONS)


@dataclass(frozen=True)
class Source:
    """A literal that contributes to a value, and how the value reached the use."""

    literal: cst.BaseExpression  # the Integer/Float/SimpleString node as written
    via: str  # "literal", "constant HIDDEN", "flag --units default", "parameter units default"
    name: str | None = None  # the constant/flag/parameter name, if any
    where: str | None = None  # "config.py:3": written in another file (read, never edited)
    # A parameter's default that every call of its function in the project overrides: it
    # is used only by callers outside the project, if any.
    overridden: bool = False

    @property
    def external(self) -> bool:
        """Written in another file of the project: its node is not in this module."""
        return self.where is not None


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

    @property
    def written_in_code(self) -> bool:
        """Whether every source is a literal or a module constant (not a flag, not a
        parameter's default): the value the code has whatever runs it."""
        return bool(self.sources) and all(s.via == "literal" or s.via.startswith("constant ") for s in self.sources)


_BINARY_OPS: dict[type, Callable[[object, object], object]] = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
}
_MAX_POWER = 4096  # `2 ** 100000` must not stall the linter


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


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Bindings:
    """Where each name is bound, per scope (module, class body or function)."""

    def __init__(self, index: ModuleIndex) -> None:
        # (scope node, name) -> list of assigned values (None for non-simple bindings)
        self.bindings: dict[tuple[int, str], list[cst.BaseExpression | None]] = {}
        self.module_values: dict[str, list[cst.BaseExpression]] = {}
        self.all_values: dict[str, list[cst.BaseExpression]] = {}
        # Dotted targets of attribute assignments anywhere (`Config.HIDDEN = 5`).
        self.attribute_targets: set[str] = set()
        self._index = index
        self._global_names: dict[int, set[str]] = {}
        self._nonlocal_names: dict[int, set[str]] = {}
        for node in index.nodes(cst.Global):
            function = index.enclosing(node, cst.FunctionDef)
            if function is not None:
                self._global_names.setdefault(id(function), set()).update(n.name.value for n in node.names)
        for node in index.nodes(cst.Nonlocal):
            function = index.enclosing(node, cst.FunctionDef)
            if function is not None:
                self._nonlocal_names.setdefault(id(function), set()).update(n.name.value for n in node.names)
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
        for node in (*index.nodes(cst.Import), *index.nodes(cst.ImportFrom)):
            self._bind_import(index, node)

    @staticmethod
    def _scope(index: ModuleIndex, node: cst.CSTNode) -> cst.CSTNode:
        return index.enclosing(node, cst.FunctionDef, cst.Lambda, cst.ClassDef) or index.module

    def _bind_import(self, index: ModuleIndex, node: cst.Import | cst.ImportFrom) -> None:
        """An import binds a name too (only here: imports have their own table for
        qualified names), so `HIDDEN = 1000` plus `from cfg import HIDDEN` is not single."""
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            return
        scope = self._scope(index, node)
        for alias in node.names:  # type: ignore[union-attr]
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            else:
                name = alias.name
                while isinstance(name, cst.Attribute):
                    name = name.value
                if not isinstance(name, cst.Name):
                    continue
                local = name.value
            self.bindings.setdefault((id(scope), local), []).append(None)

    def _declared_scope(self, scope: cst.CSTNode, name: str, index: ModuleIndex) -> cst.CSTNode:
        """The scope an assignment in `scope` really binds (`global`/`nonlocal`)."""
        if name in self._global_names.get(id(scope), ()):
            return index.module
        if name in self._nonlocal_names.get(id(scope), ()):
            return index.enclosing(scope, cst.FunctionDef) or index.module
        return scope

    def _bind_target(
        self, scope: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression | None, index: ModuleIndex
    ) -> None:
        if isinstance(target, cst.Name):
            scope = self._declared_scope(scope, target.value, index)
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
        elif isinstance(target, cst.Attribute):
            dotted = dotted_name(target)
            if dotted is not None:
                self.attribute_targets.add(dotted)

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
            elif method.startswith("DEFINE_"):
                self._absl(call)

    def _argparse(self, call: cst.Call) -> None:
        names = [
            str(a.value.evaluated_value)
            for a in call.args
            if a.keyword is None and isinstance(a.value, cst.SimpleString) and isinstance(a.value.evaluated_value, str)
        ]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        dest_node = keywords.get("dest")
        if isinstance(dest_node, cst.SimpleString):
            dest = str(dest_node.evaluated_value)
        else:
            longs = [o for o in names if o.startswith("--")]
            chosen = longs[0] if longs else (names[0] if names else "")
            dest = chosen.lstrip("-").replace("-", "_")
        if not dest:
            return
        default = keywords.get("default")
        label = next((n for n in names if n.startswith("--")), dest)
        # Every definition counts (a flag defined twice has no single default); one
        # without `default=` defaults to None.
        self.defaults.setdefault(dest, []).append((default if default is not None else cst.Name("None"), f"flag {label} default"))

    def _absl(self, call: cst.Call) -> None:
        positional = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        name_node = keywords.get("name", positional[0] if positional else None)
        default = keywords.get("default", positional[1] if len(positional) > 1 else None)
        if isinstance(name_node, cst.SimpleString) and default is not None:
            name = str(name_node.evaluated_value)
            self.defaults.setdefault(name, []).append((default, f"flag --{name} default"))


@dataclass(frozen=True)
class _Binding:
    """What a name stands for where it is used: an expression and how to call it."""

    expr: cst.BaseExpression
    label: str  # "constant HIDDEN", "variable units", "parameter units default"
    name: str


class ValueResolver:
    """Resolves expressions to constant values with their sources."""

    MAX_DEPTH = 12

    def __init__(self, index: ModuleIndex, bindings: Bindings, names: "NameResolver | None" = None) -> None:
        self.index = index
        self.bindings = bindings
        self.names = names
        self._flags: FlagDefaults | None = None
        self._calls_by_callee: dict[str, list[cst.Call]] | None = None
        self._module_classes: dict[str, cst.ClassDef] | None = None
        self._holders: dict[str, list[cst.Call]] | None = None
        self._returns: dict[str, list[cst.BaseExpression]] | None = None
        # Set by the module facts: the call graph, built only when a case needs it, and
        # what the rest of the project says (None: a file on its own).
        self.call_graph: Callable[[], "CallGraph"] | None = None
        self.project: "ProjectContext | None" = None
        self._overrides: dict[int, Value] = {}  # parameter reads bound to one call site's value

    @property
    def flags(self) -> FlagDefaults:
        if self._flags is None:
            self._flags = FlagDefaults(self.index)
        return self._flags

    # -- public -------------------------------------------------------------------
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
            override = self._overrides.get(id(node))
            if override is not None:
                return override
            binding = self.lookup(node)
            if binding is not None:
                return self._through(binding, depth)
            return self._project_constant(node)
        if isinstance(node, cst.BinaryOperation):
            return self._arithmetic(node, depth)
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
            inner = self.resolve(node.expression, depth + 1)
            if inner is not None and _is_number(inner.value):
                value = -inner.value if isinstance(node.operator, cst.Minus) else inner.value  # type: ignore[operator]
                return Value(value, inner.sources)
            return None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("int", "float"):
            if len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
                inner = self.resolve(node.args[0].value, depth + 1)
                if inner is not None and _is_number(inner.value):
                    cast = int if node.func.value == "int" else float
                    return Value(cast(inner.value), inner.sources)  # type: ignore[arg-type]
            return None
        if isinstance(node, cst.Attribute):
            binding = self.lookup_attribute(node)
            if binding is not None:
                return self._through(binding, depth)
            return self._project_constant(node) or self._project_flag(node)
        if isinstance(node, cst.Subscript):
            return self._element(node, depth)
        return None

    # -- other modules of the project --------------------------------------------------
    def _project_constant(self, node: cst.Name | cst.Attribute) -> Value | None:
        """A constant another module of the project defines, as this module imports it."""
        if self.project is None or self.names is None:
            return None
        dotted = dotted_name(node)
        if dotted is None or dotted.split(".", 1)[0] not in self.names.table.aliases:
            return None  # not a name this module imports
        raw = self.names.raw(node)
        if raw is None:
            return None
        name = self.project.resolve(raw)
        found = self.project.constant(name) if name is not None else None
        return external_value(found) if found is not None else None

    def _project_flag(self, node: cst.Attribute) -> Value | None:
        """`FLAGS.hidden_size` for an absl flag defined in another module of the project."""
        if self.project is None or not isinstance(node.value, (cst.Name, cst.Attribute)):
            return None
        if node.attr.value in self.flags.defaults or not self.is_flag_namespace(node.value):
            return None
        found = self.project.flag_default(node.attr.value)
        return external_value(found) if found is not None else None

    def _element(self, node: cst.Subscript, depth: int) -> Value | None:
        """`CFG["hidden"]` / `SIZES[0]` of a dict/list/tuple constant."""
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return None
        key = self.resolve(node.slice[0].slice.value, depth + 1)
        if key is None or not isinstance(key.value, (str, int)) or isinstance(key.value, bool):
            return None
        container = node.value
        binding = self.lookup(container) if isinstance(container, cst.Name) else None
        if binding is not None:
            element = _element_of(binding.expr, key.value)
            if element is None:
                return None
            label = f"constant {binding.name}[{key.value!r}]"
            return self._through(_Binding(element, label, binding.name), depth)
        outer = self.resolve(container, depth + 1)
        if outer is None or outer.single_source is None or not outer.single_source.external:
            return None
        try:
            value = outer.value[key.value]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            return None
        source = outer.single_source
        literal = _literal_node(value)
        if literal is None:
            return None
        return Value(value, (Source(literal, f"{source.via}[{key.value!r}]", source.name, source.where),))

    def resolve_cases(self, node: cst.BaseExpression, depth: int = 0) -> list[Value]:
        """Every constant value `node` can have where it is: its one value, or, when it
        depends on a parameter of the enclosing function that the module's callers
        pass, one value per call site whose argument is known (the others are left out:
        nothing can be said about them). Empty if nothing is known."""
        value = self.resolve(node, depth)
        # A parameter's default is one case; the arguments callers in other modules pass
        # (`build_model(hidden=1020)` in train.py) are the others.
        defaulted = value is not None and self.project is not None and any(
            s.via.startswith("parameter ") for s in value.sources)
        if value is not None and not defaulted:
            return [value]
        if depth > 3 or self.call_graph is None:
            return [value] if value is not None else []
        reads = [(read, found) for read, found in self._parameter_reads(node) if found is not None]
        if len({id(found[1]) for _, found in reads}) != 1:
            return []  # no parameter, or several: the combinations are not followed
        function, param = reads[0][1]
        candidates: list[Value] = []
        ruled_out = self._sites_that_skip(node, function)
        for site, argument in self.arguments(function, param):
            if id(site) in ruled_out:
                continue  # `conv2d(x, 3, relu=False)` never reaches the `if relu:` branch
            for inner in self.resolve_cases(argument, depth + 1):
                label = f"argument `{param.name.value}` of `{function.name.value}(...)`"
                candidates.append(Value(inner.value, tuple(
                    Source(s.literal, label, param.name.value) if s.via == "literal" else s for s in inner.sources
                )))
        if self.project is not None:
            for argument in self.project.arguments(self.call_graph().key_of(function), param.name.value,
                                                   under_mixed=True):
                if argument is not None and hasattr(argument, "value"):
                    candidates.append(external_value(argument))  # type: ignore[arg-type]
        if defaulted and self._every_call_passes(function, param):
            value = Value(value.value, tuple(  # type: ignore[union-attr]
                dataclasses.replace(s, overridden=True) if s.via.startswith("parameter ") else s
                for s in value.sources))  # type: ignore[union-attr]
        if defaulted:
            external = [c for c in candidates if any(s.via.startswith("argument ") for s in c.sources)]
            if not external:
                return [value]  # type: ignore[list-item]
            candidates = external
        cases: list[Value] = [value] if defaulted else []  # type: ignore[list-item]
        for candidate in candidates:  # the expression, with the parameter's reads taking each value
            for read, _ in reads:
                self._overrides[id(read)] = candidate
            try:
                found = self.resolve(node, depth)
            finally:
                for read, _ in reads:
                    self._overrides.pop(id(read), None)
            if found is not None:
                cases.append(found)
        return cases

    def _every_call_passes(self, function: cst.FunctionDef, param: cst.Param) -> bool:
        """Whether the function has calls in the project and each one gives `param` its
        own argument (its default then serves no call there). A function also handed on
        as a value, or called with `*args`, may use its default."""
        assert self.call_graph is not None
        graph = self.call_graph()
        position = call_position(function, param, graph.owner(function) is not None)
        local = graph.sites_of(function)
        for site in local:
            if not isinstance(site, cst.Call) or any(a.star for a in site.args):
                return False
            if not any(a.keyword is not None and a.keyword.value == param.name.value for a in site.args) and not (
                    position is not None and position < sum(1 for a in site.args if a.keyword is None)):
                return False
        external = self.project.calls_passing(graph.key_of(function), param.name.value) \
            if self.project is not None else 0
        return external is not None and len(local) + external > 0

    def _sites_that_skip(self, node: cst.CSTNode, function: cst.FunctionDef) -> set[int]:
        """The calls of `function` whose constant arguments say `node` never runs: it sits
        under `if flag:` (or `else:`, `if not flag:`) on a parameter `flag` of the function
        that the function never rebinds, and the call gives `flag` the other truth."""
        from mplint.analysis.guards import name_tests

        skipped: set[int] = set()
        for test, needed in name_tests(self.index, node):
            flag = _parameter(function, test.value)
            if flag is None or flag.star or self.bindings.is_bound(function, test.value):
                continue
            for site, argument in self.arguments(function, flag):
                given = self.resolve(argument)
                if given is not None and given.written_in_code and isinstance(given.value, (bool, int, type(None))) \
                        and bool(given.value) != needed:
                    skipped.add(id(site))
        return skipped

    def _parameter_reads(self, node: cst.BaseExpression) -> Iterator[tuple[cst.Name, tuple[cst.FunctionDef, cst.Param] | None]]:
        """The names read in `node`, each with the (function, parameter) it reads."""
        stack: list[cst.CSTNode] = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Name):
                yield current, self.parameter_of(current)
            elif isinstance(current, (cst.BinaryOperation, cst.UnaryOperation, cst.Call)):
                if isinstance(current, cst.BinaryOperation):
                    stack += [current.left, current.right]
                elif isinstance(current, cst.UnaryOperation):
                    stack.append(current.expression)
                elif isinstance(current.func, cst.Name) and current.func.value in ("int", "float"):
                    stack += [a.value for a in current.args]

    def parameter_of(self, node: cst.Name) -> tuple[cst.FunctionDef, cst.Param] | None:
        """The parameter a name reads where it is used, when it is not re-assigned."""
        scope = self.index.enclosing(node, cst.FunctionDef, cst.Lambda)
        while scope is not None:
            if isinstance(scope, cst.Lambda):
                if _lambda_parameter(scope, node.value):
                    return None
            else:
                param = _parameter(scope, node.value)
                if param is not None:
                    return None if self.bindings.is_bound(scope, node.value) else (scope, param)
                if self.bindings.is_bound(scope, node.value):
                    return None
            scope = self.index.enclosing(scope, cst.FunctionDef, cst.Lambda)
        return None

    def arguments(self, function: cst.FunctionDef, param: cst.Param) -> Iterator[tuple[cst.Call, cst.BaseExpression]]:
        """(call, the argument it gives `param`) for each call of `function` in the
        module that gives a known one (the default when it passes none)."""
        assert self.call_graph is not None
        graph = self.call_graph()
        position = call_position(function, param, graph.owner(function) is not None)
        for site in graph.sites_of(function):
            if not isinstance(site, cst.Call) or any(a.star for a in site.args):
                continue
            argument = next((a.value for a in site.args if a.keyword is not None and a.keyword.value == param.name.value), None)
            if argument is None and position is not None:
                given = [a.value for a in site.args if a.keyword is None]
                if position < len(given):
                    argument = given[position]
            if argument is None:
                argument = param.default
            if argument is not None:
                yield site, argument

    def resolve_elements(self, node: cst.BaseExpression, depth: int = 0) -> list[Value | None] | None:
        """The values of a list/tuple written here or bound once to a name
        (`SIZES = [30, 60]`), also repeated (`[BATCH] * 3`); None if not a sequence.
        Elements that are not constant are None."""
        if depth > self.MAX_DEPTH:
            return None
        if isinstance(node, (cst.List, cst.Tuple)):
            if any(isinstance(e, cst.StarredElement) for e in node.elements):
                return None
            return [self.resolve(e.value, depth + 1) for e in node.elements]
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
            for side in (node.left, node.right):
                if isinstance(side, (cst.List, cst.Tuple, cst.Name, cst.Attribute)):
                    found = self.resolve_elements(side, depth + 1)
                    if found is not None:
                        return found
            return None
        binding = None
        if isinstance(node, cst.Name):
            binding = self.lookup(node)
        elif isinstance(node, cst.Attribute):
            binding = self.lookup_attribute(node)
        if binding is None:
            return None
        inner = self.resolve_elements(binding.expr, depth + 1)
        if inner is None:
            return None
        return [self._relabel(v, binding) if v is not None else None for v in inner]

    def lookup(self, node: cst.Name) -> _Binding | None:
        """The one expression a name stands for where it is used, or None."""
        name = node.value
        if self._bound_by_comprehension(node, name):
            return None
        scope = self.index.enclosing(node, cst.FunctionDef, cst.Lambda, cst.ClassDef)
        if isinstance(scope, cst.ClassDef):
            if self.bindings.is_bound(scope, name):
                value = self.bindings.single_value(scope, name)
                return _Binding(value, f"constant {name}", name) if value is not None else None
            scope = self.index.enclosing(scope, cst.FunctionDef, cst.Lambda)
        while scope is not None:
            if isinstance(scope, cst.Lambda):
                if _lambda_parameter(scope, name):
                    return None
            else:
                param = _parameter(scope, name)
                if self.bindings.is_bound(scope, name):
                    if param is not None:
                        return None  # a parameter that is re-assigned: no single value
                    value = self.bindings.single_value(scope, name)
                    return _Binding(value, f"variable {name}", name) if value is not None else None
                if param is not None:
                    if param.default is None or self._passed_explicitly(scope, param):
                        return None
                    return _Binding(param.default, f"parameter {name} default", name)
            scope = self.index.enclosing(scope, cst.FunctionDef, cst.Lambda)
        value = self.bindings.single_value(self.index.module, name)
        return _Binding(value, f"constant {name}", name) if value is not None else None

    def lookup_attribute(self, node: cst.Attribute) -> _Binding | None:
        """`Config.HIDDEN` (a class attribute) or `args.units` (a flag default)."""
        base = node.value
        if not isinstance(base, cst.Name):
            return None
        attr = node.attr.value
        classdef = self._module_class(base)
        if classdef is not None:
            dotted = f"{base.value}.{attr}"
            if dotted in self.bindings.attribute_targets:
                return None
            value = self.bindings.single_value(classdef, attr)
            return _Binding(value, f"constant {dotted}", dotted) if value is not None else None
        if not self.is_flag_namespace(base):
            return None
        defaults = self.flags.defaults.get(attr)
        if defaults and len(defaults) == 1:
            default, label = defaults[0]
            return _Binding(default, label, attr)
        return None

    def is_flag_namespace(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether `node` holds parsed command-line flags (argparse namespace, absl FLAGS)."""
        if depth > 4:
            return False
        if isinstance(node, cst.Subscript):  # parser.parse_known_args()[0]
            return self.is_flag_namespace(node.value, depth + 1)
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PARSE_METHODS:
                return True
            if isinstance(func, cst.Name):
                return any(self.is_flag_namespace(r, depth + 1) for r in self._returns_of(func.value))
            return False
        if isinstance(node, cst.Attribute):
            if node.attr.value != "FLAGS":
                return False
            qualified = self.names.qualified(node) if self.names is not None else None
            return qualified is None or qualified.endswith("flags.FLAGS")
        if isinstance(node, cst.Name):
            if self.names is not None:
                qualified = self.names.qualified(node)
                if qualified is not None and qualified.endswith("flags.FLAGS"):
                    return True
            values = self.bindings.values_visible(node, self.index)
            if values:
                return all(self.is_flag_namespace(v, depth + 1) for v in values)
            return node.value in FLAG_NAMESPACE_NAMES
        return False

    # -- internals ----------------------------------------------------------------
    def _through(self, binding: _Binding, depth: int) -> Value | None:
        inner = self.resolve(binding.expr, depth + 1)
        return self._relabel(inner, binding) if inner is not None else None

    @staticmethod
    def _relabel(inner: Value, binding: _Binding) -> Value:
        """Sources written directly in the binding take its label; deeper ones keep theirs."""
        return Value(inner.value, tuple(
            Source(s.literal, binding.label, binding.name) if s.via == "literal" else s for s in inner.sources
        ))

    def _arithmetic(self, node: cst.BinaryOperation, depth: int) -> Value | None:
        op = _BINARY_OPS.get(type(node.operator))
        if op is None:
            return None
        left = self.resolve(node.left, depth + 1)
        right = self.resolve(node.right, depth + 1)
        if left is None or right is None or not (_is_number(left.value) and _is_number(right.value)):
            return None
        if isinstance(node.operator, cst.Power) and abs(right.value) > _MAX_POWER:  # type: ignore[arg-type]
            return None
        try:
            result = op(left.value, right.value)
        except (ArithmeticError, ValueError, OverflowError):
            return None
        if isinstance(result, complex):
            return None
        return Value(result, left.sources + right.sources)

    def _bound_by_comprehension(self, node: cst.Name, name: str) -> bool:
        for ancestor in self.index.ancestors(node):
            kind = type(ancestor)
            if kind in SCOPE_DEFINITIONS:
                return False
            if kind in _COMPREHENSION_KINDS:
                for_in: cst.CompFor | None = ancestor.for_in
                while for_in is not None:
                    if name in target_names(for_in.target):
                        return True
                    for_in = for_in.inner_for_in
        return False

    def _module_class(self, base: cst.Name) -> cst.ClassDef | None:
        if self._module_classes is None:
            self._module_classes = {}
            for classdef in self.index.nodes(cst.ClassDef):
                if self.index.enclosing(classdef, cst.FunctionDef, cst.ClassDef) is None:
                    self._module_classes[classdef.name.value] = classdef
        classdef = self._module_classes.get(base.value)
        if classdef is None:
            return None
        # The name must mean the class where it is used: not rebound anywhere in between.
        if self.bindings.is_bound(self.index.module, base.value):
            return None
        scope = self.index.enclosing(base, cst.FunctionDef, cst.Lambda)
        while scope is not None:
            if self.bindings.is_bound(scope, base.value) or (
                isinstance(scope, cst.FunctionDef) and _parameter(scope, base.value) is not None
            ):
                return None
            scope = self.index.enclosing(scope, cst.FunctionDef, cst.Lambda)
        return classdef

    # -- parameters passed explicitly -----------------------------------------------
    def _calls_named(self, name: str) -> list[cst.Call]:
        if self._calls_by_callee is None:
            grouped: dict[str, list[cst.Call]] = {}
            for call in self.index.nodes(cst.Call):
                func = call.func
                callee = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
                if callee is not None:
                    grouped.setdefault(callee, []).append(call)
            self._calls_by_callee = grouped
        return self._calls_by_callee.get(name, [])

    def _returns_of(self, function_name: str) -> list[cst.BaseExpression]:
        """Return values of the module's functions with this name."""
        if self._returns is None:
            returns: dict[str, list[cst.BaseExpression]] = {}
            for ret in self.index.nodes(cst.Return):
                function = self.index.enclosing(ret, cst.FunctionDef)
                if function is not None and ret.value is not None:
                    returns.setdefault(function.name.value, []).append(ret.value)
            self._returns = returns
        return self._returns.get(function_name, [])

    def _passed_explicitly(self, function: cst.FunctionDef, param: cst.Param) -> bool:
        """Whether any call in the module may pass `param` (so its default is not its value)."""
        name = param.name.value
        classdef = _class_of_method(self.index, function)
        if classdef is not None and function.name.value == "__init__":
            callees = [classdef.name.value]
        else:
            callees = [function.name.value]
        position = call_position(function, param, classdef is not None)
        for callee in callees:
            for call in self._calls_named(callee):
                if any(a.star in ("*", "**") for a in call.args):
                    return True
                if any(a.keyword is not None and a.keyword.value == name for a in call.args):
                    return True
                count = sum(1 for a in call.args if a.keyword is None)
                if position is not None and 0 <= position < count:
                    return True
            # `functools.partial(build, units=64)` and `KerasClassifier(build, units=64)`.
            for holder in self._calls_passing_name(callee):
                if any(a.star == "**" or (a.keyword is not None and a.keyword.value == name) for a in holder.args):
                    return True
        return False

    def _calls_passing_name(self, name: str) -> list[cst.Call]:
        """Calls that get the name as an argument (`partial(build, ...)`)."""
        if self._holders is None:
            holders: dict[str, list[cst.Call]] = {}
            for node in self.index.nodes(cst.Arg):
                if isinstance(node.value, cst.Name):
                    holder = self.index.parent_of(node)
                    if isinstance(holder, cst.Call):
                        holders.setdefault(node.value.value, []).append(holder)
            self._holders = holders
        return self._holders.get(name, [])


def _element_of(container: cst.BaseExpression, key: object) -> cst.BaseExpression | None:
    if isinstance(container, cst.Dict) and isinstance(key, str):
        for element in container.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) \
                    and element.key.evaluated_value == key:
                return element.value
        return None
    if isinstance(container, (cst.List, cst.Tuple)) and isinstance(key, int):
        elements = container.elements
        if any(not isinstance(e, cst.Element) for e in elements) or not -len(elements) <= key < len(elements):
            return None
        return elements[key].value
    return None


def _literal_node(value: object) -> cst.BaseExpression | None:
    """A stand-in node for a value written in another file (for labels, never edited)."""
    if isinstance(value, bool) or value is None:
        return cst.Name(str(value))
    if isinstance(value, int):
        return cst.Integer(str(value)) if value >= 0 else cst.UnaryOperation(cst.Minus(), cst.Integer(str(-value)))
    if isinstance(value, float):
        return cst.Float(repr(value)) if value >= 0 else cst.UnaryOperation(cst.Minus(), cst.Float(repr(-value)))
    if isinstance(value, str):
        return cst.SimpleString(repr(value))
    if isinstance(value, (dict, list)):
        return cst.Name("None")
    return None


def external_value(found: "ExternalValue") -> Value | None:
    """A value written in another module of the project."""
    literal = _literal_node(found.value)
    if literal is None:
        return None
    return Value(found.value, (Source(literal, found.label, found.name, found.where),))


def target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names: set[str] = set()
        for element in target.elements:
            names |= target_names(element.value)
        return names
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return set()


def _parameter(function: cst.FunctionDef, name: str) -> cst.Param | None:
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param) and star.name.value == name:
            return star
    return None


def _lambda_parameter(function: cst.Lambda, name: str) -> bool:
    params = function.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    names += [s.name.value for s in (params.star_arg, params.star_kwarg) if isinstance(s, cst.Param)]
    return name in names


def _class_of_method(index: ModuleIndex, function: cst.FunctionDef) -> cst.ClassDef | None:
    """The class whose body defines `function` directly, or None."""
    block = index.parent_of(function)
    holder = index.parent_of(block) if block is not None else None
    return holder if isinstance(holder, cst.ClassDef) else None


def call_position(function: cst.FunctionDef, param: cst.Param, in_class: bool) -> int | None:
    """The index among a call's positional arguments that binds `param`: a method's
    first parameter (`self`, `cls`) is bound by the call's object, a static method's is
    not (`in_class`: the function is defined in a class body). None where no positional
    argument binds it (keyword-only, `*args`, or the method's own `self`)."""
    params = function.params
    positional = [*params.posonly_params, *params.params]
    position = next((i for i, p in enumerate(positional) if p is param), None)
    if position is not None and in_class and not _is_staticmethod(function):
        position -= 1
    return position if position is None or position >= 0 else None


def _is_staticmethod(function: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in function.decorators)
