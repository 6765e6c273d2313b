"""What a module's *code* says, read with Python's own parser (about ten times faster
than libcst): its identifiers, its string constants, and its float16 hazard literals
and where they can flow. Comments and docstrings say nothing here, which is the point:
`keras.mixed_precision.DTypePolicy` in a docstring or `# float16` in a comment cannot
lead to a finding.

Used by the pre-filter's second stage (`mplint.engine.prefilter.worth_parsing`) to prove that
no rule can fire on a file before libcst parses it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from mplint.core.float16_literals import is_float16_hazard
from mplint.inputs.python_tree import python_tree


@dataclass
class CodeScan:
    """One walk over a module's `ast`."""

    identifiers: set[str] = field(default_factory=set)  # names, attributes, keywords, imports, defs
    strings: set[str] = field(default_factory=set)  # str constants, except bare string statements
    hazards: int = 0  # number literals float16 turns into inf or 0
    layer_like: bool = False  # a class with bases and a `call` method (a Keras layer, maybe)
    half_dtype_callees: list[str] = field(default_factory=list)  # `f.g` of calls given a `dtype=` that may be half
    flag_dtype_callees: list[str] = field(default_factory=list)  # ... that may be half only through a flag's choices
    imports: dict[str, str] = field(default_factory=dict)  # local name -> what it imports (`np` -> `numpy`)
    star_imports: list[str] = field(default_factory=list)  # modules imported with `*`
    assigned: set[str] = field(default_factory=set)  # names bound other than by an import
    aliases: dict[str, str] = field(default_factory=dict)  # `import x as a`, `a = x.y`: a -> y
    two_positional: set[str] = field(default_factory=set)  # callees given 2+ positional arguments
    tree: ast.AST | None = None
    _reaches: dict[frozenset[str], bool] = field(default_factory=dict)

    @classmethod
    def of(cls, text: str, flags: int = 0) -> "CodeScan | None":
        """The scan of `text`, or None if Python cannot parse it (the engine reports that)."""
        tree = _python_tree(text, flags)
        if tree is None:
            return None
        scan = cls(tree=tree)
        scan._walk(tree)
        return scan

    def _walk(self, tree: ast.AST) -> None:
        identifiers, strings = self.identifiers, self.strings
        add_identifier, add_string = identifiers.add, strings.add
        statements: set[int] = set()  # bare string statements (docstrings): not code
        hazards = 0
        Name, Attribute, Constant, Call, Expr, keyword = ast.Name, ast.Attribute, ast.Constant, ast.Call, ast.Expr, ast.keyword
        assigned, Store = self.assigned, ast.Store
        for node in ast.walk(tree):
            kind = type(node)
            if kind is Name:
                add_identifier(node.id)
                if type(node.ctx) is Store:
                    assigned.add(node.id)
            elif kind is Attribute:
                add_identifier(node.attr)
            elif kind is Constant:
                value = node.value
                value_type = type(value)
                if value_type is str:
                    if id(node) not in statements:
                        add_string(value)
                elif (value_type is float or value_type is int) and value and is_float16_hazard(abs(value)):
                    hazards += 1
            elif kind is keyword:
                if node.arg is not None:
                    add_identifier(node.arg)
            elif kind is Expr:
                if type(node.value) is Constant:
                    statements.add(id(node.value))
            elif kind is Call:
                if len(node.args) >= 2:
                    callee = _callee(node)
                    if callee is not None:
                        self.two_positional.add(callee)
                for argument in node.keywords:
                    if argument.arg == "dtype":
                        half = _may_be_half(argument.value)
                        if half:
                            (self.half_dtype_callees if half is True else self.flag_dtype_callees).append(
                                _dotted(node.func))
            elif kind is ast.Assign:
                value = _callee_name(node.value)
                if value is not None and len(node.targets) == 1 and type(node.targets[0]) is Name:
                    self.aliases[node.targets[0].id] = value
            elif kind is ast.alias:
                identifiers.update(node.name.split("."))
                if node.asname:
                    add_identifier(node.asname)
                    self.aliases[node.asname] = node.name.rsplit(".", 1)[-1]
            elif kind is ast.Import:
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name
                    else:
                        head = alias.name.split(".", 1)[0]
                        self.imports.setdefault(head, head)
            elif kind is ast.ImportFrom:
                if node.module:
                    identifiers.update(node.module.split("."))
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    if alias.name == "*":
                        self.star_imports.append(module)
                    else:
                        self.imports[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
            elif kind is ast.ClassDef:
                add_identifier(node.name)
                assigned.add(node.name)
                if node.bases and any(type(s) in (ast.FunctionDef, ast.AsyncFunctionDef) and s.name == "call"
                                      for s in node.body):
                    self.layer_like = True
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                add_identifier(node.name)
                assigned.add(node.name)
            elif kind is ast.arg:
                add_identifier(node.arg)
        self.hazards = hazards

    # -- questions --------------------------------------------------------------------
    def names_any(self, names) -> bool:
        return not self.identifiers.isdisjoint(names)

    def strings_any(self, values) -> bool:
        return not self.strings.isdisjoint(values)

    def resolve(self, name: str | None) -> str | None:
        """The name a local alias stands for (`select = tf.where` -> `where`)."""
        for _ in range(4):
            if name not in self.aliases:
                break
            name = self.aliases[name]
        return name

    def may_resolve_into(self, dotted: str, roots: frozenset[str]) -> bool:
        """Whether a callee spelled `dotted` (`layers.Dense`, `D`; "" for any other
        expression, such as `super().__init__`, which has no qualified name) can resolve
        to a name under one of the top-level packages `roots` and end in a capitalised
        name (a class), the way the import table resolves names: through imports, names
        bound to a framework attribute, `tf`/`keras` without an import, and star imports."""
        if not dotted:
            return False
        head, _, rest = dotted.partition(".")
        if head in self.imports:
            path = self.imports[head]
            last = dotted.rsplit(".", 1)[-1] if rest else path.rsplit(".", 1)[-1]
            return path.split(".", 1)[0] in roots and last[:1].isupper()
        if head in self.assigned:
            return True  # `D = tf.keras.layers.Dense`: bound to anything
        if rest and not dotted.rsplit(".", 1)[-1][:1].isupper():
            return False
        if head in roots or head == "tf":
            return True
        return any(m.split(".", 1)[0] in roots for m in self.star_imports)

    def hazard_reaches(self, use_calls: frozenset[str]) -> bool:
        """`hazard_reaches_use`, computed once per scan."""
        if use_calls not in self._reaches:
            self._reaches[use_calls] = hazard_reaches_use(self, use_calls)
        return self._reaches[use_calls]

    def called_with_two_positional(self, names) -> bool:
        """Whether one of `names` (or an alias of it) is called with 2+ positional arguments."""
        return any(self.resolve(callee) in names for callee in self.two_positional)



# dtype names that are not float16 (`tf.float32`, `np.int32`): no policy name resolves to them.
_OTHER_DTYPES = frozenset({"float32", "float64", "double", "int8", "int16", "int32", "int64", "uint8", "uint16",
                           "uint32", "uint64", "bool", "bool_", "string", "complex64", "complex128"})
_HALF = frozenset({"float16", "bfloat16", "half"})


def _may_be_half(value: ast.AST) -> bool | str:
    """Whether a `dtype=` value may name float16/bfloat16: True, False (another constant),
    or "flag" for an attribute that resolves to nothing but the choices of a flag of the
    same name (`tf.int32`, `self.dtype_policy`: the value resolver follows neither)."""
    kind = type(value)
    if kind is ast.Constant:
        return value.value in ("float16", "bfloat16")  # type: ignore[attr-defined]
    if kind is ast.Attribute:
        attr = value.attr  # type: ignore[attr-defined]
        if attr in _HALF:
            return True
        base = value.value  # type: ignore[attr-defined]
        if attr in _OTHER_DTYPES or (type(base) is ast.Name and base.id in ("self", "cls")):
            return "flag"
    return True


# -- what the parser needs: where top-level statements are ----------------------------

# Top-level statements libcst parses into a compound statement (an indented block that
# can own the comments after it), as opposed to a SimpleStatementLine.
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
             ast.With, ast.AsyncWith, ast.Try, ast.Match, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
# Per top-level statement: (first line with decorators, last line, is compound, line and
# column where its syntax starts (0-based column)).
Statements = list[tuple[int, int, bool, int, int]]
_last_statements: tuple[str, int, Statements | None] | None = None  # for the text scanned last


def _python_tree(text: str, flags: int) -> ast.Module | None:
    global _last_statements
    tree = python_tree(text, flags)
    _last_statements = (text, flags, None if tree is None else _statements(tree))
    return tree


def top_level_statements(text: str, flags: int = 0) -> Statements | None:
    """Where the module's top-level statements are (see `Statements`), or None if Python
    rejects the text. The pre-filter's scan of the same text is reused."""
    last = _last_statements
    if last is not None and last[0] is text and last[1] == flags:
        return last[2]
    tree = _python_tree(text, flags)
    return None if tree is None else _last_statements[2]  # type: ignore[index]


def _statements(tree: ast.Module) -> Statements:
    found = []
    for statement in tree.body:
        first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
        found.append((first, statement.end_lineno or statement.lineno, isinstance(statement, _COMPOUND),
                      statement.lineno, statement.col_offset))
    return found


def _dotted(expr: ast.AST) -> str:
    """`a.b.c` for a Name/Attribute chain, else ""."""
    parts = []
    while type(expr) is ast.Attribute:
        parts.append(expr.attr)  # type: ignore[attr-defined]
        expr = expr.value  # type: ignore[attr-defined]
    if type(expr) is not ast.Name:
        return ""
    parts.append(expr.id)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


def _callee(call: ast.Call) -> str | None:
    return _callee_name(call.func)


def _callee_name(func: ast.AST) -> str | None:
    """`f` for `f` and `x.f`."""
    if type(func) is ast.Name:
        return func.id  # type: ignore[attr-defined]
    if type(func) is ast.Attribute:
        return func.attr  # type: ignore[attr-defined]
    return None


# -- where float16 hazard literals can flow ------------------------------------------------

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
_FLAG_DEFINERS = ("add_argument",)  # and absl's DEFINE_*


# Expressions a constant value passes through unchanged or by arithmetic (what the value
# resolver follows): names, attributes, unary and binary operations, conditionals,
# `int()`/`float()`, and the elements of literal sequences (loop targets).
_CARRIERS = (ast.BinOp, ast.UnaryOp, ast.IfExp, ast.BoolOp, ast.Tuple, ast.List, ast.Set, ast.Starred)
_CONVERSIONS = ("int", "float")


def _reads(node: ast.AST) -> tuple[set[str], bool]:
    """The names (and attribute names) whose value an expression's value can be, and
    whether it spells a hazard literal itself."""
    names: set[str] = set()
    hazard = False
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is ast.Name:
            names.add(current.id)  # type: ignore[attr-defined]
        elif kind is ast.Attribute:
            names.add(current.attr)  # type: ignore[attr-defined]
        elif kind is ast.Constant:
            value = current.value  # type: ignore[attr-defined]
            if type(value) in (int, float) and value and is_float16_hazard(abs(value)):
                hazard = True
        elif kind in _CARRIERS:
            stack.extend(ast.iter_child_nodes(current))
        elif kind is ast.Call and type(current.func) is ast.Name and current.func.id in _CONVERSIONS:  # type: ignore[attr-defined]
            stack.extend(current.args)  # type: ignore[attr-defined]
    return names, hazard


def _target_names(target: ast.AST) -> set[str]:
    """The names an assignment target binds (`x`, `self.x`, `a, b`); a subscript binds none."""
    kind = type(target)
    if kind is ast.Name:
        return {target.id}  # type: ignore[attr-defined]
    if kind is ast.Attribute:
        return {target.attr}  # type: ignore[attr-defined]
    if kind in (ast.Tuple, ast.List):
        return set().union(*(_target_names(e) for e in target.elts))  # type: ignore[attr-defined]
    if kind is ast.Starred:
        return _target_names(target.value)  # type: ignore[attr-defined]
    return set()


class _Flows(ast.NodeVisitor):
    """Every place a value can be bound to a name, and every place a constant is used
    the way MP501/MP502 report it, with the identifiers involved."""

    def __init__(self, use_calls: frozenset[str]) -> None:
        self.use_calls = use_calls
        self.bindings: list[tuple[set[str], ast.AST]] = []  # (names bound, value)
        self.uses: list[ast.AST] = []  # operands and arguments a constant is reported in
        self.calls: list[ast.Call] = []
        self.functions: dict[str, list[ast.AST]] = {}  # name -> FunctionDef/ClassDef

    # bindings
    def visit_Assign(self, node: ast.Assign) -> None:
        names: set[str] = set()
        for target in node.targets:
            names |= _target_names(target)
        self.bindings.append((names, node.value))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.bindings.append((_target_names(node.target), node.value))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.bindings.append((_target_names(node.target), node.value))
        if isinstance(node.op, _ARITHMETIC):
            self.uses += [node.target, node.value]
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.bindings.append((_target_names(node.target), node.value))
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self.bindings.append((_target_names(node.target), node.iter))
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.bindings.append((_target_names(node.target), node.iter))
        self.generic_visit(node)

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self.bindings.append((_target_names(node.optional_vars), node.context_expr))
        self.generic_visit(node)

    def _function_def(self, node) -> None:
        self.functions.setdefault(node.name, []).append(node)
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            self.bindings.append(({arg.arg}, default))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                self.bindings.append(({arg.arg}, default))
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = _function_def

    def visit_Lambda(self, node: ast.Lambda) -> None:
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            self.bindings.append(({arg.arg}, default))
        self.generic_visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.functions.setdefault(node.name, []).append(node)
        self.generic_visit(node)

    # uses
    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, _ARITHMETIC):
            self.uses += [node.left, node.right]
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append(node)
        self.generic_visit(node)

    def use_call_arguments(self, scan: CodeScan) -> list[ast.AST]:
        """Arguments of calls to `use_calls`, also under another name (`from tensorflow
        import where as select`, `select = tf.where`)."""
        found: list[ast.AST] = []
        for call in self.calls:
            callee = _callee(call)
            if callee in self.use_calls or scan.resolve(callee) in self.use_calls:
                found += [*call.args, *(k.value for k in call.keywords)]
        return found


def hazard_reaches_use(scan: CodeScan, use_calls: frozenset[str]) -> bool:
    """Whether a float16 hazard literal can reach a place MP501/MP502 report: an operand
    of `+ - * /` (also augmented), or an argument of one of `use_calls` (`tf.where`,
    `tf.maximum`, ...). Values flow through every binding of a name or attribute
    (assignments, loop targets, parameter defaults), through arguments of the
    module's own functions and classes, and through flag definitions; names are matched
    without regard to scope, so this over-approximates what the rules resolve."""
    assert scan.tree is not None
    flows = _Flows(use_calls)
    flows.visit(scan.tree)
    bindings = [(names, *_reads(value)) for names, value in flows.bindings]
    tainted: set[str] = set()  # names that can hold a hazard value
    for call in flows.calls:
        _call_bindings(call, flows.functions, bindings)
    changed = True
    while changed:
        changed = False
        for targets, reads, hazard in bindings:
            if (hazard or not reads.isdisjoint(tainted)) and not targets <= tainted:
                tainted |= targets
                changed = True
    for use in [*flows.uses, *flows.use_call_arguments(scan)]:
        reads, hazard = _reads(use)
        if hazard or not reads.isdisjoint(tainted):
            return True
    return False


def _call_bindings(call: ast.Call, functions: dict[str, list[ast.AST]], bindings: list) -> None:
    """Arguments passed to the module's own functions and classes (also through a holder
    such as `functools.partial(f, eps=1e-12)`) bind their parameters; a flag definition
    (`add_argument("--eps", default=1e-12)`, `flags.DEFINE_float("eps", 1e-12, ...)`)
    binds the flag's attribute name."""
    callee = _callee(call)
    arguments = [*call.args, *(k.value for k in call.keywords)]
    if callee in _FLAG_DEFINERS or (callee or "").startswith("DEFINE_"):
        names = set()
        for argument in arguments:
            if type(argument) is ast.Constant and type(argument.value) is str:
                names.add(argument.value.lstrip("-").replace("-", "_"))
        for argument in arguments:
            bindings.append((names, *_reads(argument)))
        return
    targets: list[ast.AST] = list(functions.get(callee, [])) if callee else []
    for argument in call.args:
        held = _callee_name(argument)
        if held in functions:
            targets += functions[held]  # a holder: partial(f, ...), map(self.f, ...)
    if not targets:
        return
    params: set[str] = set()
    for target in targets:
        for function in ([target] if not isinstance(target, ast.ClassDef) else
                         [n for n in target.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]):
            if isinstance(function, ast.ClassDef):
                continue
            args = function.args  # type: ignore[union-attr]
            params |= {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
            if args.vararg is not None:
                params.add(args.vararg.arg)
            if args.kwarg is not None:
                params.add(args.kwarg.arg)
    for argument in arguments:
        bindings.append((params, *_reads(argument)))
