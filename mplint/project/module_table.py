"""What a module defines, read with Python's own parser (`ast`, about 10x faster than libcst).

For any module another module looks into: its imports (to follow re-exports), the
functions and classes it defines (with the parameters of each function, named like
`mplint.facts.call_graph` names them: `build`, `Trainer.train_step`,
`main.<locals>.step`; for one whose every return casts to float32, the parameters
that could choose another dtype; the parameters it trains or predicts with as a model), its constants (module-level names and `Class.ATTR` bound once to
a literal, or to a dict/list/tuple of literals) and the defaults of the absl flags it
defines, and the names it calls (`f(...)`, `x.f(...)`: the last name); a configuration
object's attributes set once at module level to a literal, and the attributes the module
sets anywhere (`x.precision = 16`). A module that does
not parse has no table (its facts are skipped).
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from typing import Any

from mplint.core.consuming_methods import CONSUMING_METHODS
from mplint.project.version_flags import version_function, version_truths

_LITERALS = (int, float, str, bool, type(None))


def build_table(text: str) -> dict[str, Any] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    table: dict[str, Any] = {"imports": {}, "stars": [], "definitions": {}, "functions": {}, "constants": {}, "flags": {},
                             "called": [], "unread": [], "version_flags": {}, "version_functions": {}, "tf1_only_imports": [],
                             "attribute_constants": {}, "stored_attributes": {}}
    called: set[str] = set()
    read: set[str] = set()  # names the module's code reads (loads)
    from_imported: set[str] = set()  # names bound by `from m import name`
    _walk_definitions(tree.body, [], table, set(), _consuming_lines(text))
    assigned: dict[str, int] = {}
    stored = table["stored_attributes"]
    Name, Attribute, Call, Store, Subscript = ast.Name, ast.Attribute, ast.Call, ast.Store, ast.Subscript
    for node in ast.walk(tree):
        kind = type(node)
        if kind is Name:
            if type(node.ctx) is not Store:
                read.add(node.id)
        elif kind is Attribute:
            if type(node.ctx) is Store:  # `x.precision = 16` (also in a `for`/`with` target), not on self/cls
                owner = node.value
                if not (type(owner) is Name and owner.id in ("self", "cls")):
                    stored[node.attr] = stored.get(node.attr, 0) + 1
        elif kind is Call:
            func = node.func
            method = func.id if type(func) is Name else func.attr if type(func) is Attribute else None
            if method is not None:
                called.add(method)
                if method == "setattr" or method == "update":
                    _note_setattr(node, stored)
                elif method.startswith("DEFINE_"):
                    _flag(node, table["flags"])
        elif kind is Subscript:
            value = node.value
            if type(node.ctx) is Store and type(value) is Attribute and value.attr == "__dict__":
                stored["*"] = stored.get("*", 0) + 1  # `x.__dict__[name] = value`
        elif kind is ast.Import:
            for alias in node.names:
                if alias.asname:
                    table["imports"][alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    table["imports"].setdefault(head, head)
        elif kind is ast.ImportFrom:
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    table["stars"].append(module)
                else:
                    from_imported.add(alias.asname or alias.name)
                    # `.` * level, then the module path and the name (`from . import x`: `.x`)
                    table["imports"][alias.asname or alias.name] = f"{module}.{alias.name}" if node.module else f"{module}{alias.name}"
    for statement in tree.body:
        for name, value in _assignments(statement):
            assigned[name] = assigned.get(name, 0) + 1
            _constant(name, value, statement, table["constants"])
            truths = version_truths(value, table["imports"])
            if truths is not None:  # `IS_PREV_TF_2_4_0 = LooseVersion(tf.__version__) < LooseVersion("2.4")`
                table["version_flags"][name] = [truths, statement.lineno]
        if isinstance(statement, ast.ClassDef):
            for inner in statement.body:
                for name, value in _assignments(inner):
                    _constant(f"{statement.name}.{name}", value, inner, table["constants"])
    # A name bound more than once (or also imported) has no single value.
    for name, count in assigned.items():
        if count > 1 or name in table["imports"]:
            table["constants"].pop(name, None)
            table["version_flags"].pop(name, None)
    _attribute_constants(tree, assigned, table)
    table["called"] = sorted(called)
    if "__version__" in text or "VERSION" in text:  # else no import is under a version check
        table["tf1_only_imports"] = _tf1_only_imports(tree, table["imports"])
        for statement in tree.body:  # `def tf_minor_version_geq(x): ...` (mplint.project.version_flags)
            function = version_function(statement, table["imports"]) if isinstance(statement, ast.FunctionDef) else None
            if function is not None:
                table["version_functions"][statement.name] = function
    # Names imported with `from m import name` that the module's code never reads (nor
    # lists in `__all__`): nothing here runs them later.
    exported = _all_names(tree)
    table["unread"] = sorted(from_imported - read - exported)
    return table


def _attribute_constants(tree: ast.Module, assigned: dict[str, int], table: dict[str, Any]) -> None:
    """A configuration object's attributes set once, at module level, to a literal
    (`configs = EasyDict()`, then `configs.general.precision = 32`): `attribute_constants`
    keeps them by dotted name. Whether another module (or a function) sets the same
    attribute again, `stored_attributes` tells (`ProjectIndex.constant` checks)."""
    found: dict[str, list] = {}
    counts: dict[str, int] = {}
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        dotted = _attribute_chain(statement.targets[0])
        if dotted is None:
            continue
        root = dotted.split(".", 1)[0]
        if assigned.get(root) != 1 or root in table["imports"]:
            continue  # the object itself must be a module-level name bound once, here
        counts[dotted] = counts.get(dotted, 0) + 1
        ok, value = literal(statement.value)
        if ok:
            found[dotted] = [value, statement.lineno]
    table["attribute_constants"] = {name: entry for name, entry in found.items() if counts[name] == 1}


def _attribute_chain(target: ast.expr) -> str | None:
    """`a.b.c` for an attribute target rooted at a name; None otherwise."""
    parts = []
    while isinstance(target, ast.Attribute):
        parts.append(target.attr)
        target = target.value
    if not parts or not isinstance(target, ast.Name):
        return None
    return ".".join([target.id, *reversed(parts)])


def _note_setattr(call: ast.Call, stored: dict[str, int]) -> None:
    """`setattr(x, "precision", 16)` sets `precision`; `setattr(x, name, v)` may set any
    attribute of `x` (`*x`); `x.__dict__.update(...)` and `x.update(vars(args))` any
    attribute of anything (`*`)."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "setattr" and len(call.args) >= 2:
        name = call.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            key = name.value
        else:  # any attribute of the object its first argument names: `*configs`
            receiver = call.args[0]
            while isinstance(receiver, (ast.Attribute, ast.Subscript)):
                receiver = receiver.value
            key = "*" + receiver.id if isinstance(receiver, ast.Name) else "*"
        stored[key] = stored.get(key, 0) + 1
    elif isinstance(func, ast.Attribute) and func.attr == "update":
        owner = func.value
        from_namespace = any(isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id == "vars"
                             for a in call.args)
        if from_namespace or (isinstance(owner, ast.Attribute) and owner.attr == "__dict__"):
            stored["*"] = stored.get("*", 0) + 1


def _tf1_only_imports(tree: ast.Module, imports: dict[str, str]) -> list[list]:
    """Every import statement, as [level, module, names, whether only TensorFlow 1.x runs
    it] (listed only for a module that reads TensorFlow's version): one in a branch of a TensorFlow version check that no TF 2 version takes (the
    `else:` of `if tf.__version__.startswith("2"):`). A module that the project imports
    only there is TF 1.x code, whatever its own lines say."""
    found: list[list] = []

    def visit(body: list[ast.stmt], tf1_only: bool) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if isinstance(node, ast.Import):
                    found.extend([0, alias.name, [], tf1_only] for alias in node.names)
                else:
                    found.append([node.level, node.module or "", [a.name for a in node.names], tf1_only])
            elif isinstance(node, ast.If):
                truths = version_truths(node.test, imports)
                visit(node.body, tf1_only or (truths is not None and not any(truths.values())))
                visit(node.orelse, tf1_only or (truths is not None and all(truths.values())))
            else:
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []) or [], tf1_only)
                for handler in getattr(node, "handlers", []) or []:
                    visit(handler.body, tf1_only)

    visit(tree.body, False)
    return found


def _all_names(tree: ast.Module) -> set[str]:
    """The strings of a module-level `__all__` (re-exported names count as read)."""
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) \
                    and isinstance(statement.value, (ast.List, ast.Tuple)):
                names |= {e.value for e in statement.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return names


def _walk_definitions(body: list[ast.stmt], prefix: list[str], table: dict, taken: set[str],
                      consuming: list[int]) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            key = ".".join([*prefix, node.name])
            if key in taken:  # the same name defined twice: numbered as the call graph does
                key = f"{key}#{sum(1 for k in taken if k.split('#')[0] == key)}"
            taken.add(key)
            args = node.args
            bound = bool(prefix) and prefix[-1] != "<locals>" and not any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list
            )
            table["functions"][key] = {
                "params": [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)],
                "bound": bound,
            }
            first = bisect_left(consuming, node.lineno)
            within = first < len(consuming) and consuming[first] <= (node.end_lineno or node.lineno)
            consumed = consumed_parameters(node, table["functions"][key]["params"]) if within else None
            if consumed:
                table["functions"][key]["consumes"] = consumed
            deciding = float32_returns(node)
            if deciding is not None:
                table["functions"][key]["float32_unless"] = deciding
            if not prefix:
                table["definitions"][node.name] = "function"
            _walk_definitions(node.body, [*prefix, node.name, "<locals>"], table, taken, consuming)
        elif isinstance(node, ast.ClassDef):
            if not prefix:
                table["definitions"][node.name] = "class"
            _walk_definitions(node.body, [*prefix, node.name], table, taken, consuming)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    _walk_definitions([child], prefix, table, taken, consuming)
                elif isinstance(child, (ast.excepthandler, ast.match_case)):
                    _walk_definitions(child.body, prefix, table, taken, consuming)


# `.fit(`, `.compile(`, ...: the lines a function must span for `consumed_parameters` to walk it
_CONSUMING_CALL = re.compile(r"\.(?:{})\s*\(".format("|".join(sorted(CONSUMING_METHODS))))


def _consuming_lines(text: str) -> list[int]:
    """The (1-based, sorted) lines where a consuming method is called, as text."""
    lines, line, previous = [], 1, 0
    for match in _CONSUMING_CALL.finditer(text):
        line += text.count("\n", previous, match.start())
        previous = match.start()
        lines.append(line)
    return lines


def consumed_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]) -> dict[str, str]:
    """The parameters a function trains, evaluates, predicts with or saves as a model
    (`model.compile(...)`, `model.fit(...)`), each with the first such method called on it."""
    found: dict[str, str] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CONSUMING_METHODS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id in params:
            found.setdefault(node.func.value.id, node.func.attr)
    return found


_WIDE_NAMES = frozenset({"float32", "float64", "double"})


def float32_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str] | None:
    """Where every `return` of the function casts to float32/float64 (`tf.cast(x,
    tf.float32)`, or `tf.cast(x, dtype)` whose parameter `dtype` defaults to one and is not
    rebound): the parameters whose argument could choose another dtype (empty: none),
    else None. A helper of another module whose value is float32 for its callers
    (`get_padding(x)`) takes no part in a float16 overflow."""
    returns = list(_own_returns(function.body))
    if not returns:
        return None
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    deciding: set[str] = set()
    for value in returns:
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "cast"):
            return None
        dtype = value.args[1] if len(value.args) > 1 else next((k.value for k in value.keywords if k.arg == "dtype"), None)
        if dtype is not None and _wide_spelling(dtype):
            continue
        if isinstance(dtype, ast.Name) and dtype.id in defaults and _wide_spelling(defaults[dtype.id]) \
                and not _rebinds(function, dtype.id):
            deciding.add(dtype.id)
            continue
        return None
    return sorted(deciding)


def _own_returns(body: list[ast.stmt]):
    """The values of the `return` statements of a function body (not of nested ones)."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.Return):
            yield statement.value
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _own_returns(getattr(statement, field, []) or [])
        for handler in getattr(statement, "handlers", []) or []:
            yield from _own_returns(handler.body)
        for case in getattr(statement, "cases", []) or []:
            yield from _own_returns(case.body)


def _wide_spelling(expr: ast.expr | None) -> bool:
    if isinstance(expr, ast.Attribute):
        return expr.attr in _WIDE_NAMES
    return isinstance(expr, ast.Constant) and expr.value in ("float32", "float64")


def _rebinds(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, (ast.Store, ast.Del))
               for n in ast.walk(function))


def _assignments(statement: ast.stmt) -> list[tuple[str, ast.expr]]:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        return [(statement.targets[0].id, statement.value)]
    if isinstance(statement, ast.AnnAssign) and statement.value is not None and isinstance(statement.target, ast.Name):
        return [(statement.target.id, statement.value)]
    return []


def literal(node: ast.expr) -> tuple[bool, Any]:
    """(True, value) for a literal, a negated number, or a dict (string keys)/list/tuple
    of literals; else (False, None)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    return _json_able(value)


def _json_able(value: Any) -> tuple[bool, Any]:
    if isinstance(value, _LITERALS):
        return (False, None) if isinstance(value, float) and value != value else (True, value)
    if isinstance(value, (list, tuple)):
        items = [_json_able(v) for v in value]
        return (True, [v for _, v in items]) if all(ok for ok, _ in items) else (False, None)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        items = {k: _json_able(v) for k, v in value.items()}
        return (True, {k: v for k, (_, v) in items.items()}) if all(ok for ok, _ in items.values()) else (False, None)
    return False, None


def _constant(name: str, value: ast.expr, statement: ast.stmt, constants: dict) -> None:
    ok, found = literal(value)
    if ok:
        constants[name] = [found, statement.lineno]


def _flag(call: ast.Call, flags: dict) -> None:
    func = call.func
    method = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if not method.startswith("DEFINE_"):
        return
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    name = keywords.get("name", call.args[0] if call.args else None)
    default = keywords.get("default", call.args[1] if len(call.args) > 1 else None)
    if not isinstance(name, ast.Constant) or not isinstance(name.value, str) or default is None:
        return
    ok, value = literal(default)
    if ok:
        flags[name.value] = [value, call.lineno]
