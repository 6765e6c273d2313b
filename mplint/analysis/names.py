"""Qualified names through imports, without libcst's (slow) scope analysis.

`import tensorflow as tf; tf.keras.layers.Dense`, `from tensorflow.keras import layers
as L; L.Dense` and `from keras.layers import Dense` all resolve to the canonical name
`keras.layers.Dense`. Rules match canonical names, so they see through every
spelling of TensorFlow, Keras 2 (tf.keras, tf_keras) and Keras 3 (keras, and keras_core,
its 2023 preview package).

Resolution is scope-insensitive (an import anywhere in the module binds its name
everywhere), which is what mixed-precision code in the wild needs; a name that is
also assigned locally to something else is not treated as the import. A name imported
from two places (`from ...mixed_precision import experimental as prec`, later `from
tensorflow.keras import mixed_precision as prec`) is, where it is read, the module of the
last of those imports before the read in the source (the last one where none is).
"""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache
from typing import Any

import libcst as cst

# What the module facts hand in (a mplint.facts.project_context.ProjectContext): the
# analysis layer does not import the facts above it.
ProjectContext = Any

# Spellings of the Keras package, longest first.
_KERAS_PREFIXES = (
    ("tensorflow.compat.v1.keras.", "keras."),
    ("tensorflow.compat.v2.keras.", "keras."),
    ("tensorflow.python.keras.", "keras."),
    ("tensorflow.keras.", "keras."),
    ("tf_keras.", "keras."),
    ("keras_core.", "keras."),
    ("keras.api._v2.keras.", "keras."),
    ("keras._tf_keras.keras.", "keras."),
)
_KERAS_MODULES = {"tensorflow.keras", "tensorflow.python.keras", "tf_keras", "keras_core", "tensorflow.compat.v1.keras",
                  "tensorflow.compat.v2.keras"}

# Names bound without an import that can only mean these modules (snippets, notebooks).
_CONVENTIONAL_ROOTS = {"tf": "tensorflow", "tensorflow": "tensorflow", "keras": "keras", "np": "numpy"}

# Modules whose attributes may be bound to a plain name (`L = tf.keras.layers`).
_FRAMEWORK_ROOTS = ("tensorflow", "keras", "tf_keras", "keras_core", "numpy")
_MISSING = object()


@lru_cache(maxsize=4096)  # the same few hundred names recur in every module
def canonical(qualified: str) -> str:
    """Canonical spelling of a fully qualified name (Keras spellings unified)."""
    if qualified in _KERAS_MODULES:
        return "keras"
    for prefix, replacement in _KERAS_PREFIXES:
        if qualified.startswith(prefix):
            qualified = replacement + qualified[len(prefix) :]
            break
    if qualified.startswith("tensorflow.compat.v2."):
        qualified = "tensorflow." + qualified[len("tensorflow.compat.v2.") :]
    if qualified.startswith("keras.layers."):
        # Keras 2 internal paths: keras.layers.core.Dense -> keras.layers.Dense
        parts = qualified.split(".")
        if len(parts) > 3 and parts[-1][:1].isupper() and all(p.islower() for p in parts[2:-1]):
            qualified = "keras.layers." + parts[-1]
    return qualified


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while type(node) is cst.Attribute:  # exact types: no ABC check per link (node_types)
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is cst.Name:
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _module_name(node: cst.BaseExpression) -> str:
    return dotted_name(node) or ""


class ImportTable:
    """Local names -> fully qualified names, from every import in a module."""

    def __init__(self, imports: list[cst.Import], import_froms: list[cst.ImportFrom]) -> None:
        self.aliases: dict[str, str] = {}
        # every import of a local name, in the order seen: (the import statement, target)
        self._imports_of: dict[str, list[tuple[cst.CSTNode, str]]] = {}
        self.star_modules: list[str] = []
        self.imported_modules: set[str] = set()  # full module paths that appear in imports
        for node in imports:
            for alias in node.names:
                full = _module_name(alias.name)
                self.imported_modules.add(full)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = full
                    self._imports_of.setdefault(alias.asname.name.value, []).append((node, full))
                else:
                    head = full.split(".", 1)[0]
                    self.aliases.setdefault(head, head)
        for node in import_froms:
            if node.module is None and not node.relative:
                continue
            module = "." * len(node.relative) + (_module_name(node.module) if node.module else "")
            self.imported_modules.add(module)
            if isinstance(node.names, cst.ImportStar):
                self.star_modules.append(module)
                continue
            for alias in node.names:
                name = _module_name(alias.name)
                local = (
                    alias.asname.name.value
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                    else name
                )
                # Relative: `.` * level, then the module path and the name, so `from . import
                # x` is `.x` and `from .. import x` is `..x` (unambiguous levels).
                full = f"{module}.{name}" if module.strip(".") else f"{module}{name}"
                self.aliases[local] = full
                self._imports_of.setdefault(local, []).append((node, full))
                self.imported_modules.add(full)
        # names imported from more than one place: resolved where they are read
        self.reimported = {name: entries for name, entries in self._imports_of.items()
                           if len({target for _, target in entries}) > 1}
        self._ordered_imports: dict[str, list[tuple[int, str]]] = {}

    def resolve_head(self, name: str) -> str | None:
        return self.aliases.get(name)

    def import_before(self, name: str, read: cst.CSTNode, position) -> str | None:
        """For a name imported from more than one place: the target of the last of its
        imports before `read` in the source (`position(node)`: where a node starts in source
        order), or None where none is."""
        ordered = self._ordered_imports.get(name)
        if ordered is None:
            ordered = sorted((position(statement), target) for statement, target in self.reimported.get(name, ()))
            self._ordered_imports[name] = ordered
        at = bisect_left(ordered, (position(read),))
        return ordered[at - 1][1] if at else None


class NameResolver:
    """Qualified (canonical) names of expressions in one module.

    `module_assignments` are `name = value` statements at module level (they shadow an
    import); `all_assignments` are those anywhere (a `L = tf.keras.layers` alias may sit
    in a function).
    """

    def __init__(
        self,
        table: ImportTable,
        module_assignments: dict[str, list[cst.BaseExpression]],
        all_assignments: dict[str, list[cst.BaseExpression]],
    ) -> None:
        self.table = table
        self._module_assignments = module_assignments
        self._all_assignments = all_assignments
        self._cache: dict[int, str | None] = {}
        self._heads: dict[str, str | None] = {}
        self.project: "ProjectContext | None" = None  # set by the module facts
        self._reexports: dict[str, object] = {}
        self.position = None  # the module index's source order, set by the module facts

    def raw(self, node: cst.BaseExpression) -> str | None:
        """Fully qualified name as imported (not canonicalised), or None."""
        key = id(node)
        if key not in self._cache:
            self._cache[key] = self._raw(node)
        return self._cache[key]

    def _raw(self, node: cst.BaseExpression) -> str | None:
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.table.reimported and self.position is not None:
            here = self.table.import_before(head, node, self.position)
            if here is not None and not self._module_assignments.get(head):
                return f"{here}.{rest}" if rest else here
        if head not in self._heads:
            self._heads[head] = None  # guards `a = b; b = a` cycles
            self._heads[head] = self._resolve_head(head)
        base = self._heads[head]
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base

    def _resolve_head(self, head: str) -> str | None:
        rebound = self._module_assignments.get(head, [])
        imported = self.table.resolve_head(head)
        if imported is not None:
            if any(self._alias_target(v) != imported for v in rebound):
                return None  # imported, then re-bound at module level to something else
            return imported
        assigned = self._all_assignments.get(head, [])
        if assigned:
            targets = {self._alias_target(v) for v in assigned}
            if len(targets) == 1:
                (target,) = targets
                if target is not None and target.split(".", 1)[0] in _FRAMEWORK_ROOTS:
                    return target
            return None
        if head in _CONVENTIONAL_ROOTS:
            return _CONVENTIONAL_ROOTS[head]
        for module in self.table.star_modules:
            if not module.startswith("."):
                return f"{module}.{head}"
        return None

    def _alias_target(self, value: cst.BaseExpression) -> str | None:
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self.raw(value)
        return None

    def qualified(self, node: cst.BaseExpression) -> str | None:
        """Canonical qualified name (`keras.layers.Dense`), or None. A name of the
        project that re-exports a framework name (`from .utils import keras`, with
        `from tensorflow import keras` in utils.py) is that framework name."""
        raw = self.raw(node)
        if raw is None:
            return None
        if self.project is not None and raw.split(".", 1)[0] not in _FRAMEWORK_ROOTS:
            mapped = self._reexports.get(raw, _MISSING)
            if mapped is _MISSING:
                mapped = self._reexports[raw] = self.project.canonical(raw)
            if mapped is not None:
                raw = mapped  # type: ignore[assignment]
        return canonical(raw)

    def call_name(self, call: cst.Call) -> str | None:
        return self.qualified(call.func)

    def matches(self, node: cst.BaseExpression, names: frozenset[str] | set[str]) -> bool:
        qualified = self.qualified(node)
        return qualified is not None and qualified in names


