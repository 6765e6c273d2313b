"""`[tool.mplint]` (pyproject.toml) or `mplint.toml`: loading, validation, discovery.

Every key is checked: an unknown key, an unknown rule code or a bad value is a
`ConfigError` that names the file and the key (the CLI exits 2 with it).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable

from mplint.core.selection import is_enabled, parse_codes, unknown_codes

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "build", "dist",
    "node_modules", "__pycache__", "site-packages", ".mplint_cache", ".ipynb_checkpoints",
    ".mypy_cache", ".pytest_cache",
)
TARGETS = ("auto", "keras2", "keras3")
ASSUMABLE_POLICIES = ("mixed_float16", "mixed_bfloat16")
CONFIG_KEYS = (
    "select", "ignore", "extend-select", "per-file-ignores", "exclude", "target",
    "assume-policy", "tensor-core-multiple", "extended", "fail-on", "min-severity",
)
SEVERITIES = ("info", "warning", "error")  # lowest first


class ConfigError(Exception):
    """A configuration problem; the message names the file and key."""


@dataclass(frozen=True)
class FileSettings:
    """Everything the engine needs to know about one file's configuration."""

    codes: frozenset[str]
    target: str = "auto"
    assumed_policy: str | None = None
    tensor_core_multiple: int = 8
    details: bool = False  # also report the Keras target and policy used (--verbose)
    # Also report the extended tier: findings with an assumed or conflicting premise.
    extended: bool = False

    def fingerprint(self) -> str:
        """Stable across processes (unlike the repr of a frozenset)."""
        return json.dumps(
            [sorted(self.codes), self.target, self.assumed_policy, self.tensor_core_multiple, self.extended]
        )


@dataclass(frozen=True)
class Settings:
    root: str = field(default_factory=os.getcwd)  # folder relative globs are matched from
    config_file: str | None = None
    select: tuple[str, ...] = ("ALL",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()  # added to DEFAULT_EXCLUDE
    target: str = "auto"
    assume_policy: tuple[tuple[str, str], ...] = ()  # (glob, policy); glob "**" = every file
    tensor_core_multiple: int = 8
    extended: bool = False  # report the extended tier too (findings on unproved premises)
    fail_on: str = "warning"  # the lowest severity that makes the run exit 1
    min_severity: str = "info"  # the lowest severity reported

    # -- rule selection ------------------------------------------------------------
    def enabled(self, code: str) -> bool:
        return is_enabled(code, self.select + self.extend_select, self.ignore)

    def ignored_for(self, relpath: str) -> tuple[str, ...]:
        """Codes switched off for one file by per-file-ignores."""
        codes: list[str] = []
        for pattern, pattern_codes in self.per_file_ignores:
            if glob_match(pattern, relpath):
                codes.extend(pattern_codes)
        return tuple(codes)

    def codes_for(self, relpath: str, all_codes: Iterable[str]) -> frozenset[str]:
        return _enabled_codes(self.select + self.extend_select, self.ignore + self.ignored_for(relpath),
                              tuple(all_codes))

    def for_file(self, path: str, all_codes: Iterable[str], details: bool = False) -> FileSettings:
        rel = self.relpath(path)
        return FileSettings(
            codes=self.codes_for(rel, all_codes),
            target=self.target,
            assumed_policy=self.assumed_policy(rel),
            tensor_core_multiple=self.tensor_core_multiple,
            details=details,
            extended=self.extended,
        )

    def assumed_policy(self, relpath: str) -> str | None:
        for pattern, policy in self.assume_policy:
            if pattern == "**" or glob_match(pattern, relpath):
                return policy
        return None

    def relpath(self, path: str) -> str:
        """`path` relative to the config root, POSIX-style (for globs)."""
        try:
            rel = os.path.relpath(os.path.abspath(path), self.root)
        except ValueError:
            rel = path
        return rel.replace(os.sep, "/")

    def describe(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["exclude"] = list(DEFAULT_EXCLUDE) + list(self.exclude)
        return data


@lru_cache(maxsize=256)
def _enabled_codes(select: tuple[str, ...], ignore: tuple[str, ...], codes: tuple[str, ...]) -> frozenset[str]:
    return frozenset(c for c in codes if is_enabled(c, select, ignore))


@lru_cache(maxsize=512)
def _spec(pattern: str):
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def glob_match(pattern: str, relpath: str) -> bool:
    """gitignore-style match of a POSIX relative path (a pattern without `/` matches
    at any depth; `dir/` matches everything below dir)."""
    return _spec(pattern).match_file(relpath)


# -- loading ---------------------------------------------------------------------------

def _known_codes() -> list[str]:
    from mplint.core.codes import all_codes

    return all_codes()


def validated_codes(value: Any, where: str, list_only: bool = False) -> tuple[str, ...]:
    """Rule codes/prefixes from a string (the command line) or a list (the configuration,
    `list_only`); ConfigError naming `where` if unknown, empty, or an engine code."""
    if isinstance(value, str) and not list_only:
        codes = parse_codes(value)
        if not codes:
            raise ConfigError(f"{where}: no rule code given (to turn every rule off, use --ignore MP)")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        codes = parse_codes(value)
    else:
        raise ConfigError(f"{where}: expected a list of rule codes, got {value!r}")
    engine = [c for c in codes if c.upper() in ENGINE_CODES]
    if engine:
        raise ConfigError(f"{where}: {engine[0]} is an engine code (unreadable file, internal error): it is always "
                          "reported and cannot be selected or ignored")
    bad = unknown_codes(codes, _known_codes())
    if bad:
        raise ConfigError(f"{where}: unknown rule code {', '.join(bad)}")
    return tuple(codes)


ENGINE_CODES = ("MP000", "MP900")


def per_file_ignores_option(values: Iterable[str], where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`--per-file-ignores` as ruff spells it: `PATTERN:CODE` pairs, comma-separated
    or repeated (`'tests/**:MP3,__init__.py:MP101'`); one pattern's pairs are merged."""
    merged: dict[str, list[str]] = {}
    for value in values:
        for item in value.split(","):
            pattern, sep, code = item.strip().rpartition(":")
            if not sep or not pattern or not code:
                raise ConfigError(f"{where}: expected <FilePattern>:<RuleCode>, got {item.strip()!r}")
            merged.setdefault(pattern, []).extend(validated_codes(code, f"{where} {pattern!r}"))
    return tuple((pattern, tuple(codes)) for pattern, codes in merged.items())


def settings_from_table(table: dict[str, Any], source: str, root: str) -> Settings:
    """Validate a `[tool.mplint]` table into Settings."""
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.mplint] must be a table")
    unknown = sorted(set(table) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(
            f"{source}: unknown key {unknown[0]!r} (known keys: {', '.join(CONFIG_KEYS)})"
        )
    values: dict[str, Any] = {"root": root, "config_file": source}
    if "select" in table:
        values["select"] = validated_codes(table["select"], f"{source}: select", list_only=True)
    if "extend-select" in table:
        values["extend_select"] = validated_codes(table["extend-select"], f"{source}: extend-select", list_only=True)
    if "ignore" in table:
        values["ignore"] = validated_codes(table["ignore"], f"{source}: ignore", list_only=True)
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{source}: per-file-ignores: expected a table of glob = [codes]")
        values["per_file_ignores"] = tuple(
            (str(glob), validated_codes(codes, f"{source}: per-file-ignores[{glob!r}]")) for glob, codes in pfi.items()
        )
    if "exclude" in table:
        exclude = table["exclude"]
        if not isinstance(exclude, list) or not all(isinstance(e, str) for e in exclude):
            raise ConfigError(f"{source}: exclude: expected a list of globs, got {exclude!r}")
        values["exclude"] = tuple(exclude)
    if "target" in table:
        values["target"] = check_target(table["target"], f"{source}: target")
    if "assume-policy" in table:
        values["assume_policy"] = _assume_policy(table["assume-policy"], f"{source}: assume-policy")
    if "tensor-core-multiple" in table:
        multiple = table["tensor-core-multiple"]
        if isinstance(multiple, bool) or not isinstance(multiple, int) or multiple < 1:
            raise ConfigError(f"{source}: tensor-core-multiple: expected a positive integer, got {multiple!r}")
        values["tensor_core_multiple"] = multiple
    for key in ("fail-on", "min-severity"):
        if key in table:
            values[key.replace("-", "_")] = check_severity(table[key], f"{source}: {key}")
    if "extended" in table:
        if not isinstance(table["extended"], bool):
            raise ConfigError(f"{source}: extended: expected true or false, got {table['extended']!r}")
        values["extended"] = table["extended"]
    return Settings(**values)


def check_severity(value: Any, where: str) -> str:
    if value not in SEVERITIES:
        raise ConfigError(f"{where}: expected one of {', '.join(SEVERITIES)}, got {value!r}")
    return value


def check_target(value: Any, where: str) -> str:
    if value not in TARGETS:
        raise ConfigError(f"{where}: expected one of {', '.join(TARGETS)}, got {value!r}")
    return value


def _assume_policy(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    def check(policy: Any, key: str) -> str:
        if policy not in ASSUMABLE_POLICIES:
            raise ConfigError(f"{key}: expected one of {', '.join(ASSUMABLE_POLICIES)}, got {policy!r}")
        return policy

    if isinstance(value, str):
        return (("**", check(value, where)),)
    if isinstance(value, dict):
        return tuple((str(glob), check(policy, f"{where}[{glob!r}]")) for glob, policy in value.items())
    raise ConfigError(f"{where}: expected a policy name or a table of glob = policy, got {value!r}")


def _read_toml(path: str) -> dict[str, Any]:
    import tomllib
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def load_config_file(path: str) -> Settings:
    """Settings from an explicit file (`--config`): mplint.toml or pyproject.toml."""
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: config file not found")
    data = _read_toml(path)
    root = os.path.dirname(os.path.abspath(path))
    if os.path.basename(path) == "pyproject.toml" or "tool" in data:
        table = data.get("tool", {}).get("mplint")
        if table is None:
            raise ConfigError(f"{path}: no [tool.mplint] table")
        return settings_from_table(table, path, root)
    return settings_from_table(data, path, root)


def _config_in(folder: str) -> str | None:
    from mplint.inputs.run_record import isfile  # a config may appear above the tree later

    candidate = os.path.join(folder, "mplint.toml")
    if isfile(candidate):
        return candidate
    candidate = os.path.join(folder, "pyproject.toml")
    if isfile(candidate):
        try:
            with open(candidate, "rb") as handle:
                head = handle.read()
        except OSError:
            return None
        if b"[tool.mplint" in head or b"tool.mplint" in head:
            return candidate
    return None


def assumed_policy_for(resolver: "ConfigResolver") -> Callable[[str], str | None]:
    """The policy the configuration assumes for a path (`assume-policy`), or None."""

    answers: dict[str, str | None] = {}  # a project asks again for each of its modules' callers

    def assumed_for(path: str) -> str | None:
        if path not in answers:
            settings = resolver.for_path(path)
            answers[path] = settings.assumed_policy(settings.relpath(path)) if settings.assume_policy else None
        return answers[path]

    return assumed_for


class ConfigResolver:
    """Finds the settings for each path: nearest config upward, cached per folder.

    With an explicit config (`--config`) every path uses it. CLI overrides are applied
    on top of whatever is found.
    """

    def __init__(self, explicit: str | None = None, overrides: dict[str, Any] | None = None) -> None:
        self._overrides = overrides or {}
        self._by_folder: dict[str, Settings] = {}
        self._by_path: dict[str, Settings] = {}
        self._explicit = self._apply(load_config_file(explicit)) if explicit else None
        self._default: Settings | None = None

    def _apply(self, settings: Settings) -> Settings:
        """CLI options over file settings, as in ruff: `select` and `per_file_ignores`
        replace (a CLI --select also drops the file's extend-select); `add_select`,
        `add_ignore` and `add_per_file_ignores` add to what the file has."""
        if not self._overrides:
            return settings
        overrides = dict(self._overrides)
        add_select = tuple(overrides.pop("add_select", ()))
        add_ignore = tuple(overrides.pop("add_ignore", ()))
        add_per_file_ignores = tuple(overrides.pop("add_per_file_ignores", ()))
        if "select" in overrides:
            overrides.setdefault("extend_select", ())
        settings = dataclasses.replace(settings, **overrides)
        return dataclasses.replace(
            settings,
            extend_select=settings.extend_select + add_select,
            ignore=settings.ignore + add_ignore,
            per_file_ignores=settings.per_file_ignores + add_per_file_ignores,
        )

    def fingerprint(self) -> str:
        """The command line's part of the settings (its config file and overrides)."""
        return json.dumps([self.explicit_file, sorted((k, repr(v)) for k, v in self._overrides.items())])

    @property
    def explicit_file(self) -> str | None:
        return os.path.abspath(self._explicit.config_file) if self._explicit is not None and \
            self._explicit.config_file else None

    def for_path(self, path: str) -> Settings:
        if self._explicit is not None:
            return self._explicit
        settings = self._by_path.get(path)
        if settings is None:  # once per path and run (a stat and a path walk each time otherwise)
            folder = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path) or ".")
            settings = self._by_path[path] = self._for_folder(folder)
        return settings

    def _for_folder(self, folder: str) -> Settings:
        cached = self._by_folder.get(folder)
        if cached is not None:
            return cached
        found = _config_in(folder)
        if found is not None:
            settings = self._apply(load_config_file(found))
        else:
            parent = os.path.dirname(folder)
            if parent == folder:
                if self._default is None:
                    self._default = self._apply(Settings(root=os.getcwd()))
                settings = self._default
            else:
                settings = self._for_folder(parent)
        self._by_folder[folder] = settings
        return settings
