"""Code that runs only on an older TensorFlow: version checks and import fallbacks.

Compatibility code keeps an old API exactly where it is the only one:

    if version.parse(tf.__version__) >= version.parse("2.4.0"):
        mixed_precision.set_global_policy("mixed_float16")
    else:
        tf.keras.mixed_precision.experimental.set_policy(policy)  # runs on TF < 2.4 only

    try:
        from tensorflow.keras.mixed_precision import experimental as mixed_precision
    except ImportError:  # TF 2.9+: the fallback runs
        from tensorflow.keras import mixed_precision

A migration finding there is false (the branch never runs where the API is gone, or its
failure is caught), and a rewrite would break the old-TensorFlow path. A version check
is evaluated the way Python evaluates it (`tf.__version__ < "2.4"` compares strings, and
is true for "2.21.0": that branch does run; `"2.3" in tf.__version__` tests a substring,
false for "2.9.0" and "2.15.0") at the TensorFlow versions the file's Keras
target means: TF 2.21 for Keras 3; TF 2.9 and 2.15 (the experimental API gone, Keras 2
still the default) for Keras 2. A check mplint cannot evaluate keeps its findings.
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from mplint.analysis.calls import arg_value, string_value
from mplint.analysis.guards import guard_of
from mplint.core.versions import TENSORFLOW2_VERSIONS, compare_versions, version_tuple

ModuleFacts = Any  # mplint.facts.module imports this module

_UNKNOWN = object()

_VERSION_STRINGS = frozenset({"tensorflow.__version__", "tensorflow.version.VERSION", "tensorflow.VERSION"})
_VERSION_PARSERS = frozenset({
    "packaging.version.parse", "packaging.version.Version", "distutils.version.LooseVersion",
    "distutils.version.StrictVersion", "pkg_resources.parse_version", "looseversion.LooseVersion",
})
# What hasattr(<module>, name) answers on current TensorFlow.
_PRESENT = {"keras.mixed_precision": frozenset({"set_global_policy", "global_policy", "Policy", "LossScaleOptimizer"})}
_ABSENT = {"keras.mixed_precision": frozenset({"experimental", "set_policy"}),
           "tensorflow.train.experimental": frozenset({"enable_mixed_precision_graph_rewrite"})}
_FALLBACK_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError"})
_BROAD_ERRORS = frozenset({"Exception", "BaseException"})
KERAS3_VERSIONS = ("2.21.0",)
KERAS2_VERSIONS = ("2.9.0", "2.15.0")
_MAX_DEPTH = 6


def old_tensorflow_only(facts: ModuleFacts, node: cst.CSTNode) -> bool:
    """Whether `node` runs only on a TensorFlow older than the file's target, or inside a
    try whose ImportError/AttributeError handler is the fallback for it, or in a module
    the project imports only where TensorFlow is 1.x (a TF 1.x backend beside a TF 2 one)."""
    versions = KERAS2_VERSIONS if facts.target.is_keras2 else KERAS3_VERSIONS
    if _in_a_branch_not_taken(facts, node, versions, fallbacks=True):
        return True
    return facts.project is not None and facts.project.imported_only_on_tensorflow1() is not None


def tensorflow1_only(facts: ModuleFacts, node: cst.CSTNode) -> bool:
    """Whether `node` sits in a branch that no TensorFlow 2 takes (`if
    tf.__version__.startswith("1."):`): compatibility code for TF 1.x, which says nothing
    of the TensorFlow the rest of the file runs on. Asked before the target is known."""
    return _in_a_branch_not_taken(facts, node, TENSORFLOW2_VERSIONS, fallbacks=False)


def unevaluated_version_check(facts: ModuleFacts, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The test of a version check that `node` sits in a branch of and that mplint
    cannot evaluate (`Version(TF_VERSION) < Version("2.4.0")`, the version a package was
    built with): whether that branch runs on the TensorFlow in use is not known, and the
    old API there is likely the compatibility code for an older one. None elsewhere."""
    for test, _ in reversed(guard_of(facts.index, node, to_module=True)):  # innermost first
        if _compares_versions(facts, test) and any(_truth(facts, test, v) is None for v in TENSORFLOW2_VERSIONS):
            return test
    return None


def _compares_versions(facts: ModuleFacts, test: cst.BaseExpression) -> bool:
    """A comparison of versions: a version parser's value or a dotted version string
    (`"2.4.0"`) on one side. Python's own version (`sys.version_info`) is not one."""
    for comparison in _comparisons(test):
        sides = [comparison.left, *(c.comparator for c in comparison.comparisons)]
        if any(facts.qualified(s) == "sys.version_info" for s in sides if isinstance(s, (cst.Name, cst.Attribute))):
            continue
        for side in sides:
            if isinstance(side, cst.Call) and (facts.qualified(side.func) in _VERSION_PARSERS or (
                    isinstance(side.func, cst.Name) and side.func.value in ("LooseVersion", "parse_version", "Version"))):
                return True
            text = string_value(side)
            if text is not None and re.fullmatch(r"\d+\.\d+(\.\d+)?", text):
                return True
    return False


def _comparisons(test: cst.BaseExpression):
    if isinstance(test, cst.Comparison):
        yield test
    elif isinstance(test, cst.BooleanOperation):
        yield from _comparisons(test.left)
        yield from _comparisons(test.right)
    elif isinstance(test, cst.UnaryOperation):
        yield from _comparisons(test.expression)


def _in_a_branch_not_taken(facts: ModuleFacts, node: cst.CSTNode, versions: tuple[str, ...], fallbacks: bool) -> bool:
    child: cst.CSTNode = node
    for ancestor in facts.index.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
            branch_taken = child is ancestor.body
            outcomes = [_truth(facts, ancestor.test, version) for version in versions]
            if all(o is not None and o != branch_taken for o in outcomes):
                return True
        if fallbacks and isinstance(ancestor, cst.Try) and _is_fallback(facts, ancestor):
            return True
        child = ancestor
    return False


def _is_fallback(facts: ModuleFacts, node: cst.Try) -> bool:
    """A handler that catches the error a missing API raises: ImportError or
    AttributeError by name, or a bare `except:` / `except Exception:` whose body does
    something in its place (one that only passes or re-raises is no fallback)."""
    for handler in node.handlers:
        caught = handler.type
        if caught is None:
            if _does_something(handler):
                return True
            continue
        names = caught.elements if isinstance(caught, cst.Tuple) else [caught]
        for element in names:
            expr = element.value if isinstance(element, cst.Element) else element
            if isinstance(expr, cst.Name) and expr.value in _FALLBACK_ERRORS:
                return True
            if isinstance(expr, cst.Name) and expr.value in _BROAD_ERRORS and _does_something(handler):
                return True
    return False


def _does_something(handler: cst.ExceptHandler) -> bool:
    body = handler.body.body if isinstance(handler.body, cst.IndentedBlock) else [handler.body]
    for statement in body:
        small = statement.body if isinstance(statement, cst.SimpleStatementLine) else None
        if small is None:
            return True  # a compound statement: an if, a with, ...
        for part in small:
            if isinstance(part, (cst.Pass, cst.Raise)):
                continue
            if isinstance(part, cst.Expr) and isinstance(part.value, (cst.SimpleString, cst.Ellipsis)):
                continue
            return True
    return False


def _truth(facts: ModuleFacts, test: cst.BaseExpression, version: str) -> bool | None:
    value = _evaluate(facts, test, version, 0)
    return None if value is _UNKNOWN else bool(value)


def _parse(version: object) -> object:
    return version_tuple(version, _UNKNOWN)


def _evaluate(facts: ModuleFacts, expr: cst.BaseExpression, version: str, depth: int) -> object:
    if depth > _MAX_DEPTH:
        return _UNKNOWN
    qualified = facts.qualified(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
    if qualified in _VERSION_STRINGS:
        return version
    if qualified is not None and facts.project is not None:
        flag = facts.project.version_flag(qualified)  # `compat.IS_PREV_TF_2_4_0` of another module
        if flag is not None:
            return flag.get(version, _UNKNOWN)
    text = string_value(expr)
    if text is not None:
        return text
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    if isinstance(expr, cst.Name):
        if expr.value in ("True", "False"):
            return expr.value == "True"
        bound = facts.bindings.values_visible(expr, facts.index)
        return _evaluate(facts, bound[0], version, depth + 1) if len(bound) == 1 else _UNKNOWN
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        left = _evaluate(facts, expr.left, version, depth + 1)
        right = _evaluate(facts, expr.comparisons[0].comparator, version, depth + 1)
        return _compare(left, expr.comparisons[0].operator, right)
    if isinstance(expr, cst.BooleanOperation):
        left = _evaluate(facts, expr.left, version, depth + 1)
        right = _evaluate(facts, expr.right, version, depth + 1)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        return (left and right) if isinstance(expr.operator, cst.And) else (left or right)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = _evaluate(facts, expr.expression, version, depth + 1)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        base = _evaluate(facts, expr.value, version, depth + 1)
        index = _evaluate(facts, expr.slice[0].slice.value, version, depth + 1)
        if isinstance(base, list) and isinstance(index, int) and -len(base) <= index < len(base):
            return base[index]
        return _UNKNOWN
    if isinstance(expr, cst.Call):
        return _call(facts, expr, version, depth)
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        items = tuple(_evaluate(facts, e.value, version, depth + 1) for e in expr.elements
                      if isinstance(e, cst.Element))
        return _UNKNOWN if len(items) != len(expr.elements) or _UNKNOWN in items else items
    return _UNKNOWN


def _call(facts: ModuleFacts, call: cst.Call, version: str, depth: int) -> object:
    qualified = facts.qualified(call.func)
    check = facts.project.version_check(qualified) if qualified and facts.project is not None else None
    if check is not None and not any(a.keyword is not None or a.star for a in call.args):
        arguments = [_evaluate(facts, a.value, version, depth + 1) for a in call.args]
        if _UNKNOWN not in arguments:  # `tf_minor_version_geq(6)`, a project helper (mplint.project.version_flags)
            truth = check(arguments, version)
            if truth is not None:
                return truth
    if qualified in _VERSION_PARSERS or (isinstance(call.func, cst.Name) and call.func.value in ("LooseVersion", "parse_version")):
        return _parse(_evaluate(facts, arg_value(call, 0), version, depth + 1))
    if qualified == "int" or (isinstance(call.func, cst.Name) and call.func.value == "int"):
        value = _evaluate(facts, arg_value(call, 0), version, depth + 1)
        return int(value) if isinstance(value, str) and value.isdigit() else _UNKNOWN
    if isinstance(call.func, cst.Name) and call.func.value == "hasattr":
        owner = arg_value(call, 0)
        name = string_value(arg_value(call, 1))
        module = facts.qualified(owner) if owner is not None else None
        if module is None or name is None:
            return _UNKNOWN
        if name in _PRESENT.get(module, ()):
            return True
        if name in _ABSENT.get(module, ()):
            return False
        return _UNKNOWN
    if isinstance(call.func, cst.Attribute):
        receiver = _evaluate(facts, call.func.value, version, depth + 1)
        method = call.func.attr.value
        argument = _evaluate(facts, arg_value(call, 0), version, depth + 1) if call.args else None
        if isinstance(receiver, str):
            if method in ("startswith", "endswith") and isinstance(argument, (str, tuple)):
                return getattr(receiver, method)(argument)
            if method == "split" and (argument is None or isinstance(argument, str)):
                return receiver.split(argument)
    return _UNKNOWN


_CST_OPERATORS = {cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">", cst.GreaterThanEqual: ">=",
                  cst.Equal: "==", cst.NotEqual: "!=", cst.In: "in", cst.NotIn: "not in"}


def _compare(left: object, operator: cst.BaseCompOp, right: object) -> object:
    return compare_versions(left, _CST_OPERATORS.get(type(operator), ""), right, _UNKNOWN)
