"""The values a project's configuration files give a key.

`config = toml.load("config.toml")` ... `if config["training"].get("use_mixed_precision"):
set_global_policy("mixed_float16")` sets the policy only where the configuration says so.
A project ships its configurations (`config.toml`, `configs/*.yaml`, `params.json`): where
every one that names the key sets it false, the mixed policy is what a user may turn on,
not what the project runs.

This reads `key = value` (TOML, INI), `key: value` (YAML) and `"key": value` (JSON) lines
as text, in the project's TOML, YAML, JSON, INI and CFG files (tool configurations such as
`pyproject.toml`, `setup.cfg`, `tox.ini` and `package.json` aside; hidden and virtual
environment folders skipped). Comments never count: a value is read up to a `#`.
"""

from __future__ import annotations

import os
import re

from mplint.facts.project_context import ConfigValue

_SUFFIXES = (".toml", ".yaml", ".yml", ".json", ".ini", ".cfg")
_TOOL_FILES = frozenset({"pyproject.toml", "setup.cfg", "tox.ini", "package.json", "package-lock.json",
                         "tsconfig.json", ".pre-commit-config.yaml", "environment.yml", "environment.yaml",
                         "mkdocs.yml", "codecov.yml", "Pipfile.lock", "poetry.lock"})
_SKIPPED_FOLDERS = frozenset({"node_modules", "venv", "env", "site-packages", "__pycache__", "build", "dist"})
_MAX_FILES = 2000
_MAX_BYTES = 1_000_000
_MAX_TOTAL_BYTES = 20_000_000  # read in all, at most
_MAX_ENTRIES = 100_000  # files and folders walked, at most
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0", "null", "none", "~"})


def configuration_files(root: str) -> list[str]:
    """The project's configuration files, sorted, at most `_MAX_FILES`."""
    files: list[str] = []
    seen = 0
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(s for s in subfolders if not s.startswith(".") and s not in _SKIPPED_FOLDERS)
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(_SUFFIXES) and n not in _TOOL_FILES]
        seen += len(names) + len(subfolders)
        if len(files) >= _MAX_FILES or seen >= _MAX_ENTRIES:
            return files[:_MAX_FILES]
    return files


def configured_values(files: list[str], key: str) -> list[ConfigValue]:
    """Every value the files give `key` (as a TOML/INI key, a YAML key or a JSON member)."""
    if not re.fullmatch(r"[A-Za-z_][\w-]*", key):
        return []
    spelled = re.escape(key)
    pattern = re.compile(rf"""^[ \t\-{{,]*["']?{spelled}["']?[ \t]*[:=][ \t]*(?P<value>[^#\r\n]*)""", re.MULTILINE)
    encoded = key.encode()
    found = []
    budget = _MAX_TOTAL_BYTES
    for path in files:
        if budget <= 0:
            break  # a data folder of JSON files: enough read
        try:
            with open(path, "rb") as handle:
                data = handle.read(_MAX_BYTES + 1)
        except OSError:
            continue
        budget -= len(data)
        if len(data) > _MAX_BYTES or encoded not in data:
            continue
        text = data.decode("utf-8", "replace")
        for match in pattern.finditer(text):
            row = text.count("\n", 0, match.start()) + 1
            found.append(ConfigValue(f"{os.path.relpath(path)}:{row}", _truth(match.group("value"))))
    return found


def _truth(raw: str) -> bool | None:
    value = raw.strip().rstrip(",").strip().strip("\"'").lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return None
