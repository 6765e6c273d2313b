"""The classes a project's Hydra configs instantiate.

`hydra.utils.instantiate(cfg.model)` builds whatever class the config's `_target_:`
names (`_target_: src.models.nrms.NRMS`). The module that calls it therefore uses
those classes' modules as surely as if it imported them: they run under its policy.
This reads the dotted names from the YAML files of the project's config folders
(`conf/`, `config/`, `configs/`, at the root, under `src/` or in a top-level package),
as text: one line per `_target_:`, comments never count.
"""

from __future__ import annotations

import os
import re

from mplint.inputs import run_record

CONFIG_FOLDERS = frozenset({"conf", "config", "configs", "cfg", "cfgs", "hydra_configs"})
_MAX_CONFIG_FILES = 2000
_MAX_CONFIG_BYTES = 1_000_000
_TARGET = re.compile(r"""^[ \t-]*_target_[ \t]*:[ \t]*['"]?([A-Za-z_][\w.]*)['"]?[ \t]*(?:#.*)?$""", re.MULTILINE)


def configured_targets(root: str) -> tuple[str, ...]:
    """The dotted names (`pkg.module.Class`) that the project's YAML configs give as
    `_target_`, sorted and unique."""
    found: set[str] = set()
    for path in _config_files(root):
        try:
            with open(path, "rb") as handle:
                data = handle.read(_MAX_CONFIG_BYTES + 1)
        except OSError:
            continue
        if len(data) > _MAX_CONFIG_BYTES or b"_target_" not in data:
            continue
        found.update(_TARGET.findall(data.decode("utf-8", "replace")))
    return tuple(sorted(found))


def _config_folders(root: str) -> list[str]:
    folders = []
    for parent in (root, os.path.join(root, "src")):
        try:
            entries = sorted(os.scandir(parent), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or entry.name.startswith("."):
                continue
            if entry.name in CONFIG_FOLDERS:
                folders.append(entry.path)
            elif parent == root and run_record.isfile(os.path.join(entry.path, "__init__.py")):
                folders += [os.path.join(entry.path, name) for name in sorted(CONFIG_FOLDERS)
                            if run_record.isdir(os.path.join(entry.path, name))]
    return folders


def _config_files(root: str) -> list[str]:
    files: list[str] = []
    for top in _config_folders(root):
        for folder, subfolders, names in os.walk(top):
            subfolders[:] = sorted(s for s in subfolders if not s.startswith("."))
            files += [os.path.join(folder, n) for n in sorted(names) if n.endswith((".yaml", ".yml"))]
            if len(files) >= _MAX_CONFIG_FILES:
                return files[:_MAX_CONFIG_FILES]
    return files
