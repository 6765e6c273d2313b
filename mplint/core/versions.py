"""Comparing the values a version check computes, as Python does (`"2.21.0" < "2.4"` is a
string comparison and true; `(2, 21, 0) < (2, 4)` is false). Shared by the version checks
read from libcst (`mplint.facts.version_guards`) and the version flags read from `ast`
(`mplint.project.version_flags`)."""

from __future__ import annotations

import re

# The TensorFlow 2 versions a version check is evaluated at: its first, the stable
# mixed-precision API's first (2.4), the experimental API gone (2.9), Keras 2's last (2.15)
# and the current one.
TENSORFLOW2_VERSIONS = ("2.0.0", "2.4.0", "2.9.0", "2.15.0", "2.21.0")


def version_tuple(text: object, unknown: object) -> object:
    """`(2, 4, 0)` for "2.4.0" (`LooseVersion(...)`, `version.parse(...)` of a version
    string: its first three numbers), or `unknown` for anything but a string."""
    if not isinstance(text, str):
        return unknown
    return tuple(int(n) for n in re.findall(r"\d+", text)[:3])


def compare_versions(left: object, operator: str, right: object, unknown: object) -> object:
    """`left operator right` as Python evaluates it on the values a version check
    computed (strings, integers, tuples), or `unknown` where it cannot be told."""
    if left is unknown or right is unknown:
        return unknown
    if operator in ("in", "not in"):
        # `"2.3" in tf.__version__` (a substring), `tf.__version__ in ("2.3.0", "2.3.1")`
        if isinstance(right, str) and isinstance(left, str) or isinstance(right, tuple):
            return (left in right) == (operator == "in")  # type: ignore[operator]
        return unknown
    if type(left) is not type(right):
        return unknown
    try:
        if operator == "<":
            return left < right  # type: ignore[operator]
        if operator == "<=":
            return left <= right  # type: ignore[operator]
        if operator == ">":
            return left > right  # type: ignore[operator]
        if operator == ">=":
            return left >= right  # type: ignore[operator]
        if operator == "==":
            return left == right
        if operator == "!=":
            return left != right
    except TypeError:
        return unknown
    return unknown
