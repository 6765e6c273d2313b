"""Which files to check: walk the given paths, honouring excludes and .gitignore.

- Files named on the command line are always checked (unless `--force-exclude`, which
  the pre-commit hooks use, applies the excludes to them too).
- Directories are walked in sorted order; `.py` and `.ipynb` files are collected.
- Default excludes (`.git`, `.venv`, `build`, ...) and config `exclude` globs apply to
  every folder and file; `.gitignore` files of the walked tree and of its parent
  folders up to the repository root are honoured.
- Symlinked folders are not followed (no loops); symlinked files are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

from mplint.inputs.config import DEFAULT_EXCLUDE, ConfigResolver, Settings, glob_match
from mplint.inputs import run_record

SOURCE_SUFFIXES = (".py", ".ipynb")


@dataclass(frozen=True)
class Found:
    path: str  # as found: the argument joined with the walked names
    settings: Settings
    named: bool
    data: bytes | None = None  # a virtual file's content (stdin): the path is not read


@dataclass(frozen=True)
class PathProblem:
    path: str
    message: str
    fatal: bool = True  # counts as a usage error (exit 2)


class _GitIgnores:
    """The .gitignore files that apply to a folder, outermost first."""

    def __init__(self) -> None:
        self._cache: dict[str, object | None] = {}
        self._roots: dict[str, str | None] = {}

    def _load(self, folder: str):
        if folder not in self._cache:
            path = os.path.join(folder, ".gitignore")
            spec = None
            if run_record.isfile(path):
                try:
                    import pathspec

                    with open(path, encoding="utf-8", errors="replace") as handle:
                        spec = pathspec.GitIgnoreSpec.from_lines(handle.read().splitlines())
                except OSError:
                    spec = None
            self._cache[folder] = spec
        return self._cache[folder]

    def _git_root(self, folder: str) -> str | None:
        """The nearest folder at or above `folder` holding `.git` (asked once per folder:
        a walk asks for every folder of the tree)."""
        if folder not in self._roots:
            parent = os.path.dirname(folder)
            if run_record.isdir(os.path.join(folder, ".git")):
                self._roots[folder] = folder
            else:
                self._roots[folder] = None if parent == folder else self._git_root(parent)
        return self._roots[folder]

    def chain_for(self, folder: str) -> list[tuple[str, object]]:
        """Specs of `folder` and its ancestors up to the git root (or just `folder`)."""
        current = os.path.abspath(folder)
        root = self._git_root(current)
        folders = [current]
        if root is not None:  # else not in a git repository: only the walked tree
            while current != root:
                current = os.path.dirname(current)
                folders.append(current)
        chain = []
        for item in reversed(folders):
            spec = self._load(item)
            if spec is not None:
                chain.append((item, spec))
        return chain

    def ignored(self, chain: list[tuple[str, object]], abspath: str, is_dir: bool) -> bool:
        decision = False
        for folder, spec in chain:
            rel = os.path.relpath(abspath, folder).replace(os.sep, "/")
            if rel.startswith(".."):
                continue
            result = spec.check_file(rel + "/" if is_dir else rel)  # type: ignore[attr-defined]
            if result.include is not None:
                decision = bool(result.include)
        return decision


def _excluded(settings: Settings, path: str, name: str) -> bool:
    if name in DEFAULT_EXCLUDE:
        return True
    if not settings.exclude:
        return False
    rel = settings.relpath(path)
    return any(glob_match(pattern, rel) for pattern in settings.exclude)


def discover(
    paths: list[str], resolver: ConfigResolver, force_exclude: bool = False
) -> Iterator[Found | PathProblem]:
    gitignores = _GitIgnores()
    seen: set[tuple[int, int]] = set()  # (device, inode): a file reached twice is checked once
    for given in paths:
        if not os.path.lexists(given):
            yield PathProblem(given, "no such file or directory")
            continue
        if run_record.isdir(given):
            yield from _walk(given, resolver, gitignores, seen)
            continue
        if not run_record.exists(given):
            yield PathProblem(given, "broken symbolic link")
            continue
        settings = resolver.for_path(given)
        if force_exclude and _named_excluded(settings, given):
            continue
        info = os.stat(given)
        if (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            yield Found(given, settings, named=True)


def virtual_file(path: str, data: bytes, resolver: ConfigResolver, force_exclude: bool = False) -> Iterator[Found]:
    """Text from stdin checked as the file `path` (`-`: unnamed, in the working
    directory): its configuration, per-file-ignores and Keras target are that path's."""
    settings = resolver.for_path(path)
    if force_exclude and _named_excluded(settings, path):
        return
    yield Found(path, settings, named=True, data=data)


def _named_excluded(settings: Settings, path: str) -> bool:
    """Whether `--force-exclude` leaves out a path named on the command line."""
    parts = [p for p in os.path.normpath(path).split(os.sep) if p not in ("", ".", "..")]
    return any(_excluded(settings, path, part) for part in parts)


def _walk(
    root: str, resolver: ConfigResolver, gitignores: _GitIgnores, seen: set[tuple[int, int]]
) -> Iterator[Found | PathProblem]:
    stack = [root]
    while stack:
        folder = stack.pop()
        folder_abs = os.path.abspath(folder)
        chain = gitignores.chain_for(folder_abs)
        try:
            device = os.stat(folder).st_dev
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except PermissionError:
            yield PathProblem(folder, "permission denied")
            continue
        except OSError as exc:
            yield PathProblem(folder, exc.strerror or str(exc))
            continue
        settings = resolver.for_path(folder)
        subfolders = []
        for entry in entries:
            name = entry.name
            path = os.path.join(folder, name) if folder != "." else name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if _excluded(settings, path, name):
                    continue
                if chain and gitignores.ignored(chain, os.path.join(folder_abs, name), True):
                    continue
                subfolders.append(path)
                continue
            if not name.endswith(SOURCE_SUFFIXES):
                continue
            if _excluded(settings, path, name) or (
                chain and gitignores.ignored(chain, os.path.join(folder_abs, name), False)
            ):
                continue
            if is_link:
                try:
                    info = os.stat(path)
                except OSError:
                    yield PathProblem(path, "broken symbolic link, skipped", fatal=False)
                    continue
                if run_record.isdir(path):
                    continue  # a symlinked folder: not followed
                key = (info.st_dev, info.st_ino)
            else:
                key = (device, entry.inode())
            if key in seen:
                continue
            seen.add(key)
            yield Found(path, settings, named=False)
        stack.extend(reversed(subfolders))
