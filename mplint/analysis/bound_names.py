"""Whether a name is bound where code would use it (for fixes that insert names).

    bound = BoundNames(index, notebook=True)
    bound.is_bound("tf", node)               # at `node`, the way Python would look it up
    bound.is_bound("tf", stmt, after=True)   # just after the statement `stmt`

Python's rules, in source order: a name a function binds anywhere is local to it and
must be bound before the use (else UnboundLocalError); otherwise enclosing functions,
then the module. Code that runs at module level (or in a class body there) needs the
module binding *before* it; a function body runs later, so any module binding counts,
except in a notebook, where it must be in the use's cell or an earlier one (a later
cell may never have run). Builtins are always bound. A module with a star import, or a
name the module uses without binding it anywhere (a notebook cell on its own, a
snippet), is taken to be bound from outside: the code already relies on it.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import libcst as cst

from mplint.analysis.index import ModuleIndex
from mplint.inputs.notebook import SENTINEL

_BUILTINS = frozenset(dir(builtins))

# How a binding covers uses: "after" the binding node (assignments, imports, def),
# "within" it and after (for-loop and with targets), only "inside" it (comprehension
# variables), everywhere in its scope ("param"), or "from" the start of the node on (a
# statement a fix inserts before that node).
AFTER, _WITHIN, _INSIDE, _PARAM, FROM = "after", "within", "inside", "param", "from"
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass(frozen=True)
class Site:
    node: cst.CSTNode
    kind: str


class BoundNames:
    def __init__(self, index: ModuleIndex, *, notebook: bool = False) -> None:
        self.index = index
        self.notebook = notebook
        self.sites: dict[tuple[int, str], list[Site]] = {}
        # Name nodes that are binding targets (`x` of `x = ...`): their scope and site.
        self.targets: dict[int, tuple[cst.CSTNode, Site]] = {}
        self._declared_global: dict[int, set[str]] = {}
        self._bound_anywhere: set[str] = set()
        self._star_import = False
        self._cells: dict[int, int] | None = None
        self._collect()

    # -- collecting ----------------------------------------------------------------
    def _scope(self, node: cst.CSTNode) -> cst.CSTNode:
        """The function, lambda or class body a node's code runs in (else the module)."""
        return self.index.scope_of(node)

    def add(self, scope: cst.CSTNode, name: str, node: cst.CSTNode, kind: str) -> None:
        if name in self._declared_global.get(id(scope), ()):
            scope = self.index.module
        self.sites.setdefault((id(scope), name), []).append(Site(node, kind))
        self._bound_anywhere.add(name)

    def _targets(self, scope: cst.CSTNode, target: cst.CSTNode, node: cst.CSTNode, kind: str) -> None:
        if isinstance(target, cst.Name):
            self.add(scope, target.value, node, kind)
            self.targets[id(target)] = (scope, Site(node, kind))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._targets(scope, element.value, node, kind)
        elif isinstance(target, cst.StarredElement):
            self._targets(scope, target.value, node, kind)

    def _collect(self) -> None:
        index = self.index
        for kind in (cst.Global, cst.Nonlocal):
            for node in index.nodes(kind):
                function = index.enclosing(node, cst.FunctionDef)
                if function is not None and kind is cst.Global:
                    self._declared_global.setdefault(id(function), set()).update(n.name.value for n in node.names)
        for node in index.nodes(cst.Assign):
            for target in node.targets:
                self._targets(self._scope(node), target.target, node, AFTER)
        for node in index.nodes(cst.AnnAssign):
            if node.value is not None:
                self._targets(self._scope(node), node.target, node, AFTER)
        for node in index.nodes(cst.AugAssign):
            self._targets(self._scope(node), node.target, node, AFTER)
        for node in index.nodes(cst.NamedExpr):
            self._targets(self._scope(node), node.target, node, AFTER)
        for node in index.nodes(cst.For):
            self._targets(self._scope(node), node.target, node, _WITHIN)
        for node in index.nodes(cst.With):
            for item in node.items:
                if item.asname is not None:
                    self._targets(self._scope(node), item.asname.name, node, _WITHIN)
        for node in index.nodes(cst.ExceptHandler):
            if node.name is not None:
                self._targets(self._scope(node), node.name.name, node, _WITHIN)
        for kind in _COMPREHENSIONS:
            for node in index.nodes(kind):
                comp: cst.CompFor | None = node.for_in
                while comp is not None:
                    self._targets(self._scope(node), comp.target, node, _INSIDE)
                    comp = comp.inner_for_in
        for node in (*index.nodes(cst.FunctionDef), *index.nodes(cst.ClassDef)):
            self.add(self._scope(node), node.name.value, node, AFTER)
        for function in (*index.nodes(cst.FunctionDef), *index.nodes(cst.Lambda)):
            params = function.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                self.add(function, param.name.value, function, _PARAM)
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    self.add(function, star.name.value, function, _PARAM)
        for node in (*index.nodes(cst.Import), *index.nodes(cst.ImportFrom)):
            if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
                self._star_import = True
                continue
            for alias in node.names:  # type: ignore[union-attr]
                self.add(self._scope(node), bound_by_alias(alias, isinstance(node, cst.Import)), node, AFTER)

    # -- queries -------------------------------------------------------------------
    def is_bound(self, name: str, at: cst.CSTNode, *, after: bool = False,
                 extra: list[tuple[cst.CSTNode, str, Site]] | None = None) -> bool:
        """Whether `name` is bound when the code at `at` runs (with `after`: just after
        the statement `at`). `extra`: bindings a fix adds, as (scope, name, site)."""
        if name in _BUILTINS:
            return True
        index = self.index
        scope = self._scope(at) if at is not index.module else index.module
        runs_now = True  # the use runs when this scope's code runs (not later, in a call)
        while True:
            sites = self._sites(scope, name, extra)
            if scope is index.module:
                if not sites:
                    break
                if runs_now:
                    return any(self._covers(site, at, after) for site in sites)
                if self.notebook:
                    cell = self._cell_of(at)
                    return any(self._cell_of(site.node) <= cell for site in sites)
                return True
            if isinstance(scope, cst.ClassDef):
                if sites and runs_now and any(self._covers(site, at, after) for site in sites):
                    return True
            elif name in self._declared_global.get(id(scope), ()):
                scope = index.module
                runs_now = False
                continue
            elif sites:
                if runs_now:
                    return any(self._covers(site, at, after) for site in sites)
                return True
            else:
                runs_now = False
            scope = self._scope(scope)
        if self._star_import:
            return True
        return name not in self._bound_anywhere and self._used_without_binding(name, at)

    def from_outside(self, name: str, at: cst.CSTNode) -> bool:
        """Whether `name` at `at` can only come from outside the module (never bound
        here, or bound only later in a notebook): what the code already relies on."""
        return name not in _BUILTINS and (name not in self._bound_anywhere or not self.is_bound(name, at))

    def _sites(self, scope: cst.CSTNode, name: str, extra: list[tuple[cst.CSTNode, str, Site]] | None) -> list[Site]:
        found = self.sites.get((id(scope), name), [])
        if extra:
            found = found + [site for s, n, site in extra if s is scope and n == name]
        return found

    def _covers(self, site: Site, at: cst.CSTNode, after: bool) -> bool:
        index = self.index
        if site.kind == _PARAM:
            return True
        if site.kind == _INSIDE:
            return index.contains(site.node, at) and site.node is not at
        if site.kind == FROM:
            return index.contains(site.node, at) or index.before(site.node, at)
        if site.node is at or index.contains(at, site.node):
            return after
        if site.kind == _WITHIN:
            return index.before(site.node, at)
        return index.before(site.node, at) and not index.contains(site.node, at)

    def _used_without_binding(self, name: str, at: cst.CSTNode) -> bool:
        """The module already uses `name` (never binding it) where `at` can see it."""
        uses = self.index.names(name)
        if not self.notebook:
            return bool(uses)
        cell = self._cell_of(at)
        return any(self._cell_of(use) <= cell for use in uses)

    def _cell_of(self, node: cst.CSTNode) -> int:
        """The notebook cell (as numbered by its sentinel line) a node is in."""
        if self._cells is None:
            cells: dict[int, int] = {}
            module = self.index.module
            current = _last_cell(module.header, 0)
            for statement in module.body:
                current = _last_cell(statement.leading_lines, current)
                cells[id(statement)] = current
            self._cells = cells
        top = self.index.top_level_statement(node) if node is not self.index.module else None
        return self._cells.get(id(top), 0) if top is not None else 0


def names_a_variable(index: ModuleIndex, name: cst.Name) -> bool:
    """Whether a Name node stands for a variable (bound or read), not for an attribute,
    a keyword, a parameter, a function, a class or an imported module's name."""
    parent = index.parent_of(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return False
    if isinstance(parent, cst.Arg) and parent.keyword is name:
        return False
    return not isinstance(parent, (cst.Param, cst.ImportAlias, cst.FunctionDef, cst.ClassDef))


def bound_by_alias(alias: cst.ImportAlias, plain_import: bool) -> str:
    """The local name an import alias binds (`import a.b` binds `a`)."""
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    name = alias.name
    if plain_import:
        while isinstance(name, cst.Attribute):
            name = name.value
    return name.value if isinstance(name, cst.Name) else name.attr.value  # type: ignore[union-attr]


def _last_cell(lines, current: int) -> int:
    for line in lines:
        comment = line.comment.value if line.comment is not None else ""
        if comment.startswith(SENTINEL):
            number = comment[len(SENTINEL):].strip()
            if number.isdigit():
                current = int(number)
    return current
