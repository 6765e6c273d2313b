"""ModuleFacts: the one pre-analysis of a module that every rule reads.

Built once per parse: the fast index (parents, order, nodes by type), the import
table and name resolution, variable bindings and constant values. The policy in
force and the Keras target are computed on first use. Rule families can memoise
their own analyses here with `facts.analysis(SomeAnalysis)`.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Callable, TypeVar

import libcst as cst

from mplint.analysis.bound_names import BoundNames
from mplint.analysis.index import ModuleIndex
from mplint.analysis.names import ImportTable, NameResolver
from mplint.analysis.positions import PositionFinder
from mplint.analysis.values import Bindings, ValueResolver
from mplint.facts.policy import PolicyFacts

if TYPE_CHECKING:
    from mplint.facts.backend import Backend, Evidence
    from mplint.facts.call_graph import CallGraph
    from mplint.facts.project_context import ProjectContext
from mplint.facts.target import Target, dated_target, decide_target, is_tf1_only_name
from mplint.facts.version_guards import tensorflow1_only

T = TypeVar("T")


class ModuleFacts:
    def __init__(
        self,
        module: cst.Module,
        text: str,
        path: str,
        *,
        configured_target: str = "auto",
        assumed_policy: str | None = None,
        tensor_core_multiple: int = 8,
        project: "ProjectContext | None" = None,
        project_backend: "list[Evidence] | None" = None,
        notebook: dict | None = None,
        walk: ModuleIndex | None = None,
    ) -> None:
        self.module = module
        self.text = text
        self.path = path
        self.notebook = notebook  # a notebook's parsed JSON (its outputs say what it ran on)
        self.configured_target = configured_target
        self.assumed_policy = assumed_policy
        self.tensor_core_multiple = tensor_core_multiple
        self.project = project  # what the rest of the project says about this module
        self.project_backend = project_backend  # None: read from the file's folders
        self.index = walk if walk is not None and walk.module is module else ModuleIndex(module)
        self.bindings = Bindings(self.index)
        self.imports = ImportTable(self.index.nodes(cst.Import), self.index.nodes(cst.ImportFrom))
        self.names = NameResolver(self.imports, self.bindings.module_values, self.bindings.all_values)
        self.names.project = project
        self.names.position = self.index.position_in_order  # a re-imported name is its import before the read
        self.values = ValueResolver(self.index, self.bindings, self.names)
        self.values.call_graph = lambda: self.call_graph
        self.values.project = project
        self._analyses: dict[object, object] = {}
        self._calls_by_name: dict[str, list[cst.Call]] | None = None

    # -- shared facts ---------------------------------------------------------------
    @cached_property
    def policy(self) -> PolicyFacts:
        return PolicyFacts(self)

    @cached_property
    def call_graph(self) -> "CallGraph":
        """Who runs each function of the module (call sites, entry points)."""
        from mplint.facts.call_graph import CallGraph

        return CallGraph(self)

    @cached_property
    def bound_names(self) -> BoundNames:
        """Where names are bound, in order (for fixes that insert names)."""
        return BoundNames(self.index, notebook=self.path.endswith(".ipynb"))

    @cached_property
    def positions(self) -> PositionFinder:
        """Spans (offsets) of nodes: `facts.positions.spans(nodes)`."""
        return PositionFinder(self.module, self.text, self.index)

    @cached_property
    def target(self) -> Target:
        used = set(self.calls_by_name)
        tf1_reads: dict[str, list[cst.CSTNode]] = {n: list(c) for n, c in self.calls_by_name.items() if is_tf1_only_name(n)}
        for node in self.index.nodes(cst.Attribute):
            qualified = self.names.qualified(node)
            if qualified is not None:
                used.add(qualified)
                if is_tf1_only_name(qualified):
                    tf1_reads.setdefault(qualified, []).append(node)
        # TF 1.x-only names read only under `if tf.__version__.startswith("1."):` are compatibility code
        used -= {name for name, nodes in tf1_reads.items() if all(tensorflow1_only(self, n) for n in nodes)}
        project = self.project.target() if self.project is not None else None
        era = self.project.era_target() if self.project is not None else None
        return decide_target(self.configured_target, self.text, self.imports.imported_modules, used, self.path, project,
                             notebook=self.notebook, project_era=era)

    @cached_property
    def tensorflow_target(self) -> Target:
        """The target with the TensorFlow it runs on: where nothing declares that TensorFlow,
        bounded by the day its repository last changed (`mplint.facts.file_history`). For the
        facts that depend on the TensorFlow version (an API removed in TF 2.9), not only
        on the Keras."""
        return dated_target(self.target, self.path)

    @cached_property
    def backend(self) -> "Backend":
        """The Keras 3 backend the module runs on, and why (mplint.facts.backend)."""
        from mplint.facts.backend import backend_of

        return backend_of(self, self.project_backend)

    def analysis(self, factory: Callable[["ModuleFacts"], T]) -> T:
        """A family-specific analysis, computed once per module and shared by its rules."""
        if factory not in self._analyses:
            self._analyses[factory] = factory(self)
        return self._analyses[factory]  # type: ignore[return-value]

    # -- conveniences -----------------------------------------------------------------
    def qualified(self, node: cst.BaseExpression) -> str | None:
        return self.names.qualified(node)

    @property
    def calls_by_name(self) -> dict[str, list[cst.Call]]:
        """Calls grouped by the canonical qualified name of what they call."""
        if self._calls_by_name is None:
            grouped: dict[str, list[cst.Call]] = {}
            for call in self.index.nodes(cst.Call):
                qualified = self.names.qualified(call.func)
                if qualified is not None:
                    grouped.setdefault(qualified, []).append(call)
            self._calls_by_name = grouped
        return self._calls_by_name

    def calls_to(self, *names: str | frozenset[str] | set[str]) -> list[cst.Call]:
        """Calls to any of the given canonical names, in source order."""
        wanted: set[str] = set()
        for name in names:
            wanted |= {name} if isinstance(name, str) else set(name)
        found = [c for n in wanted for c in self.calls_by_name.get(n, [])]
        found.sort(key=self.index.position_in_order)
        return found
