"""Where a project is and what its modules are called.

- The project root is the nearest folder above a path with `pyproject.toml`,
  `setup.cfg`, a packaging `setup.py` (not a module of that name that sets flags) or
  `.git`; a path with none above it is its own folder's
  project (a loose folder of scripts).
- A module's dotted name is its path under the root (or under `src/` for the src
  layout); `__init__.py` names its package.
- The project's files are the `.py` and `.ipynb` files under the root, without the
  default excludes (`.git`, virtual environments, `build`, `site-packages`, ...);
  symlinked folders are not followed (no loops), and a walk stops at `MAX_FILES`. A
  loose folder (no marker) is its own files and its packages' (sub-folders with an
  `__init__.py`): a script checked in a home or temp folder does not read the whole
  tree below it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache

from mplint.inputs.config import DEFAULT_EXCLUDE
from mplint.facts.target import is_packaging_script

MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", ".git")
MAX_FILES = 50_000
_EXCLUDED = frozenset(DEFAULT_EXCLUDE) | {"env", ".env", ".direnv", ".git"}


@lru_cache(maxsize=4096)
def project_root(folder: str) -> str:
    """The project root of a folder (memoised: the files of one tree list each ancestor
    once)."""
    current = folder
    while True:
        if _has_marker(current):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return folder
        current = parent


def _has_marker(folder: str) -> bool:
    try:
        names = set(os.listdir(folder))
    except OSError:
        return False
    return any(n in names and (n != "setup.py" or is_packaging_script(os.path.join(folder, n))) for n in MARKERS)


def relative_to(root: str, path: str) -> str:
    """`os.path.relpath(path, root)`, without its normalising in the common case (an
    absolute, normalised path under the root: a warm run asks thousands of times)."""
    prefix = root if root.endswith(os.sep) else root + os.sep
    if path.startswith(prefix) and os.path.isabs(root) and f"{os.sep}." not in path and os.sep * 2 not in path \
            and f"{os.sep}." not in root:
        return path[len(prefix):]
    return os.path.relpath(path, root)


def module_name(root: str, path: str) -> str | None:
    """`pkg.sub.mod` for `<root>/pkg/sub/mod.py` (or `<root>/src/pkg/...`); None for a
    path outside the root or in a folder with a dot in its name."""
    relative = relative_to(root, path)
    if relative.startswith(".."):
        return None
    parts = relative.replace(os.sep, "/").split("/")
    if parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    last = parts[-1]
    for suffix in (".py", ".ipynb"):
        if last.endswith(suffix):
            parts[-1] = last[: -len(suffix)]
            break
    if parts[-1] == "__init__":
        parts = parts[:-1]
    # A folder whose name no import can spell (`multi-nodes-training/`) still holds the
    # project's scripts, run as `python multi-nodes-training/train.py`: they import the
    # project's modules and read its facts, and nothing imports them. A dot in a folder's
    # name would read as a package boundary: such files stay outside.
    if not parts or not all(p and "." not in p for p in parts[:-1]):
        return None
    return ".".join(parts)


@dataclass
class ProjectFiles:
    root: str
    paths: list[str] = field(default_factory=list)  # absolute, sorted
    notes: list[str] = field(default_factory=list)  # what could not be walked, and why


def project_files(root: str) -> ProjectFiles:
    """Every `.py`/`.ipynb` file of the project, in sorted order."""
    found = ProjectFiles(root)
    stack = [root]
    seen: set[tuple[int, int]] = set()
    loose = not _has_marker(root)  # only the folder's packages below it
    while stack:
        folder = stack.pop()
        try:
            info = os.stat(folder)
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            found.notes.append(f"{folder}: cannot list: {exc.strerror or exc}")
            continue
        if (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        folders = []
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if name not in _EXCLUDED and not name.endswith(".egg-info") and \
                            (not loose or os.path.isfile(os.path.join(entry.path, "__init__.py"))):
                        folders.append(entry.path)
                elif name.endswith((".py", ".ipynb")) and entry.is_file():
                    found.paths.append(entry.path)
            except OSError:
                continue
        if len(found.paths) > MAX_FILES:
            found.notes.append(f"{root}: more than {MAX_FILES} files; the rest are not read for project facts")
            break
        stack.extend(reversed(folders))
    found.paths.sort()
    return found
