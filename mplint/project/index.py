"""The project index: cross-file facts, so a file checked alone is judged like the project.

    index = ProjectIndex.for_path("src/pkg/model.py")   # the project holding a file
    context = index.context_for(path)                   # what the facts of that file ask

Three layers, each computed only when needed and kept on disk (`mplint.project.store`):

1. *scans* (`mplint.project.scan`): a text look at every file of the project: imports,
   top-level definitions, policy settings, Keras-target tokens. They give the import
   graph and the modules that matter for policies: those that set one (tests aside) and
   those that import them (they may call them), `policy_modules`.
2. *tables* (`mplint.project.module_table`, Python's `ast`): what a module defines:
   imports (re-exports are followed through them), functions and their parameters,
   constants, absl flags. Read for the modules another module looks into.
3. *summaries* (`mplint.facts.summary`, libcst and the module's own facts): where a
   module runs other modules' functions, under which policy, with which arguments. Built
   for the policy modules and for the callers of a function whose arguments are asked for.

The policy entries of every function are solved once for the whole project
(`mplint.facts.entries.solve` over the policy modules' flows), so the answer for a file
does not depend on which files are being checked. Test modules set policies for
themselves only: their calls are not followed into the modules they test. Files that do
not parse are skipped (they are reported only when checked); symlink loops and
unreadable folders are noted (`notes`).
"""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mplint.facts.entries import ENTRY, External, deciding_guard, module_entry, solve, substitute
from mplint.facts.project_context import ConfigValue, ExternalOptimizer, ExternalValue
from mplint.project.layout import module_name, project_files, project_root, relative_to
from mplint.project.scan import FileScan, calls_a_trainer, code_only, scan_text
from mplint.project.store import Store
from mplint.project.version_flags import evaluate_version_function

if TYPE_CHECKING:
    from mplint.facts.target import Target

_INDEXES: dict[tuple[str, bool], "ProjectIndex"] = {}  # per process: (root, cache) -> index
MAX_PASSES = 8  # of the policy-module fixed point (two or three in practice)
MAX_VARIANTS = 3  # summaries stored per module, for the sets of policy modules met
_UNSET = object()


class ProjectIndex:
    def __init__(self, root: str, *, cache: bool = True, assumed_for: Callable[[str], str | None] | None = None,
                 overlay: dict[str, str] | None = None) -> None:
        self.root = root
        self.store = Store(root, cache)
        files = project_files(root)
        self.notes: list[str] = list(files.notes)
        self.paths = files.paths
        self.path_of: dict[str, str] = {}
        self.module_of: dict[str, str] = {}
        self.packages: set[str] = set()
        for path in self.paths:
            name = module_name(root, path)
            if name is None:
                continue
            self.module_of[path] = name
            if name not in self.path_of or self.path_of[name].endswith(".ipynb"):
                self.path_of[name] = path
            if path.endswith("__init__.py"):
                self.packages.add(name)
        self.assumed_for = assumed_for or (lambda path: None)
        self._assumed_answers: dict[str, str | None] = {}  # what `assumed` answered (see `serves`)
        self.cwd = os.getcwd()  # messages name files relative to it
        self.current = False  # a resident process refreshed it for the command about to run (`serves`)
        self._overlay: dict[str, str] = dict(overlay or {})
        self._scans: dict[str, FileScan] = {}
        self._texts: dict[str, str | None] = {}  # files read by this index
        self._tables: dict[str, dict | None] = {}
        self._summaries: dict[str, dict | None] = {}
        self._summary_deps: dict[str, dict] = {}  # what each summary in _summaries was built from
        self._flows: dict[str, tuple[object, Any]] = {}  # module -> (its summary's flow JSON, the flow read from it)
        self._building: set[str] = set()
        self._importers: dict[str, set[str]] | None = None
        self._folders: set[str] | None = None
        self._imports: dict[str, set[str]] = {}
        self._configured: set[str] | None = None  # see `configured_modules`
        self._set_once: dict[tuple[str, str], bool] = {}  # see `_attribute_set_once`
        self._configured_from: tuple[str, ...] = ()  # the `_target_` names it was built from
        self._configuration_files: list[str] | None = None  # see `configured_values`
        self._configured_values: dict[str, list] = {}
        self._resolved: dict[tuple[str, str], str | None] = {}
        self._definitions: dict[str, tuple[str, str, str] | None] = {}
        self._script_imports: dict[tuple[str, str], str] = {}  # see `_from_script_folder`
        self._policy_modules: set[str] | None = None
        self._mentions_cache: dict[str, bool] | None = None  # see `_mentions`
        self._trainers: dict[str, str | None] = {}  # see `trainer_of`
        self._tensorflow1_importers: dict[str, str | None] = {}  # see `imported_only_on_tensorflow1`
        self._training: dict[str, bool] = {}  # see `_trains`
        self._layer_builders: dict[str, bool] = {}  # see `_builds_layers_in_functions`
        self._float16_paths: tuple[set[str], set[str]] | None = None  # see `float16_policy_on_path`
        self._solution: tuple[dict, dict] | None = None
        self._externals: dict[str, External | None] = {}
        self._called_cache: tuple[tuple[str, ...], frozenset | None] | None = None
        # Per module: the project functions it calls that choose among several policies,
        # float32 included, by their argument (their mixed policy is not a project fact).
        self._selectors: dict[str, tuple[list[str], frozenset[str]]] = {}
        self._carriers: dict[str, set[str]] = {}
        self._target: object = _UNSET
        self._era_target: object = _UNSET
        self._key_stats: dict[str, tuple[int, int] | None] = {}  # see `_key_stat`
        self._key_parts: dict[str, str] = {}  # see `_key_part`

    @classmethod
    def for_path(cls, path: str, *, cache: bool = True, assumed_for: Callable[[str], str | None] | None = None,
                 fresh: bool = False) -> "ProjectIndex":
        """The index of the project holding `path` (one per project and process; `fresh`
        builds it again, as a new run does, instead of reusing this process's)."""
        root = project_root(os.path.dirname(os.path.abspath(path)))
        key = (root, cache)
        index = _INDEXES.get(key)
        if index is None or (fresh and not index.serves(assumed_for)):
            index = _INDEXES[key] = cls(root, cache=cache, assumed_for=assumed_for)
        elif assumed_for is not None:
            index.assumed_for = assumed_for
        return index

    # -- kept warm between commands (mplint.project.resident) ------------------------------
    def assumed(self, path: str) -> str | None:
        """The policy the configuration assumes for `path` (recorded: see `serves`)."""
        answer = self._assumed_answers[path] = self.assumed_for(path)
        return answer

    def serves(self, assumed_for: Callable[[str], str | None] | None) -> bool:
        """Whether this index, refreshed by a resident process for the command now
        running, stands for a fresh one: same working folder (messages name files
        relative to it) and the same assumed policies wherever it asked for one."""
        if not self.current or self.cwd != os.getcwd():
            return False
        ask = assumed_for or (lambda path: None)
        return all(ask(path) == answer for path, answer in self._assumed_answers.items())

    def refresh(self) -> list[str] | None:
        """Bring the index up to date with the files on disk, as a fresh index would see
        them: a file whose size or time changed is read, and if its content (hash)
        changed, what was derived from it is dropped (`set_text`). Returns the files
        that changed; None when files were added or removed (the caller builds a new
        index)."""
        self._key_stats.clear()
        self._key_parts.clear()
        self._configuration_files = None  # read again for each command: a user edits them between runs
        self._configured_values.clear()
        if project_files(self.root).paths != self.paths or self._overlay:
            return None
        if self._configured is not None:
            from mplint.project.config_targets import configured_targets

            if configured_targets(self.root) != self._configured_from:
                return None  # the configs name other classes: the import graph changed
        changed = []
        for path in self.paths:
            relpath = self._relpath(path)
            entry = self.store.entries.get(relpath)
            if entry is None:
                continue  # nothing was derived from it yet
            stat = self._stat(path)
            if stat is not None and self.store.entry(relpath, stat) is not None:
                continue
            data = self._read(path) if stat is not None else None
            if data is not None and self.store.fresh(relpath, stat, data) is entry:
                continue  # touched, same content: the store kept the entry and took the new time
            changed.append(path)
        for path in changed:
            self.set_text(path, None)
        return changed

    # -- reading files -------------------------------------------------------------------
    def set_text(self, path: str, text: str | None) -> None:
        """An editor's buffer for `path` (None: back to the file on disk). What was
        derived from the file is recomputed; the project-wide policy solution too when
        the edit can change it (the file's imports, the policies it sets, a module of
        the solution)."""
        path = os.path.abspath(path)
        if text is not None and self._overlay.get(path) == text:
            return
        previous = self._overlay.get(path, self._texts.get(path))  # the text it replaces, if kept
        if text is None:
            self._overlay.pop(path, None)
        else:
            self._overlay[path] = text
        module = self.module_of.get(path)
        if module is None and path.endswith((".py", ".ipynb")) and path.startswith(self.root + os.sep):
            module = module_name(self.root, path)
            if module is not None:
                self.paths.append(path)
                self.module_of[path] = module
                self.path_of.setdefault(module, path)
                if path.endswith("__init__.py"):
                    self.packages.add(module)
        self._texts.pop(path, None)
        self._key_stats.clear()
        self._key_parts.clear()
        old = self._scans.pop(path, None)
        new = self.scan(path)
        self._resolved.clear()
        self._definitions.clear()
        self._script_imports.clear()
        self._externals.clear()
        self._called_cache = None
        self._target = _UNSET
        self._era_target = _UNSET
        self._mentions_cache = None
        self._trainers.clear()
        self._set_once.clear()
        self._tensorflow1_importers.clear()
        self._training.pop(module, None)
        self._layer_builders.pop(module, None)
        self._float16_paths = None
        if module is None:
            return
        old_table = self._tables.pop(module, _UNSET)
        old_summary = self._summaries.pop(module, None)
        in_solution = self._solution is not None and module in self._solution[0]
        structural = old is None or old.imports != new.imports or old.sets_policy != new.sets_policy
        if in_solution and not structural and old_table is _UNSET and previous is not None:
            from mplint.project.module_table import build_table

            old_table = build_table(previous) if not path.endswith(".ipynb") else None
        if in_solution and not structural and old_table is not _UNSET \
                and self._runs_as_before(module, old_table, old_summary):
            in_solution = False  # an edit that changes neither what it defines nor its flow
        read = self._constants_the_solution_read() if not (structural or in_solution) else []
        if read:
            # a summary of the solution read another module's constant (`configs.precision`):
            # this edit may change it (the value, or code that sets the attribute again)
            if old_table is _UNSET and previous is not None and not path.endswith(".ipynb"):
                from mplint.project.module_table import build_table

                old_table = build_table(previous)
            new_table = self.table(module)
            structural = old_table is _UNSET or any(
                _constant_facts(old_table, name, module, self.locate) != _constant_facts(new_table, name, module, self.locate)
                for name in read)
        if structural or in_solution:
            self._summaries.clear()
            self._importers = None
            self._folders = None
            self._imports.clear()
            self._policy_modules = None
            self._solution = None
            self._selectors.clear()
            self._carriers.clear()
        else:
            for importer in self.importers_of(module):
                self._summaries.pop(importer, None)

    def _constants_the_solution_read(self) -> list[str]:
        """The other modules' constants the summaries of the policy solution read (their
        deps list `constants`)."""
        if self._solution is None:
            return []
        return sorted({name for m in self._solution[0] for name in self._summary_deps.get(m, {}).get("constants", ())})

    def _runs_as_before(self, module: str, old_table: dict | None, old_summary: dict | None) -> bool:
        """Whether an edited module of the policy solution still defines what it did (its
        table) and runs what it did under the same policies (its summary's flow): then
        the solution, built from that flow, stands, and nothing else is summarised again."""
        if old_table is None or old_summary is None or self.table(module) != old_table:
            return False
        new_summary = self.summary(module)
        return new_summary is not None and new_summary["flow"] == old_summary["flow"]

    def _key_stat(self, path: str) -> tuple[int, int] | None:
        """A file's stat for cache keys, once per run (a module is related to many files:
        a whole-tree run asked again for each); forgotten on any edit or refresh."""
        if path not in self._key_stats:
            self._key_stats[path] = self._stat(path)
        return self._key_stats[path]

    def _relpath(self, path: str) -> str:
        return relative_to(self.root, path)

    def _stat(self, path: str) -> tuple[int, int] | None:
        try:
            info = os.stat(path)
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def _entry(self, path: str) -> tuple[dict[str, Any], str | None]:
        """(the store entry of a file, its text if it had to be read now)."""
        if path in self._overlay:
            return {}, self._overlay[path]
        stat = self._stat(path)
        relpath = self._relpath(path)
        if stat is not None:
            entry = self.store.entry(relpath, stat)
            if entry is not None:
                return entry, None
        data = self._read(path)
        if data is None:
            return {}, None
        entry = self.store.fresh(relpath, stat or (0, 0), data)
        text = self._decode(path, data)
        if len(data) < 262_144:  # kept for the table and summary that may follow
            self._texts[path] = text
        return entry, text

    def _read(self, path: str) -> bytes | None:
        from mplint.inputs.source import read_bytes

        try:
            return read_bytes(path)
        except Exception:  # unreadable, too large, a folder: no facts from it
            return None

    def _decode(self, path: str, data: bytes) -> str | None:
        from mplint.inputs.documents import load_document
        from mplint.inputs.source import SourceError

        try:
            return load_document(path, data).text
        except (SourceError, UnicodeDecodeError, ValueError):
            return None

    def text(self, path: str) -> str | None:
        """The file's text (an editor's buffer first); read once per index."""
        if path in self._overlay:
            return self._overlay[path]
        if path not in self._texts:
            data = self._read(path)
            self._texts[path] = self._decode(path, data) if data is not None else None
        return self._texts[path]

    def scan(self, path: str) -> FileScan:
        found = self._scans.get(path)
        if found is None:
            entry, text = self._entry(path)
            if "scan" in entry and text is None:
                found = FileScan.from_json(entry["scan"])
            else:
                if text is None and entry:
                    text = self.text(path)
                found = scan_text(text or "", path)
                if entry is not None and path not in self._overlay:
                    entry["scan"] = found.to_json()
                    self.store.touched()
            self._scans[path] = found
        return found

    def table(self, module: str) -> dict | None:
        """What a module defines (imports, functions, constants, flags); None if it does
        not parse."""
        if module in self._tables:
            return self._tables[module]
        from mplint.project.module_table import build_table

        path = self.path_of.get(module)
        table = None
        if path is not None:
            entry, text = self._entry(path)
            if "table" in entry and text is None:
                table = entry["table"]
            else:
                if text is None:
                    text = self.text(path)
                table = build_table(text) if text is not None and not path.endswith(".ipynb") else None
                if path not in self._overlay:
                    entry["table"] = table
                    self.store.touched()
        self._tables[module] = table
        return table

    # -- the import graph -------------------------------------------------------------------
    def imports_of(self, module: str) -> set[str]:
        """The project modules a module imports (directly)."""
        found = self._imports.get(module)
        if found is None:
            found = set()
            path = self.path_of.get(module)
            if path is not None:
                scan = self.scan(path)
                for level, name, names in scan.imports:
                    found |= self._statement_targets(module, level, name, names) - {module}
                if scan.instantiates_configs:
                    found |= self.configured_modules() - {module}
            self._imports[module] = found
        return found

    def configured_modules(self) -> set[str]:
        """The project modules whose classes its Hydra configs name as `_target_`
        (`mplint.project.config_targets`): a module that calls `instantiate` uses them."""
        if self._configured is None:
            from mplint.project.config_targets import configured_targets

            self._configured = set()
            self._configured_from = configured_targets(self.root)
            for dotted in self._configured_from:
                parts = dotted.split(".")
                for spelled in (parts, parts[1:] if parts[0] == "src" else None):
                    while spelled:
                        name = ".".join(spelled)
                        if name in self.path_of:
                            self._configured.add(name)
                            break
                        spelled = spelled[:-1]
        return self._configured

    def importers_of(self, module: str) -> set[str]:
        if self._importers is None:
            graph: dict[str, set[str]] = {}
            for name in self.path_of:
                for imported in self.imports_of(name):
                    graph.setdefault(imported, set()).add(name)
            self._importers = graph
        return self._importers.get(module, set())

    def trainer_of(self, module: str) -> str | None:
        """The nearest module (not a test) that imports `module`, directly or through
        others, and trains something; None where none does."""
        if module in self._trainers:
            return self._trainers[module]
        self._trainers[module] = found = self._find_trainer(module)
        return found

    def _trains(self, module: str) -> bool:
        """Whether the module's code calls something that trains: its scan's text match,
        confirmed by a parse (once per module until it changes)."""
        found = self._training.get(module)
        if found is None:
            path = self.path_of[module]
            found = self.scan(path).training_call and calls_a_trainer(self.text(path) or "")
            self._training[module] = found
        return found

    def may_build_layers_later(self, module: str) -> bool:
        """Whether code that can run after `module`'s import-time code may build a Keras
        layer or model: a module (not a test) that imports it runs after it, and a
        function of a module it imports (directly or through others) may be called after
        it (`mplint.project.layer_builders`; module-level code there ran at import)."""
        if any(not self.is_test(m) for m in self.importers_of(module)):
            return True
        own = frozenset(name.split(".")[0] for name in self.path_of)  # the project's top-level names
        return any(self._builds_layers_in_functions(name, own) for name in sorted(self._imported_by({module})))

    def _builds_layers_in_functions(self, module: str, own: frozenset[str]) -> bool:
        found = self._layer_builders.get(module)
        if found is None:
            from mplint.project.layer_builders import builds_layers_in_functions

            path = self.path_of.get(module)
            text = self.text(path) if path is not None else None
            found = text is None or builds_layers_in_functions(text, own)
            self._layer_builders[module] = found
        return found

    def float16_policy_on_path(self, module: str) -> bool | None:
        """Whether a module that uses `module` (imports it, directly or through others)
        names a float16 Keras policy, or imports a module that does (a test helper that
        runs every layer under mixed_float16); None where no module of the project but
        tests uses it (its users are outside the project)."""
        if self._float16_paths is None:
            self._float16_paths = self._reached_from_float16_policies()
        reached, used = self._float16_paths
        return True if module in reached else False if module in used else None

    def _reached_from_float16_policies(self) -> tuple[set[str], set[str]]:
        """(the modules some module that names a float16 policy, or imports one that does,
        imports directly or through others; the modules some program of the project,
        tests aside, imports directly or through others): two walks over the import
        graph for the whole project, not one per module."""
        names = {m for m in self.path_of if self.scan(self.path_of[m]).float16_policy}
        sources = names | {m for m in self.path_of if self.imports_of(m) & names}
        return self._imported_by(sources), self._imported_by({m for m in self.path_of if not self.is_test(m)})

    def _sharing_objects_with(self, module: str) -> set[str]:
        """The modules that can reach `module`'s objects: those that import it, directly or
        through others, and the modules these import (they may be handed the object)."""
        importers: set[str] = set()
        frontier = [module]
        while frontier:
            for importer in self.importers_of(frontier.pop()):
                if importer not in importers:
                    importers.add(importer)
                    frontier.append(importer)
        return importers | self._imported_by(importers | {module})

    def _imported_by(self, sources: set[str]) -> set[str]:
        """The modules `sources` import, directly or through others (one step at least)."""
        reached: set[str] = set()
        frontier = [imported for source in sources for imported in self.imports_of(source)]
        while frontier:
            name = frontier.pop()
            if name not in reached:
                reached.add(name)
                frontier.extend(self.imports_of(name))
        return reached

    def _find_trainer(self, module: str) -> str | None:
        seen = {module}
        frontier = sorted(self.importers_of(module))
        while frontier:
            following: list[str] = []
            for name in frontier:
                if name in seen:
                    continue
                seen.add(name)
                if self.is_test(name):
                    continue
                if self._trains(name):
                    return name
                following.extend(sorted(self.importers_of(name)))
            frontier = following
        return None

    def _absolute_module(self, module: str, level: int, name: str) -> str | None:
        if level == 0:
            return self._from_script_folder(module, name)
        parts = module.split(".")
        if module not in self.packages:
            parts = parts[:-1]
        if level - 1 > len(parts):
            return None
        base = parts[: len(parts) - (level - 1)]
        return ".".join([*base, name] if name else base)

    def is_test(self, module: str) -> bool:
        path = self.path_of.get(module)
        return path is None or self.scan(path).test

    # -- names ---------------------------------------------------------------------------------
    def _from_script_folder(self, module: str, name: str) -> str:
        """An absolute import as the project means it: `import resnet_model` in a script
        next to resnet_model.py (Python puts a script's folder first on sys.path) is that
        sibling when no top-level module of the project has the name; failing that, the
        module of that name under the nearest folder above (`from albert.run_squad
        import ...` in models/nlp/albert/run_pretraining.py, run with models/nlp on the
        path, is models.nlp.albert.run_squad)."""
        first = name.partition(".")[0]
        if first == "src" and "." in name and first not in self.path_of:
            # `from src.utils import x` in a src layout: module names leave `src/` out
            rest = name[4:]
            if rest.partition(".")[0] in self._module_folders() or rest.partition(".")[0] in self.path_of:
                return rest
        if not name or first in self.path_of or "." not in module:
            return name
        key = (module, name)
        found = self._script_imports.get(key)
        if found is None:
            found = self._script_imports[key] = self._from_a_folder(module, name, first)
        return found

    def _from_a_folder(self, module: str, name: str, first: str) -> str:
        sibling = f"{module if module in self.packages else module.rpartition('.')[0]}.{name}"
        if f"{sibling[: len(sibling) - len(name)]}{first}" in self.path_of:
            return sibling
        folders = self._module_folders()
        folder = module.rpartition(".")[0]
        while folder:
            candidate = f"{folder}.{name}"
            if candidate in self.path_of or candidate in folders:
                return candidate
            folder = folder.rpartition(".")[0]
        return name

    def _module_folders(self) -> set[str]:
        """Every folder that holds modules (packages or not), as dotted names."""
        if self._folders is None:
            self._folders = {m.rsplit(".", i)[0] for m in self.path_of for i in range(1, m.count(".") + 1)}
        return self._folders

    def absolute(self, module: str, raw: str) -> str | None:
        """A name as `module` imports it, with relative imports made absolute (and
        script-folder imports resolved to the sibling module)."""
        if not raw.startswith("."):
            return self._from_script_folder(module, raw)
        level = len(raw) - len(raw.lstrip("."))
        return self._absolute_module(module, level, raw[level:])

    def locate(self, name: str) -> tuple[str, str] | None:
        """(project module, the rest) for the longest module prefix of a dotted name."""
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            candidate = ".".join(parts[:cut])
            if candidate in self.path_of:
                return candidate, ".".join(parts[cut:])
        return None

    def resolve(self, module: str, raw: str, depth: int = 0) -> str | None:
        """The project function, class or constant a name imported by `module` means
        (`module:rest` form as a dotted name), following re-exports; None if it is not
        the project's."""
        key = (module, raw)
        if key in self._resolved:
            return self._resolved[key]
        self._resolved[key] = None  # cycles
        found = self._resolve(module, raw, depth)
        self._resolved[key] = found
        return found

    def _resolve(self, module: str, raw: str, depth: int) -> str | None:
        name = self.absolute(module, raw)
        if name is None or depth > 8:
            return None
        located = self.locate(name)
        if located is None:
            return None
        owner, rest = located
        if not rest:
            return None  # a module, not a definition
        table = self.table(owner)
        if table is None:
            return None
        head, _, tail = rest.partition(".")
        if head in table["definitions"] or rest in table["constants"] or head in table["constants"] \
                or rest in table.get("attribute_constants", ()):
            return name
        target = table["imports"].get(head)
        if target is not None:
            return self.resolve(owner, target + (f".{tail}" if tail else ""), depth + 1)
        return None

    def canonical(self, module: str, raw: str, depth: int = 0) -> str | None:
        """The framework name a project name re-exports (`pkg.utils.keras.layers` ->
        `tensorflow.keras.layers` when pkg/utils.py does `from tensorflow import keras`)."""
        name = self.absolute(module, raw)
        if name is None or depth > 8:
            return None
        located = self.locate(name)
        if located is None:
            return None if raw.startswith(".") else None
        owner, rest = located
        table = self.table(owner) if rest else None
        if table is None:
            return None
        head, _, tail = rest.partition(".")
        target = table["imports"].get(head)
        if target is None:
            return None
        target_name = self.absolute(owner, target)
        if target_name is None:
            return None
        full = target_name + (f".{tail}" if tail else "")
        if self.locate(full) is None:
            return full  # left the project: a framework (or other library) name
        return self.canonical(owner, full, depth + 1)

    # -- policies ---------------------------------------------------------------------------
    @property
    def policy_modules(self) -> set[str]:
        """The modules (tests aside) whose code can change the global policy: those that
        set one, and, upwards, the importers that call their policy-changing functions
        (or import a module that sets it at import time). Only their calls can carry a
        policy into other modules.

        Computed in passes to a fixed point: each pass judges the flows against the set
        the last pass found (a summary depends on which imported modules are policy
        modules), until a pass finds that set again. The answer is the same whatever
        the project store holds: stored summaries are used only where they hold against
        the set of the pass (the store keeps a few variants of each, `MAX_VARIANTS`)."""
        if self._policy_modules is None:
            seeds = sorted(m for m, p in self.path_of.items() if not self.scan(p).test and self.scan(p).sets_policy)
            known = set(seeds)
            for attempt in range(MAX_PASSES):
                self._policy_modules = known  # what `import_effect`/`exit_of` judge by in this pass
                found = self._grow(seeds)
                if found == known:
                    break
                # The last passes take the union: the loop ends even if a pass drops a module.
                known = found if attempt < MAX_PASSES - 2 else found | known
                self._drop_stale_summaries()
            self._drop_stale_summaries()
        return self._policy_modules

    def _grow(self, seeds: list[str]) -> set[str]:
        """One pass: the seeds and, upwards, their importers that call what changes the policy."""
        found = set(seeds)
        queue = list(seeds)
        while queue:
            module = queue.pop(0)
            importers = [i for i in sorted(self.importers_of(module)) if i not in found and not self.is_test(i)]
            if not importers:
                continue  # nobody to carry its policy to: its summary is not needed here
            flow = self._flow(module)
            if flow is None:
                continue
            names = {key.split(".")[0].split("#")[0] for key, f in flow.functions.items() if f.effect != frozenset({ENTRY})}
            at_import = flow.exit != frozenset({ENTRY})
            if not names and not at_import:
                continue
            for importer in importers:
                text = self.text(self.path_of[importer]) or ""
                if at_import or any(name in text for name in names):
                    found.add(importer)
                    queue.append(importer)
        return found

    def _drop_stale_summaries(self) -> None:
        """Summaries built in an earlier pass of `policy_modules` saw a smaller set (an
        import of a module found later had no effect yet): drop those whose inputs changed,
        until none do (each rebuild can change what others were built from)."""
        changed = True
        while changed:
            changed = False
            for module in sorted(self._summaries):
                deps = self._summary_deps.get(module)
                if module in self._summaries and deps is not None and not self._deps_hold(module, deps):
                    self._summaries.pop(module, None)
                    self._summary_deps.pop(module, None)
                    changed = True

    def summary(self, module: str) -> dict | None:
        """Where a module runs other modules' code (libcst; None if it does not parse).

        Built after the summaries it relies on (the policy modules it imports, whose
        effects its flow applies), with an explicit stack: import chains can be deep."""
        if module in self._summaries:
            return self._summaries[module]
        if module in self._building:
            return None  # an import cycle: no facts from the half-built module
        stack = [module]
        while stack:
            current = stack[-1]
            if current in self._summaries:
                stack.pop()
                continue
            if current not in self._building:
                self._building.add(current)
                needed = [
                    m for m in sorted(self.imports_of(current))
                    if m in (self._policy_modules or ()) and m not in self._summaries and m not in self._building
                ]
                if needed:
                    stack.extend(needed)
                    continue
            stack.pop()
            path = self.path_of.get(current)
            try:
                self._summaries[current] = self._stored_summary(current, path) if path is not None else None
            finally:
                self._building.discard(current)
        return self._summaries[module]

    def _stored_summary(self, module: str, path: str) -> dict | None:
        """The module's summary: a stored variant that holds against the project as it is
        now (what it relied on in other modules is unchanged), else built and stored."""
        from mplint.facts.summary import SUMMARY_VERSION

        entry, text = self._entry(path)
        variants = [v for v in entry.get("summaries") or () if isinstance(v, dict) and v.get("version") == SUMMARY_VERSION]
        for stored in variants:  # an entry holds variants only for the file's current content
            if self._deps_hold(module, stored.get("deps", {})):
                self._summary_deps[module] = stored.get("deps", {})
                return stored.get("data")
        if text is None:
            text = self.text(path)
        if text is None:
            return None
        built = self._build_summary(module, path, text)
        data, deps = built if built else (None, {})
        self._summary_deps[module] = deps
        if path not in self._overlay:
            entry["summaries"] = [*variants, {"version": SUMMARY_VERSION, "data": data, "deps": deps}][-MAX_VARIANTS:]
            self.store.touched()
        return data

    def _build_summary(self, module: str, path: str, text: str) -> tuple[dict, dict] | None:
        from mplint.facts.module import ModuleFacts
        from mplint.facts.summary import build_summary
        from mplint.core.gc_pause import paused_gc
        from mplint.analysis import parsed_once
        from mplint.inputs.parsing import parse

        try:
            tree = parse(text)  # the chunked parse the engine uses (it re-uses the chunks)
        except Exception:  # does not parse: no facts (reported only when checked)
            return None
        context = ModuleContext(self, module, record=True)
        try:
            with paused_gc():  # see mplint.core.gc_pause
                facts = ModuleFacts(tree, text, path, assumed_policy=self.assumed(path), project=context)
                if path not in self._overlay:
                    parsed_once.keep(path, text, tree, facts.index)  # the engine checks it next: no second parse
                return build_summary(facts), context.deps
        except (RecursionError, MemoryError) as exc:
            self.notes.append(f"{os.path.relpath(path)}: no project facts read from it ({type(exc).__name__})")
            return None

    def _deps_hold(self, module: str, deps: dict) -> bool:
        for raw, name in deps.get("resolved", {}).items():
            if self.resolve(module, raw) != name:
                return False
        for name, value in deps.get("constants", {}).items():
            if _constant_dep(self.constant(name)) != value:
                return False
        for callee, effect in deps.get("exits", {}).items():
            if callee.startswith("import "):
                found = self.import_effect(module, callee[len("import "):])
            elif callee.startswith("guards "):
                if [list(g) for g in self.guards_of(callee[len("guards "):])] != effect:
                    return False
                continue
            elif callee.startswith("when "):
                _, param, truth, name = callee.split(" ", 3)
                found = self.exit_of(name, (param, truth == "1"))
            else:
                found = self.exit_of(callee)
            if (sorted(found) if found is not None else None) != effect:
                return False
        return True

    def _flow(self, module: str):
        """The module's policy flow, read from its summary once per summary (the solution
        and each module's premises ask again; a new summary is a new object)."""
        from mplint.facts.summary import flow_from_json

        summary = self.summary(module)
        if summary is None:
            return None
        kept = self._flows.get(module)
        if kept is not None and kept[0] is summary["flow"]:
            return kept[1]
        flow = flow_from_json(summary["flow"])
        self._flows[module] = (summary["flow"], flow)
        return flow

    def definition(self, name: str) -> tuple[str, str, str] | None:
        """(module, key, "function" or "class") of a resolved project name (once per name
        until an edit: the solver asks for every call of every flow)."""
        if name not in self._definitions:
            self._definitions[name] = self._definition(name)
        return self._definitions[name]

    def _definition(self, name: str) -> tuple[str, str, str] | None:
        located = self.locate(name)
        if located is None:
            return None
        module, rest = located
        table = self.table(module)
        if table is None or not rest:
            return None
        if rest in table["functions"]:
            return module, rest, "function"
        if "." not in rest and table["definitions"].get(rest) == "class":
            return module, rest, "class"
        return None

    def import_effect(self, module: str, raw: str) -> frozenset | None:
        """What importing a project module does to the policy: its top-level code's effect."""
        name = self.absolute(module, raw)
        if name is None or name not in self.path_of or name == module or name not in self.policy_modules:
            return None
        flow = self._flow(name)
        return flow.exit if flow is not None else None

    def exit_of(self, callee: str, when: tuple[str, bool] | None = None) -> frozenset | None:
        """The effect of calling a project function: the symbolic state at its end; with
        `when` (parameter, truth), where the call gives that parameter that truth."""
        function = self._function_flow(callee)
        if function is None:
            return None
        if when is not None and when[0] in function.conditions:
            return function.conditions[when[0]][3 if when[1] else 2]
        return function.effect

    def guards_of(self, callee: str) -> list[tuple[str, int | None, bool | None]]:
        """The parameters of a project function that guard its policy settings:
        (name, position among positional arguments, default's truth)."""
        function = self._function_flow(callee)
        if function is None:
            return []
        return sorted((param, c[0], c[1]) for param, c in function.conditions.items())

    def _function_flow(self, callee: str):
        found = self.definition(callee)
        if found is None or found[2] != "function" or found[0] not in self.policy_modules:
            return None
        flow = self._flow(found[0])
        if flow is None or found[1] not in flow.functions:
            return None
        return flow.functions[found[1]]

    def unsolved(self) -> bool:
        """Whether a module that sets a policy (tests aside) has no summary stored for
        its content: a project whose solution costs summaries to compute (a cold store)."""
        for path in self.paths:
            scan = self.scan(path)
            if scan.test or not scan.sets_policy:
                continue
            module = self.module_of.get(path)
            if module is None or not (self.imports_of(module) or any(not self.is_test(m) for m in self.importers_of(module))):
                continue  # it runs no other module and none runs it: the solution needs no summary of it
            stat = self._stat(path)
            entry = self.store.entry(self._relpath(path), stat) if stat is not None else None
            if entry is None or not entry.get("summaries"):
                return True
        return False

    def solve(self) -> None:
        """Compute the project-wide policy solution now (before worker processes fork)."""
        self._solve()

    def _solve(self) -> tuple[dict, dict]:
        """Entries of every function the project runs under a policy it sets: the
        policy modules' flows, then (until nothing new is reached) the flows of the
        modules their calls reach with a mixed policy, at any depth."""
        if self._solution is None:
            flows: dict = {}
            # A module that imports no project module calls none: its flow runs nothing
            # of the others, so it needs no summary here.
            pending = {m for m in self.policy_modules if self.imports_of(m)}
            entries: dict = {}
            starts = {}
            while pending:
                for module in sorted(pending):
                    flow = self._flow(module)
                    if flow is not None:
                        flows[module] = flow
                        starts[module] = module_entry(self.assumed(self.path_of[module]))
                entries = solve(flows, starts, callee_of=lambda _, callee: self.definition(callee),
                                called_there=self._called_in(flows))
                pending = set()
                for module, flow in flows.items():
                    for caller, callee, state in flow.outgoing:
                        target = self.definition(callee)
                        if target is None or target[0] in flows or target[0] in pending or self.is_test(target[0]) \
                                or not self.imports_of(target[0]):
                            continue
                        caller_entry = starts[module] if caller == "" else entries.get((module, caller), frozenset())
                        if any(n.startswith("mixed_") for n in substitute(state, caller_entry)):
                            pending.add(target[0])
            self._solution = (flows, entries)
        return self._solution

    def external_flow(self, module: str) -> External | None:
        """Concrete states of the places in other (policy) modules that run `module`'s
        functions or instantiate its classes."""
        if module in self._externals:
            return self._externals[module]
        flows, entries = self._solve()
        external = External(called_there=self._called_in(flows))
        for caller_module, flow in flows.items():
            if caller_module == module:
                continue
            entry = module_entry(self.assumed(self.path_of[caller_module]))
            for caller, callee, state in flow.outgoing:
                target = self.definition(callee)
                if target is None or target[0] != module:
                    continue
                caller_entry = entry if caller == "" else entries.get((caller_module, caller), frozenset())
                concrete = substitute(state, caller_entry)
                bucket = external.constructions if target[2] == "class" else external.sites
                bucket[target[1]] = bucket.get(target[1], frozenset()) | concrete
                if any(n.startswith("mixed_") for n in concrete):
                    external.carriers.add(caller_module)
            if module in self.imports_of(caller_module) and self._reads_from(caller_module, module):
                after = substitute(flow.exit, entry)
                external.after |= after
                if any(n.startswith("mixed_") for n in after):
                    external.carriers.add(caller_module)
        found = external if (external.sites or external.constructions or external.after) else None
        self._externals[module] = found
        return found

    def _called_in(self, modules) -> frozenset | None:
        """The names the code of `modules` calls; None where one of them does not parse
        (once per solution: every module's external flow asks)."""
        key = tuple(sorted(modules))
        if self._called_cache is None or self._called_cache[0] != key:
            names: set[str] | None = set()
            for module in key:
                table = self.table(module)
                if table is None:
                    names = None
                    break
                names |= set(table["called"])
            self._called_cache = (key, frozenset(names) if names is not None else None)
        return self._called_cache[1]

    def _reads_from(self, reader: str, module: str) -> bool:
        """Whether `reader` can run code of `module` after its own top level ran (so under
        the policy it leaves set): False only where every name it imports from `module`
        (`from module import name`) is never read by its code. An unused import runs
        nothing of the module later (a script that imports a class it no longer uses)."""
        table = self.table(reader)
        if table is None:
            return True
        for star in table["stars"]:  # `from x import *`: x or what x imports may be `module`
            target = self.absolute(reader, star)
            if target is None or target == module or module in self.imports_of(target):
                return True
        unread = set(table.get("unread", ()))
        matched = False
        for local, raw in table["imports"].items():
            target = self.absolute(reader, raw)
            if target is None:
                continue
            if target == module or target.startswith(module + "."):
                if local not in unread:
                    return True
                matched = True
            elif module.startswith(target + "."):
                return True  # `import package`: its attributes reach the module
        return not matched

    def _mentions(self) -> dict[str, bool]:
        """Which of the scans' mixed-precision flags some file of the project has (one
        walk over the project's scans until a file changes: every library finding's
        policy premise asks)."""
        if self._mentions_cache is None:
            flags = ("mixed_precision", "float16", "bfloat16", "graph_rewrite", "float16_policy")
            found = dict.fromkeys(flags, False)
            for path in self.paths:
                scan = self.scan(path)
                for flag in flags:
                    found[flag] = found[flag] or getattr(scan, flag)
            self._mentions_cache = found
        return self._mentions_cache

    def mentions_float16(self) -> bool:
        """False only for a project that names bfloat16 and never float16 mixed precision
        (its own mixed precision is bfloat16: float16 hazards are its users' guess)."""
        mentions = self._mentions()
        return mentions["float16"] or not mentions["bfloat16"]

    def imported_only_on_tensorflow1(self, module: str) -> str | None:
        """Where every module of the project (tests aside) that imports `module` does so
        only in a branch no TensorFlow 2 takes (`else:` of `if
        tf.__version__.startswith("2"):`), the path of one of them: the module runs on
        TF 1.x only. None otherwise, or where the module is also a script."""
        if module not in self._tensorflow1_importers:
            self._tensorflow1_importers[module] = None  # an import cycle says nothing
            self._tensorflow1_importers[module] = self._only_tensorflow1_importer(module)
        return self._tensorflow1_importers[module]

    def _only_tensorflow1_importer(self, module: str) -> str | None:
        """(An importer that itself runs on TF 1.x only imports on TF 1.x only.)"""
        importers = sorted(m for m in self.importers_of(module) if not self.is_test(m))
        if not importers or "__main__" in (self.text(self.path_of[module]) or ""):
            return None
        for importer in importers:
            if self.imported_only_on_tensorflow1(importer) is not None:
                continue
            text = self.text(self.path_of[importer]) or ""
            if "__version__" not in text and "VERSION" not in text:
                return None  # no version check there: its imports run on every TensorFlow
            table = self.table(importer)
            if table is None or "tf1_only_imports" not in table:
                return None
            statements = [tf1_only for level, name, names, tf1_only in table["tf1_only_imports"]
                          if module in self._statement_targets(importer, level, name, names)]
            if not statements or not all(statements):
                return None
        return self._relpath(self.path_of[importers[0]])

    def _statement_targets(self, importer: str, level: int, name: str, names: list[str]) -> set[str]:
        """The project modules one import statement of `importer` imports (as
        `imports_of` resolves them)."""
        base = self._absolute_module(importer, level, name)
        if base is None:
            return set()
        return {c for c in (base, *(f"{base}.{n}" if base else n for n in names)) if c in self.path_of}

    def graph_rewrite_imported(self, module: str) -> str | None:
        """The relative path of a module `module` imports whose code calls the float16
        graph rewrite (its table lists the call, not a comment or a string)."""
        for imported in sorted(self.imports_of(module)):
            path = self.path_of[imported]
            if not self.scan(path).graph_rewrite:
                continue
            table = self.table(imported)
            if table is not None and "enable_mixed_precision_graph_rewrite" in table["called"]:
                return self._relpath(path)
        return None

    def float16_only_from_the_graph_rewrite(self) -> bool:
        """Whether the project's float16 is the graph rewrite: some file turns it on, and
        no file (code, tests or notebooks) names a float16 Keras policy."""
        mentions = self._mentions()
        return mentions["graph_rewrite"] and not mentions["float16_policy"]

    def names_float16_policy(self) -> bool:
        """Whether some file of the project (code, tests or notebooks) names a float16
        Keras policy in its code (`"mixed_float16"`, `set_floatx("float16")`)."""
        return self._mentions()["float16_policy"]

    def mentions_mixed_precision(self) -> bool:
        """Whether any file of the project names a mixed-precision API or policy."""
        return self._mentions()["mixed_precision"]

    def mixed_policies(self, module: str) -> tuple[frozenset[str], tuple[str, ...]]:
        """Mixed policies other modules can bring into `module` (their callers' states,
        the effects of the project functions it may call), and the setters' files."""
        names: set[str] = set()
        selected: set[str] = set()
        selectors: set[str] = set()
        external = self.external_flow(module)
        if external is not None:
            for state in (*external.sites.values(), *external.constructions.values(), external.after):
                names |= state
        carriers: set[str] = set()
        calls = None
        for imported in sorted(self.imports_of(module)):  # in order: which one carries a policy depends on it
            if imported in self.policy_modules:
                flow = self._flow(imported)
                if flow is None:
                    continue
                found = {n for n in flow.exit if n.startswith("mixed_")}  # importing it runs its top level
                called = set()
                for key, function in flow.functions.items():
                    effect = {n for n in function.effect if n.startswith("mixed_")}
                    if not effect or effect <= names | found:
                        continue
                    selector = any(not n.startswith(("mixed_", "<")) for n in function.effect)
                    # Only the functions this module calls carry their policy here (a `main()`
                    # that sets it, next to the helpers it imports, does not).
                    name = key.split(".")[0].split("#")[0]
                    if calls is None:
                        calls = self._calls_in(module)
                    if calls(name):
                        if selector:
                            # `float16 -> mixed_float16, ..., float32 -> float32`: which policy
                            # it sets is its caller's argument, not a fact of the project.
                            selected |= effect
                            selectors.add(f"{os.path.relpath(self.path_of[imported])}: {name}()")
                        else:
                            called |= effect
                if found or called or selected:
                    carriers.add(imported)
                names |= found | called
        only_selected = selected - names
        self._selectors[module] = (sorted(selectors), frozenset(only_selected)) if only_selected else ([], frozenset())
        names |= selected
        mixed = frozenset(n for n in names if n.startswith("mixed_"))
        if not mixed:
            return frozenset(), ()
        if external is not None:
            carriers |= external.carriers
        self._carriers[module] = carriers - {module}
        setters = sorted(os.path.relpath(self.path_of[m]) for m in carriers
                         if m != module and self.scan(self.path_of[m]).sets_policy)
        return mixed, tuple(setters)

    def _calls_in(self, module: str) -> Callable[[str], bool]:
        """Whether `module`'s code calls a name: the names its table lists; for a module
        Python cannot parse, `name(` in its text with comments and strings blanked."""
        table = self.table(module)
        if table is not None:
            return frozenset(table["called"]).__contains__
        text = code_only(self.text(self.path_of[module]) or "")
        return lambda name: re.search(rf"\b{re.escape(name)}\s*\(", text) is not None

    def policy_flag_guards(self, module: str, float16: bool = False) -> dict[str, bool]:
        """The flags every module that brings a mixed policy into `module` requires of its
        settings (`if args.fp16:`); {} where one of them sets it without such a flag, or
        only passes on what its callers set. With `float16`: of the settings that can set
        mixed_float16 (a carrier that sets only another mixed policy brings none)."""
        # imported here: it loads libcst, which files without mixed precision never need
        from mplint.facts.flag_guards import common_guards

        if module not in self._carriers:
            self.mixed_policies(module)
        carriers = self._carriers.get(module)
        if not carriers:
            return {}
        guards = []
        for carrier in sorted(carriers):
            flow = self._flow(carrier)
            if flow is None or flow.policy_flags is None:
                return {}
            if not float16:
                guards.append(flow.policy_flags)
            elif flow.float16_flags is not None:
                guards.append(flow.float16_flags)
        return common_guards(guards)

    def policy_selectors(self, module: str) -> tuple[list[str], frozenset[str]]:
        """(the project functions `module` calls that set a mixed policy or float32 as their
        argument says, the mixed policies only they bring), recorded by `mixed_policies`."""
        if module not in self._selectors:
            self.mixed_policies(module)
        return self._selectors.get(module, ([], frozenset()))

    def target(self) -> "Target | None":
        """What the project's modules say about the Keras they target (tests and
        notebooks aside)."""
        if self._target is _UNSET:
            from mplint.facts.target import KERAS2, KERAS3, Target

            keras2, keras3 = [], []
            for path, scan in self._module_scans():
                if not (scan.legacy_keras or scan.tf_keras or scan.keras2_only or scan.keras3_only):
                    continue
                relative = os.path.relpath(path)
                if scan.legacy_keras:
                    keras2.append(f"{relative} sets TF_USE_LEGACY_KERAS")
                elif scan.tf_keras:
                    keras2.append(f"{relative} imports tf_keras")
                elif scan.keras2_only:
                    keras2.append(f"{relative} uses Keras-2-only APIs")
                if scan.keras3_only:
                    keras3.append(f"{relative} uses Keras-3-only APIs")
            found = None
            if keras2 and not keras3:
                found = Target(KERAS2, f"the project: {keras2[0]}")
            elif keras3 and not keras2:
                found = Target(KERAS3, f"the project: {keras3[0]}")
            self._target = found
        return self._target  # type: ignore[return-value]

    def _module_scans(self) -> Iterator[tuple[str, FileScan]]:
        """(path, scan) of the project's modules whose code says which Keras the project
        targets: tests aside, and notebooks, each a program of its own."""
        for path in self.paths:
            if path.endswith(".ipynb"):
                continue
            scan = self.scan(path)
            if not scan.test:
                yield path, scan

    def era_target(self) -> "Target | None":
        """Keras 2, where modules of the project (tests and notebooks aside) have
        Keras-2-era code (the experimental mixed-precision API, `experimental_run_v2`, ...)
        and none has Keras-3-only code: the project was written for Keras 2. Weaker than
        `target` (which TensorFlow runs it is unknown): the file's own evidence and the
        project's pins decide first."""
        if self._era_target is _UNSET:
            from mplint.facts.target import KERAS2, Target

            found = None
            for path, scan in self._module_scans():
                if scan.keras3_only:
                    found = None
                    break
                if scan.keras2_era and found is None:
                    found = Target(KERAS2, f"the project: {os.path.relpath(path)} has Keras-2-era code", assumed=True)
            self._era_target = found
        return self._era_target  # type: ignore[return-value]

    # -- values ----------------------------------------------------------------------------
    def _where(self, module: str, row: int) -> str:
        path = self.path_of.get(module, module)
        return f"{os.path.relpath(path)}:{row}" if row else os.path.relpath(path)

    def constant(self, name: str) -> ExternalValue | None:
        located = self.locate(name)
        if located is None:
            return None
        module, rest = located
        table = self.table(module)
        if table is None:
            return None
        if rest in table["constants"]:
            value, row = table["constants"][rest]
        elif rest in table.get("attribute_constants", ()) and self._attribute_set_once(module, rest):
            value, row = table["attribute_constants"][rest]
        else:
            return None
        return ExternalValue(value, self._where(module, row), f"constant {rest}", rest.rsplit(".", 1)[-1])

    def _attribute_set_once(self, module: str, dotted: str) -> bool:
        """Whether a configuration attribute `module` sets once at its top level
        (`configs.general.precision = 32`) keeps that value: no code of the project sets
        an attribute of that name again (`configs.general.precision = 16` in a script,
        `setattr(configs, name, ...)`, `configs.update(vars(args))`)."""
        key = (module, dotted)
        found = self._set_once.get(key)
        if found is None:
            attribute = dotted.rsplit(".", 1)[-1]
            own = self.table(module) or {}
            constants = own.get("attribute_constants", {})
            here = sum(1 for name in constants if name.rsplit(".", 1)[-1] == attribute)
            root = dotted.split(".", 1)[0]
            stored = own.get("stored_attributes", {})
            found = stored.get(attribute, 0) == here and not stored.get("*") and not stored.get("*" + root) \
                and not any(self._sets_attribute(other, module, root, attribute)
                            for other in sorted(self._sharing_objects_with(module) - {module}))
            self._set_once[key] = found
        return found

    def _sets_attribute(self, other: str, module: str, root: str, attribute: str) -> bool:
        """Whether module `other` may set `attribute` of `module`'s object `root`: it sets
        an attribute of that name, updates some object from `vars(...)`/`__dict__`, or
        calls `setattr(x, name, v)` on `root` as it imports it."""
        path = self.path_of[other]
        if path.endswith(".ipynb"):
            return False
        text = self.text(path)
        if text is None or not any(word in text for word in (attribute, "setattr", "vars(", "__dict__")):
            return False
        table = self.table(other) or {}
        stored = table.get("stored_attributes", {})
        aliases = [name for name, target in table.get("imports", {}).items()
                   if self.absolute(other, target) in (module, f"{module}.{root}")]
        return bool(stored.get(attribute) or stored.get("*") or any(stored.get("*" + alias) for alias in aliases))

    def _table_entry(self, name: str, field: str) -> tuple[Any, dict] | None:
        """(the entry a project module's table keeps for `name` under `field`, that
        table) for a dotted name (`compat.IS_PREV_TF_2_4_0`); None where it keeps none."""
        located = self.locate(name)
        if located is None:
            return None
        module, rest = located
        table = self.table(module)
        found = table.get(field, {}).get(rest) if table is not None else None
        return (found, table) if found is not None else None

    def version_flag(self, name: str) -> dict[str, bool] | None:
        """A project module's flag of TensorFlow's version (`compat.IS_PREV_TF_2_4_0`):
        its truth at each version `version_flags.EVALUATED_VERSIONS` names; else None."""
        entry = self._table_entry(name, "version_flags")
        return entry[0][0] if entry is not None else None

    def version_check(self, name: str) -> Callable[[list[object], str], bool | None] | None:
        """For a project function that checks TensorFlow's version from its arguments
        (`utils.tf_minor_version_geq`, see `version_flags.version_function`): the truth of
        a call of it with given argument values at a given version (None where it does
        not evaluate to one). None for any other name."""
        entry = self._table_entry(name, "version_functions")
        if entry is None:
            return None
        function, table = entry
        return functools.partial(evaluate_version_function, function, imports=table["imports"])

    def float32_returns(self, name: str) -> tuple[list[str], list[str], bool] | None:
        """For a project function whose every return casts to float32/float64: (its
        parameters, those whose argument could choose another dtype, whether it is bound
        to an object); None for any other name."""
        found = self._function_entry(name)
        if found is None or "float32_unless" not in found[1]:
            return None
        entry = found[1]
        return entry["params"], entry["float32_unless"], entry["bound"]

    def _function_entry(self, name: str) -> tuple[str, dict] | None:
        """(module, the module table's entry) of a project function `name`, or None."""
        located = self.locate(name)
        if located is None:
            return None
        module, rest = located
        table = self.table(module)
        entry = table["functions"].get(rest) if table is not None else None
        return (module, entry) if entry is not None else None

    def consumer_of_argument(self, name: str, position: int | None, keyword: str | None) -> tuple[str, str] | None:
        """For a project function `name` that trains, evaluates, predicts with or saves the
        parameter an argument binds (the `position`th positional one, or `keyword`): (its
        module's path, the method it calls on it); None otherwise."""
        found = self._function_entry(name)
        if found is None or not found[1].get("consumes"):
            return None
        module, entry = found
        params = entry["params"][1:] if entry["bound"] else entry["params"]
        param = keyword if keyword is not None else params[position] if position is not None and position < len(params) \
            else None
        method = entry["consumes"].get(param) if param is not None else None
        return (self._relpath(self.path_of[module]), method) if method is not None else None

    def configured_values(self, key: str) -> list[ConfigValue]:
        """The values the project's configuration files give `key`
        (`mplint.project.config_values`)."""
        from mplint.project.config_values import configuration_files, configured_values

        if key not in self._configured_values:
            if self._configuration_files is None:
                self._configuration_files = configuration_files(self.root)
            self._configured_values[key] = configured_values(self._configuration_files, key)
        return self._configured_values[key]

    def names_command_line_flag(self, name: str) -> bool:
        """Whether a module of the project defines a command-line flag `name` (absl's
        `DEFINE_*`, or `--name` in its code: argparse, click, a launcher script's
        arguments)."""
        spellings = {f"--{name}", f"--{name.replace('_', '-')}"}
        for path in self.paths:
            if name in self.scan(path).flags:
                return True
            text = self.text(path) or ""
            if any(s in text for s in spellings):
                return True
        return False

    def flag_default(self, name: str) -> ExternalValue | None:
        """An absl flag's default, when exactly one non-test module of the project
        defines it."""
        found = []
        for module, path in self.path_of.items():
            scan = self.scan(path)
            if name in scan.flags and not scan.test:
                table = self.table(module)
                if table is not None and name in table["flags"]:
                    found.append((module, table["flags"][name]))
        if len(found) != 1:
            return None
        module, (value, row) = found[0]
        return ExternalValue(value, self._where(module, row), f"flag --{name} default", name)

    def arguments(self, module: str, function: str, param: str, under_mixed: bool = False
                  ) -> list[ExternalValue | ExternalOptimizer | None]:
        """What calls of `module`'s `function` in other (non-test) modules give `param`;
        with `under_mixed`, only the calls that can run under a mixed policy."""
        callers = self.callers_of(module, function.split(".")[0].split("#")[0])
        if not callers:
            return []  # nobody to ask: the module's own table (an `ast` parse) is not needed
        position = self._parameter_position(module, function, param)
        if position is None:
            return []
        found: list[ExternalValue | ExternalOptimizer | None] = []
        for importer in sorted(callers):
            for caller, state, call in self._calls_of_function(importer, module, function) or ():
                if under_mixed and not self._mixed_at_call(importer, caller, state):
                    continue
                found.append(self._argument(importer, call, function, param, position))
        return found

    def calls_passing(self, module: str, function: str, param: str) -> int | None:
        """How many calls of `module`'s `function` other (non-test) modules make, where
        each gives `param` an argument; None where one does not or cannot be read."""
        callers = self.callers_of(module, function.split(".")[0].split("#")[0])
        if not callers:
            return 0
        position = self._parameter_position(module, function, param)
        if position is None:
            return None
        count = 0
        for importer in sorted(callers):
            calls = self._calls_of_function(importer, module, function)
            if calls is None:
                if self.table(importer) is None:
                    continue  # Python rejects it (a TabError): it never runs, nor calls anything
                return None
            for _, _, call in calls:
                if call.get("args") is None:
                    return None
                if param not in call["kwargs"] and not 0 <= position < len(call["args"]):
                    return None
                count += 1
        return count

    def _parameter_position(self, module: str, function: str, param: str) -> int | None:
        """Where `param` sits among the positional arguments a call of `module`'s
        `function` gives (a bound method's `self` aside); None where the module's table
        does not know the function or the parameter."""
        table = self.table(module)
        if table is None or function not in table["functions"]:
            return None
        signature = table["functions"][function]
        params = signature["params"]
        if param not in params:
            return None
        return params.index(param) - (1 if signature["bound"] else 0)

    def _calls_of_function(self, importer: str, module: str, function: str) -> list[tuple[str, frozenset, dict]] | None:
        """The calls `importer` makes of `module`'s `function` (a class's `__init__`: of the
        class), as (the calling function's key, "" at the top level; the symbolic policy
        state there; the call's summary); None where `importer` has no summary."""
        summary = self.summary(importer)
        if summary is None:
            return None
        owner = function.rsplit(".", 1)[0] if "." in function and function.endswith(".__init__") else None
        found = []
        for (caller, callee, state), call in zip(summary["flow"]["outgoing"], summary["calls"]):
            target = self.definition(callee)
            if target is None or target[0] != module:
                continue
            if target[1] == function or (owner is not None and target[2] == "class" and target[1] == owner):
                found.append((caller, frozenset(state), call))
        return found

    def _mixed_at_call(self, importer: str, caller: str, state: frozenset) -> bool:
        """Whether a mixed policy can be in effect at a call in `importer` (made in its
        function `caller`, "" for its top level), whose symbolic state is `state`: the
        project's solution where the policy reaches the importer; else the importer's
        own start (what it sets itself is in `state`)."""
        flows, entries = self._solve()
        if importer in flows and caller:
            entry = entries.get((importer, caller), frozenset())
        else:
            entry = module_entry(self.assumed(self.path_of[importer]))
        return any(n.startswith("mixed_") for n in substitute(state, entry))

    def used_as_part(self, module: str, key: str) -> bool:
        """Whether a call of `module`'s function or class `key` in another (non-test)
        module uses what it returns as a part of another model."""
        return self._caller_where(module, key, lambda call: call.get("part")) is not None

    def final_use_elsewhere(self, module: str, key: str, item: int | None = None) -> str | None:
        """The path of another (non-test) module whose call of `module`'s function or
        class `key` trains, evaluates, predicts with or exports what it returns (the
        `item`th value of the tuple it returns)."""
        return self._caller_where(module, key, lambda call: item in (call.get("final") or ()))

    def _caller_where(self, module: str, key: str, holds) -> str | None:
        """The path of the first (non-test) module calling `module`'s `key` where the
        call's summary `holds`."""
        top = key.split(".")[0].split("#")[0]
        for importer in sorted(self.callers_of(module, top)):
            summary = self.summary(importer)
            if summary is None:
                continue
            for (_, callee, _), call in zip(summary["flow"]["outgoing"], summary["calls"]):
                target = self.definition(callee)
                if target is not None and target[0] == module and target[1] == key and holds(call):
                    return self._relpath(self.path_of[importer])
        return None

    def callers_of(self, module: str, name: str) -> set[str]:
        """Non-test modules that import `module` (or a package re-exporting from it) and
        mention `name`."""
        candidates = set(self.importers_of(module))
        for importer in list(candidates):
            if importer in self.packages:
                candidates |= self.importers_of(importer)
        found = set()
        for candidate in candidates:
            path = self.path_of[candidate]
            if self.is_test(candidate):
                continue
            if name in (self.text(path) or ""):
                found.add(candidate)
        return found

    def _argument(self, importer: str, call: dict, function: str, param: str,
                  position: int) -> ExternalValue | ExternalOptimizer | None:
        args = call.get("args")
        if args is None:
            return None
        given = call["kwargs"].get(param)
        if given is None and 0 <= position < len(args):
            given = args[position]
        if not isinstance(given, dict):
            return None
        where = self._where(importer, call.get("row", 0))
        if "value" in given:
            name = function.rsplit(".", 1)[0] if function.endswith(".__init__") else function
            # named as the caller has it (`num_classes` given as `out_channels`): what it is
            return ExternalValue(given["value"], where, f"argument `{param}` of `{name}(...)`",
                                 given.get("name") or param, bool(given.get("code")))
        origin, generation, kind = given["optimizer"]
        return ExternalOptimizer(origin, generation, kind, where)

    # -- what a file is checked with --------------------------------------------------------
    def dependency_key(self, path: str) -> str:
        """What the findings of a file depend on outside it, for the findings cache: the
        policies the project brings in, and the files it reads facts from (the modules
        it imports, the packages those re-export through, its callers)."""
        module = self.module_of.get(os.path.abspath(path))
        if module is None:
            return ""
        related = set(self.imports_of(module)) | {m for m in self.importers_of(module) if not self.is_test(m)}
        for imported in list(related):
            if imported in self.packages:
                related |= self.imports_of(imported)
        parts = [repr(self.mixed_policies(module))]
        external = self.external_flow(module)
        if external is not None:
            parts.append(repr(sorted((k, sorted(v)) for k, v in external.sites.items())))
            parts.append(repr(sorted((k, sorted(v)) for k, v in external.constructions.items())))
            parts.append(repr(sorted(external.after)))
            if external.constructions and external.called_there is not None:
                # which of its methods code under a policy calls (`runs_where_built`)
                table = self.table(module)
                methods = {key.rsplit(".", 1)[-1].split("#")[0] for key in (table["functions"] if table else ())}
                parts.append(repr(sorted(methods & external.called_there)))
        parts += [self._key_part(other) for other in sorted(related)]
        if self.scan(self.path_of[module]).half:  # only a float16/bfloat16 module has MP103 findings
            parts.append(f"trained by {self.trainer_of(module)}; layers later: {self.may_build_layers_later(module)}")
        if self.names_float16_policy():
            parts.append(f"float16 policy on its path: {self.float16_policy_on_path(module)}")
        if self.scan(self.path_of[module]).mixed_precision:  # migration findings vanish in a TF 1.x-only module
            parts.append(f"TF 1.x only through {self.imported_only_on_tensorflow1(module)}")
        return "|".join(parts)

    def _key_part(self, module: str) -> str:
        """A related module's part of the dependency keys (its buffer or its stat), once
        per run: a module many others import is part of each of their keys."""
        part = self._key_parts.get(module)
        if part is None:
            path = self.path_of[module]
            overlay = self._overlay.get(path, "") and hash(self._overlay[path])
            part = self._key_parts[module] = f"{module}:{overlay}:{self._key_stat(path)}"
        return part


    def context_for(self, path: str) -> "ModuleContext | None":
        module = self.module_of.get(os.path.abspath(path))
        return ModuleContext(self, module) if module is not None else None

    def save(self) -> str | None:
        return self.store.save()


def _constant_dep(found: ExternalValue | None) -> list | None:
    """How a summary's deps record another module's constant it read (JSON)."""
    return [found.value] if found is not None else None


def _constant_facts(table: dict | None, name: str, module: str, locate) -> tuple:
    """What of `module`'s table the constant `name` (dotted) depends on: its value where
    `module` defines it, and the sets of its attribute here (`x.precision = 16`,
    `setattr`)."""
    if table is None:
        return ()
    located = locate(name)
    rest = located[1] if located is not None else name
    attribute = rest.rsplit(".", 1)[-1]
    stored = table.get("stored_attributes", {})
    own = (table.get("constants", {}).get(rest), table.get("attribute_constants", {}).get(rest)) \
        if located is not None and located[0] == module else ()
    return own, stored.get(attribute), sorted(k for k in stored if k.startswith("*"))


class ModuleContext:
    """`mplint.facts.project_context.ProjectContext` for one module of an index."""

    def __init__(self, index: ProjectIndex, module: str, record: bool = False) -> None:
        self.index = index
        self.module = module
        self.deps: dict[str, dict] = {"resolved": {}, "exits": {}} if record else {}
        self._record = record

    def resolve(self, raw: str) -> str | None:
        found = self.index.resolve(self.module, raw)
        if self._record:
            self.deps["resolved"][raw] = found
        return found

    def canonical(self, raw: str) -> str | None:
        return self.index.canonical(self.module, raw)

    def import_effect(self, module: str) -> frozenset | None:
        found = self.index.import_effect(self.module, module)
        if self._record:
            self.deps["exits"]["import " + module] = sorted(found) if found is not None else None
        return found

    def exit_of(self, callee: str, truth_of=None) -> frozenset | None:
        found = self.index.exit_of(callee)
        key = callee
        if found is not None and truth_of is not None:
            guards = self.index.guards_of(callee)
            if self._record:
                self.deps["exits"]["guards " + callee] = [list(g) for g in guards]
            decided = deciding_guard(guards, truth_of)
            if decided is not None:
                param, truth = decided
                found = self.index.exit_of(callee, decided)
                key = f"when {param} {int(truth)} {callee}"
        if self._record:
            self.deps["exits"][key] = sorted(found) if found is not None else None
        return found

    def external_flow(self) -> External | None:
        if self._record:
            return None  # a summary is the module's own flow, not what others make of it
        return self.index.external_flow(self.module)

    def constant(self, name: str) -> ExternalValue | None:
        found = self.index.constant(name)
        if self._record:  # another module's value: the summary holds while it does
            self.deps.setdefault("constants", {})[name] = _constant_dep(found)
        return found

    def version_flag(self, name: str) -> dict[str, bool] | None:
        return self.index.version_flag(name)

    def version_check(self, name: str) -> Callable[[list[object], str], bool | None] | None:
        return self.index.version_check(name)

    def used_elsewhere(self, name: str) -> bool:
        return bool(self.index.callers_of(self.module, name))

    def flag_default(self, name: str) -> ExternalValue | None:
        return self.index.flag_default(name)

    def configured_values(self, key: str) -> list[ConfigValue]:
        return self.index.configured_values(key)

    def names_command_line_flag(self, name: str) -> bool:
        return self.index.names_command_line_flag(name)

    def float32_returns(self, name: str) -> tuple[list[str], list[str], bool] | None:
        return self.index.float32_returns(name)

    def consumer_of_argument(self, name: str, position: int | None, keyword: str | None) -> tuple[str, str] | None:
        # a summary records the module's own flow: not what the functions it calls do
        return None if self._record else self.index.consumer_of_argument(name, position, keyword)

    # A summary says what the module itself does: what its callers give it, or do with
    # what it returns, is not part of it (and asking would summarise them in turn).
    def arguments(self, function: str, param: str, under_mixed: bool = False
                  ) -> list[ExternalValue | ExternalOptimizer | None]:
        return [] if self._record else self.index.arguments(self.module, function, param, under_mixed)

    def calls_passing(self, function: str, param: str) -> int | None:
        return None if self._record else self.index.calls_passing(self.module, function, param)

    def used_as_part(self, key: str) -> bool:
        return False if self._record else self.index.used_as_part(self.module, key)

    def final_use_elsewhere(self, key: str, item: int | None = None) -> str | None:
        return None if self._record else self.index.final_use_elsewhere(self.module, key, item)

    def mentions_mixed_precision(self) -> bool:
        return True if self._record else self.index.mentions_mixed_precision()

    def mentions_float16(self) -> bool:
        return True if self._record else self.index.mentions_float16()

    def float16_only_from_the_graph_rewrite(self) -> bool:
        return False if self._record else self.index.float16_only_from_the_graph_rewrite()

    def names_float16_policy(self) -> bool:
        return True if self._record else self.index.names_float16_policy()

    def graph_rewrite_imported(self) -> str | None:
        return None if self._record else self.index.graph_rewrite_imported(self.module)

    def imported_only_on_tensorflow1(self) -> str | None:
        return None if self._record else self.index.imported_only_on_tensorflow1(self.module)

    def trainer(self) -> str | None:
        return None if self._record else self.index.trainer_of(self.module)

    def float16_policy_on_path(self) -> bool | None:
        return None if self._record else self.index.float16_policy_on_path(self.module)

    def may_build_layers_later(self) -> bool:
        return True if self._record else self.index.may_build_layers_later(self.module)

    def is_project_module(self, raw: str) -> bool:
        absolute = self.index.absolute(self.module, raw)
        return absolute is not None and self.index.locate(absolute) is not None

    def importers(self) -> tuple[str, ...]:
        if self._record:
            return ()
        return tuple(sorted(m for m in self.index.importers_of(self.module) if not self.index.is_test(m)))

    def target(self):
        return None if self._runs_alone else self.index.target()

    def era_target(self):
        return None if self._runs_alone else self.index.era_target()

    @property
    def _runs_alone(self) -> bool:
        """A notebook runs alone: the other modules' code says nothing of its Keras."""
        return self.index.path_of.get(self.module, "").endswith(".ipynb")

    def mixed_policies(self) -> tuple[frozenset[str], tuple[str, ...]]:
        if self._record:
            return frozenset(), ()
        return self.index.mixed_policies(self.module)

    def policy_flag_guards(self, float16: bool = False) -> dict[str, bool]:
        return {} if self._record else self.index.policy_flag_guards(self.module, float16)

    def policy_selectors(self) -> tuple[list[str], frozenset[str]]:
        if self._record:
            return [], frozenset()
        return self.index.policy_selectors(self.module)

