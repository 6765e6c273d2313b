"""Module-level flags that say which TensorFlow runs, read from the syntax tree (`ast`).

A project often decides its TensorFlow version once, in a compatibility module, and
imports the answer everywhere:

    # neurst/utils/compat.py
    IS_PREV_TF_2_4_0 = LooseVersion(tf.__version__) < LooseVersion("2.4")

    # another module
    if compat.IS_PREV_TF_2_4_0:
        from tensorflow.keras.mixed_precision.experimental import LossScaleOptimizer

The project's module table keeps each such flag's truth at the TensorFlow versions the
version checks are evaluated at (`mplint.facts.version_guards`), so a branch under an
imported flag is judged as the same check written in place would be. Only checks of
TensorFlow's own version count (`tf.__version__`, `tf.version.VERSION`), as Python
evaluates them: a string comparison stays a string comparison.

A helper function that answers the same question for its argument is kept too:

    def tf_minor_version_geq(x):
        version = tf.__version__.split(".")
        return int(version[1]) >= x

    if tf_minor_version_geq(6): ...   # another module: false on TF 2.3, true on 2.9

A function whose body is assignments to local names and one `return` of an expression
that reads TensorFlow's version is kept as its parameters and that expression with the
locals written in (`int(tf.__version__.split(".")[1]) >= x`); a call is evaluated with
its arguments' values (`evaluate_version_function`).
"""

from __future__ import annotations

import ast
import copy

from mplint.core.versions import TENSORFLOW2_VERSIONS, compare_versions, version_tuple

# The TensorFlow versions a version check is evaluated at (those
# `mplint.facts.version_guards` asks for are among them).
EVALUATED_VERSIONS = TENSORFLOW2_VERSIONS

_UNKNOWN = object()
_PARSERS = frozenset({"LooseVersion", "StrictVersion", "parse_version", "Version", "parse"})
_MAX_DEPTH = 8


def version_truths(value: ast.expr, imports: dict[str, str]) -> dict[str, bool] | None:
    """The truth of `value` at each of EVALUATED_VERSIONS, where it is a check of
    TensorFlow's version that evaluates at all of them; else None."""
    if not _reads_tensorflow_version(value, imports):
        return None
    truths: dict[str, bool] = {}
    for version in EVALUATED_VERSIONS:
        found = _evaluate(value, version, imports, 0)
        if found is _UNKNOWN or not isinstance(found, bool):
            return None
        truths[version] = found
    return truths


def version_function(function: ast.FunctionDef, imports: dict[str, str]) -> list | None:
    """[its parameters, its return expression with its locals written in (source)] for a
    function that computes a check of TensorFlow's version from its arguments; else None."""
    arguments = function.args
    if arguments.vararg or arguments.kwarg or arguments.kwonlyargs or arguments.defaults or function.decorator_list:
        return None
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    local: dict[str, ast.expr] = {}
    for statement in body[:-1]:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):
            return None
        local[statement.targets[0].id] = _written_in(statement.value, local)
    returned = _written_in(body[-1].value, local)
    if not _reads_tensorflow_version(returned, imports):
        return None
    return [[a.arg for a in (*arguments.posonlyargs, *arguments.args)], ast.unparse(returned)]


def _written_in(node: ast.expr, local: dict[str, ast.expr]) -> ast.expr:
    """A copy of `node` with the local names it reads replaced by their values."""
    class _Substitute(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            return local.get(name.id, name) if isinstance(name.ctx, ast.Load) else name
    return _Substitute().visit(copy.deepcopy(node))


def evaluate_version_function(function: list, arguments: list[object], version: str,
                              imports: dict[str, str]) -> bool | None:
    """The truth of a call of a `version_function` with these argument values at
    `version`; None where it does not evaluate to a truth."""
    parameters, source = function
    if len(arguments) != len(parameters):
        return None
    try:
        expression = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    found = _evaluate(expression, version, imports, 0, dict(zip(parameters, arguments)))
    return found if isinstance(found, bool) else None


def _reads_tensorflow_version(value: ast.expr, imports: dict[str, str]) -> bool:
    return any(_is_tensorflow_version(node, imports) for node in ast.walk(value))


def _is_tensorflow_version(node: ast.AST, imports: dict[str, str]) -> bool:
    """`tf.__version__`, `tf.VERSION` or `tf.version.VERSION`, `tf` importing tensorflow."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr in ("__version__", "VERSION") and isinstance(node.value, ast.Name):
        return imports.get(node.value.id) == "tensorflow"
    return node.attr == "VERSION" and isinstance(node.value, ast.Attribute) and node.value.attr == "version" \
        and isinstance(node.value.value, ast.Name) and imports.get(node.value.value.id) == "tensorflow"


def _evaluate(node: ast.expr, version: str, imports: dict[str, str], depth: int,
              env: dict[str, object] | None = None) -> object:
    if depth > _MAX_DEPTH:
        return _UNKNOWN
    if _is_tensorflow_version(node, imports):
        return version
    if env and isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, bool)):
        return node.value
    if isinstance(node, ast.Tuple):
        items = tuple(_evaluate(e, version, imports, depth + 1, env) for e in node.elts)
        return _UNKNOWN if _UNKNOWN in items else items
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left = _evaluate(node.left, version, imports, depth + 1, env)
        right = _evaluate(node.comparators[0], version, imports, depth + 1, env)
        return _compare(left, node.ops[0], right)
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, version, imports, depth + 1, env) for v in node.values]
        if _UNKNOWN in values:
            return _UNKNOWN
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _evaluate(node.operand, version, imports, depth + 1, env)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if isinstance(node, ast.Subscript):
        base = _evaluate(node.value, version, imports, depth + 1, env)
        index = _evaluate(node.slice, version, imports, depth + 1, env)
        if isinstance(base, list) and isinstance(index, int) and -len(base) <= index < len(base):
            return base[index]
        return _UNKNOWN
    if isinstance(node, ast.Call):
        return _call(node, version, imports, depth, env)
    return _UNKNOWN


def _call(node: ast.Call, version: str, imports: dict[str, str], depth: int, env: dict[str, object] | None) -> object:
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    first = _evaluate(node.args[0], version, imports, depth + 1, env) if node.args else None
    if name in _PARSERS and isinstance(first, str):
        return version_tuple(first, _UNKNOWN)
    if name == "int" and isinstance(first, str) and first.isdigit():
        return int(first)
    if isinstance(func, ast.Attribute):
        receiver = _evaluate(func.value, version, imports, depth + 1, env)
        if isinstance(receiver, str):
            if func.attr in ("startswith", "endswith") and isinstance(first, (str, tuple)):
                return getattr(receiver, func.attr)(first)
            if func.attr == "split" and (first is None or isinstance(first, str)):
                return receiver.split(first)
    return _UNKNOWN


_AST_OPERATORS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
                  ast.In: "in", ast.NotIn: "not in"}


def _compare(left: object, op: ast.cmpop, right: object) -> object:
    return compare_versions(left, _AST_OPERATORS.get(type(op), ""), right, _UNKNOWN)
