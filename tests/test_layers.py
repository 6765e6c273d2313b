"""The package layout is the architecture: project index -> facts -> rules -> engine/fixes
-> front ends. These tests read the imports of the source (no module is imported) and
fail when a lower layer reaches up, or when modules import each other in a cycle at
import time."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRONT_ENDS = ("mplint.engine.runner", "mplint.frontends.cli", "mplint.frontends.check_command", "mplint.frontends.lsp", "mplint.engine.textcheck",
              "mplint.frontends.flake8_plugin", "mplint.engine.engine", "mplint.frontends.watch")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """Absolute module names a file imports (anywhere, or only when it is imported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = _module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else _module_name(path)
    nodes = []
    if top_level_only:
        stack = list(tree.body)
        while stack:  # statements run at import time: module body, if/try blocks, not functions
            node = stack.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            nodes.append(node)
            if isinstance(node, (ast.If, ast.Try)):
                stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
                for handler in getattr(node, "handlers", []):
                    stack.extend(handler.body)
    else:
        nodes = list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _files(package: str) -> list[Path]:
    return sorted((ROOT / package.replace(".", "/")).rglob("*.py"))


def _reaching(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [f"{path.relative_to(ROOT)} imports {name}" for path in files for name in sorted(_imports(path, False))
            if name.startswith(forbidden)]


def test_facts_never_import_the_project_index_rules_or_front_ends() -> None:
    # Facts read other modules through the ProjectContext protocol only.
    assert _reaching(_files("mplint.facts"), ("mplint.project", "rules", *FRONT_ENDS)) == []


def test_rules_never_import_the_project_index_or_front_ends() -> None:
    assert _reaching(_files("rules"), ("mplint.project", *FRONT_ENDS)) == []


def test_the_project_index_imports_no_rule_or_front_end_and_parses_lazily() -> None:
    assert _reaching(_files("mplint.project"), ("rules", *FRONT_ENDS)) == []
    # Indexing a project is a text and `ast` scan; libcst (for the summaries of the few
    # modules that matter for policies) is imported only when it is needed.
    eager = [f"{p.relative_to(ROOT)}" for p in _files("mplint.project")
             if any(n == "libcst" or n.startswith("libcst.") for n in _imports(p, True))]
    assert eager == []


def _cycles(top_level_only: bool) -> list[list[str]]:
    graph: dict[str, set[str]] = {}
    files = _files("mplint") + _files("rules")
    names = {_module_name(p) for p in files}
    for path in files:
        imported = set()
        for name in _imports(path, top_level_only):
            while name and name not in names:  # `from pkg.mod import func` -> pkg.mod
                name = name.rpartition(".")[0]
            if name and name != _module_name(path):
                imported.add(name)
        graph[_module_name(path)] = imported
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if state.get(other) == 1:
                cycles.append(stack[stack.index(other):] + [other])
            elif other not in state:
                visit(other, stack)
        stack.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    # A package's __init__ importing its own modules is not a cycle through them.
    return [c for c in cycles if not any(a.startswith(b + ".") or b.startswith(a + ".") for a, b in zip(c, c[1:]))]


def test_no_import_cycles_at_import_time() -> None:
    assert _cycles(top_level_only=True) == []


def test_no_import_cycles_at_all() -> None:
    """Not even through imports inside functions or under TYPE_CHECKING: the modules form
    layers, each importing only what sits below it (a lazy import is still a dependency)."""
    assert _cycles(top_level_only=False) == []


# The packages in layer order: each may import its own modules and those of the layers
# before it, never one after it (`mplint.verify` sits beside the engine: only the front
# ends import it).
LAYERS = (
    ("mplint.core",),
    ("mplint.inputs",),
    ("mplint.analysis",),
    ("mplint.facts",),
    ("mplint.project",),
    ("mplint.catalogue",),
    ("mplint.fixes",),
    ("rules", "mplint_rules"),
    ("mplint.engine", "mplint.verify"),
    ("mplint.frontends", "mplint.__main__"),
)


def _layer_of(module: str) -> int | None:
    for rank, packages in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in packages):
            return rank
    return None


def test_every_module_belongs_to_a_layer() -> None:
    homeless = [_module_name(p) for p in _files("mplint") + _files("rules")
                if _module_name(p) != "mplint" and _layer_of(_module_name(p)) is None]
    assert homeless == []


def test_every_package_imports_only_its_own_layer_and_those_below() -> None:
    upward = []
    for path in _files("mplint") + _files("rules"):
        module = _module_name(path)
        rank = _layer_of(module)
        if rank is None:
            continue
        own = next(p for p in LAYERS[rank] if module == p or module.startswith(p + "."))
        for name in sorted(_imports(path, False)):
            other = _layer_of(name)
            if other is None or other < rank:
                continue
            if other > rank or (own in ("mplint.engine", "mplint.verify") and not name.startswith(own)):
                upward.append(f"{module} imports {name}")
    assert upward == []


def test_each_package_says_what_it_owns_and_may_import() -> None:
    for packages in LAYERS:
        for package in packages:
            if package in ("mplint_rules", "mplint.__main__"):
                continue
            init = ROOT / package.replace(".", "/") / "__init__.py"
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            assert "May import" in doc, f"{init.relative_to(ROOT)} does not say what it may import"
