"""One parse per file per run: a tree the project index built is handed to the engine.

The project index summarises some modules (libcst, `mplint.project.index`) before the
engine checks them; without this, a module both summarised and checked is parsed and
walked twice. The runner says which files the engine will check (`expect`); the index
keeps the tree and the walk of a module it parsed when that module is one of them
(`keep`); the engine takes it (`take`: used once, then dropped, so memory holds only
the trees still to be checked). A kept tree is used only for the very text it was
parsed from. In a run with worker processes the index parses before the workers fork,
so the workers inherit what was kept.

libcst trees are immutable and the walk (`ModuleIndex`) depends on the tree alone, so
sharing them changes no fact: the facts built on them are not shared (a summary's
facts see the project differently from a check's).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst

    from mplint.analysis.index import ModuleIndex

_expected: set[str] = set()  # absolute paths the engine will check in this run
_kept: dict[str, tuple[str, "cst.Module", "ModuleIndex"]] = {}  # path -> (text, tree, walk)


def expect(paths: list[str]) -> None:
    """The files the engine may check in this run (replaces the last run's; of what was
    kept, only the trees of these files stay: a resident server parses an edited file
    before it forks the command that checks it)."""
    _expected.clear()
    _expected.update(os.path.abspath(p) for p in paths)
    for path in [p for p in _kept if p not in _expected]:
        del _kept[path]


def keep(path: str, text: str, tree: "cst.Module", walk: "ModuleIndex") -> None:
    """Offer a parse of `path`; kept only if the engine will check that file."""
    path = os.path.abspath(path)
    if path in _expected:
        _kept[path] = (text, tree, walk)


def take(path: str | None, text: str) -> "tuple[cst.Module, ModuleIndex] | None":
    """The kept tree and walk of `path`, if they were parsed from `text` (once)."""
    if path is None or not _kept:
        return None
    found = _kept.pop(os.path.abspath(path), None)
    if found is None or found[0] != text:
        return None
    return found[1], found[2]


def forget() -> None:
    """Drop everything (end of a run: a resident server must not hold old trees)."""
    _expected.clear()
    _kept.clear()
