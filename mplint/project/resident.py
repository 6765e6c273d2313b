"""Project indexes kept warm by a resident process (`mplint server`) between commands.

A command forked from the server inherits the server's memory. Before it forks, the
server brings the index of each project the command's files belong to up to date
(`warm`; while idle, `refresh_kept`): files whose content changed since the last
command are read again, and what was derived from them is dropped and rebuilt
(`ProjectIndex.refresh`), then the
project's policies are solved. The command then finds that index current
(`ProjectIndex.serves`) instead of reading the project store again, and the trees the
refresh parsed for the files it checks (`mplint.analysis.parsed_once`). The answer is the
same as a fresh index's: the index is used only from the same working folder and with
the same assumed policies, and any doubt (files added or removed, an error) builds a
fresh one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from mplint.project.layout import MARKERS, project_root

if TYPE_CHECKING:
    from mplint.project.index import ProjectIndex

MAX_PROJECTS = 4  # warmed per command: a pre-commit run or an editor names a few files


def command_paths(argv: list[str], cwd: str) -> list[str] | None:
    """The paths a `check` command names (the working folder when it names none), or
    None for another command or one reading stdin."""
    args = list(argv)
    if args and args[0] == "check":
        args = args[1:]
    elif args and not args[0].startswith("-") and not os.path.exists(os.path.join(cwd, args[0])):
        return None  # another subcommand (`rule`, `verify`, ...)
    if "-" in args or any(a.startswith("--stdin-filename") for a in args):
        return None
    paths = [os.path.join(cwd, a) for a in args if not a.startswith("-") and os.path.exists(os.path.join(cwd, a))]
    return paths or [cwd]


def is_project(folder: str) -> bool:
    """Whether `folder` is a project root by a marker (not a loose folder, such as a
    home directory, whose walk could be huge)."""
    try:
        names = set(os.listdir(folder))
    except OSError:
        return False
    return any(marker in names for marker in MARKERS)


def warm(paths: list[str], cwd: str) -> None:
    """Refresh (or build) and solve the index of each project holding `paths`, as the
    command about to run from `cwd` would see it."""
    from mplint.analysis import parsed_once
    from mplint.inputs.config import ConfigResolver, assumed_policy_for
    from mplint.project import index as index_module
    from mplint.project.index import ProjectIndex

    os.chdir(cwd)
    resolver = ConfigResolver()
    assumed_for = assumed_policy_for(resolver)
    files = [p for p in paths if os.path.isfile(p)]
    parsed_once.expect(files)  # the edited files' new trees go to the command
    roots: list[str] = []
    for path in paths:
        root = project_root(os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path)))
        if root not in roots and is_project(root):
            roots.append(root)
    for root in roots[:MAX_PROJECTS]:
        index = index_module._INDEXES.get((root, True))
        if index is not None:
            index.current = False
        if index is None or index.cwd != cwd or index.refresh() is None:
            index = ProjectIndex(root, cache=True, assumed_for=assumed_for)
            index_module._INDEXES[(root, True)] = index
        index.assumed_for = assumed_for
        _answer_for(index, files)


def refresh_kept(cwd: str) -> None:
    """Between commands: bring every kept index up to date with the disk, so the next
    command finds the files edited meanwhile already read (their new trees kept for it)."""
    from mplint.analysis import parsed_once
    from mplint.project import index as index_module

    os.chdir(cwd)
    for key, index in list(index_module._INDEXES.items()):
        if not index.current or index.cwd != cwd:
            continue
        index.current = False
        edited = index.refresh()
        if edited is None:  # files added or removed: the next command builds it again
            del index_module._INDEXES[key]
            continue
        parsed_once.expect(edited)
        _answer_for(index, edited)


def _answer_for(index: "ProjectIndex", files: list[str]) -> None:
    """Solve the project and what a command asks of it for each of `files`; then the
    index is current for that command."""
    index.solve()
    for path in files:
        if os.path.abspath(path) in index.module_of:
            index.dependency_key(path)
    index.current = True


def forget() -> None:
    """Drop every kept index and tree (after an error while warming: the next command
    builds its own)."""
    from mplint.analysis import parsed_once
    from mplint.project import index as index_module

    index_module._INDEXES.clear()
    parsed_once.forget()
