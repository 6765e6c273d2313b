"""A whole run's answer, kept for the next run whose inputs are all unchanged.

A warm run over an unchanged tree (a pre-commit hook on a clean checkout, CI run again)
otherwise walks the tree, loads each project's store and solution and builds a cache key
per file, only to find every file's findings in the cache. The record of a run holds its
findings and warnings, and every input the run read:

- the files it opened for reading, found by Python's audit hook (`open` events: mplint's
  own readers, the project store, pins, Dockerfiles, READMEs, keras.json...), with their
  size and modification time (None: it did not exist);
- the folders it listed (`os.listdir`/`os.scandir` events: the walk, project roots),
  with a hash of their names, so a file added or removed anywhere the run looked shows;
- the paths it only probed (`.git`, a config file that may appear above the tree), by
  what they are (file, folder, nothing): `isfile`/`isdir`/`exists` below;
- every file the run checked and every module of their projects (warm runs only stat
  them), whether read this time or not.

The key of a record is everything else a run depends on: mplint's version, the working
folder, the paths and options of the command line, the configuration overrides, the
environment variables mplint reads and the installed TensorFlow/Keras.

A record is written only by a run that read every input itself: the first run of a
process (a long-running server or language server has read project files before and
keeps what it read; `disable` says so), without `--fix`, `--diff`, `--add-noqa`,
`--verbose` or stdin, with no usage error and no internal error, and whose files were
all modified at least `RACY_SECONDS` earlier (as in the findings cache: a file written
again within the filesystem's time resolution keeps its time). Worker processes record
what they read while checking a file and hand it back with the file's result.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from mplint import __version__
from mplint.inputs.cache import CACHE_DIR, RACY_SECONDS, write_json

RECORDS_KEPT = 8  # per cache folder: a few command lines (the whole tree, one folder, ...)
_ENVIRONMENT_PREFIXES = ("KERAS_", "TF_", "MPLINT_")
_IGNORED_VARIABLES = frozenset({"MPLINT_NO_SERVER", "MPLINT_SERVER_DIR"})  # where the run happens, not what it says
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@dataclass
class Inputs:
    """What a run read, each with its state when first read (None for a file the run
    names without reading it here: it is stated when the record is written)."""

    files: dict[str, list[int] | None] = field(default_factory=dict)
    folders: dict[str, str | None] = field(default_factory=dict)
    probes: dict[str, str] = field(default_factory=dict)
    started: float = field(default_factory=time.time)  # when the recording began

    def add_files(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.files.setdefault(path, None)

    def merge(self, other: "Inputs | tuple") -> None:
        files, folders, probes = other.frozen() if isinstance(other, Inputs) else other
        for mine, theirs in ((self.files, files), (self.folders, folders), (self.probes, probes)):
            for path, state in theirs:
                if mine.get(path) is None:
                    mine[path] = state

    def frozen(self) -> tuple:
        return tuple(self.files.items()), tuple(self.folders.items()), tuple(self.probes.items())


_active: Inputs | None = None
_hook_installed = False
_clean = True  # nothing was read in this process before the first recording
_in_hook = False  # the hook's own listing and stat raise events too


def may_write() -> bool:
    """Whether a run of this process may write a record (nothing read before it)."""
    return _clean


def disable() -> None:
    """This process has read project files before (a server, a language server): its
    runs may use records, never write one."""
    global _clean
    _clean = False


def _audit(event: str, args: tuple) -> None:
    global _in_hook
    inputs = _active
    if inputs is None or _in_hook or event not in ("open", "os.listdir", "os.scandir"):
        return
    _in_hook = True
    try:
        if event == "open":
            path, mode, flags = args
            if path is None or isinstance(path, int):
                return
            if mode is None:
                if isinstance(flags, int) and flags & _WRITE_FLAGS:
                    return
            elif any(c in mode for c in "wax+"):
                return
            path = os.path.abspath(os.fsdecode(path))
            if path not in inputs.files and not _ignored(path):
                inputs.files[path] = _file_state(path)
        else:
            path = args[0] if args else None
            if isinstance(path, int):
                return
            path = os.path.abspath(os.fsdecode(path) if path is not None else ".")
            if path not in inputs.folders and not _ignored(path):
                inputs.folders[path] = _folder_state(path)
    finally:
        _in_hook = False


def note_probe(path: str) -> None:
    if _active is not None:
        path = os.path.abspath(path)
        if path not in _active.probes:
            _active.probes[path] = _probe_state(path)


def isfile(path: str) -> bool:
    note_probe(path)
    return os.path.isfile(path)


def isdir(path: str) -> bool:
    note_probe(path)
    return os.path.isdir(path)


def exists(path: str) -> bool:
    note_probe(path)
    return os.path.exists(path)


@contextmanager
def recording() -> Iterator[Inputs]:
    """Record what this process reads until the block ends (nested blocks record into
    their own set: a file's check within a run)."""
    global _active, _hook_installed
    if not _hook_installed:
        sys.addaudithook(_audit)
        _hook_installed = True
    outer, _active = _active, Inputs()
    try:
        yield _active
    finally:
        inner, _active = _active, outer
        if outer is not None:
            outer.merge(inner)


def recorded_while(work) -> tuple[Any, tuple]:
    """(work(), what it read), recorded only inside a recording (a worker's file)."""
    if _active is None:
        return work(), ((), (), ())
    with recording() as inputs:
        result = work()
    return result, inputs.frozen()


# -- the state of the inputs ---------------------------------------------------------------

def _file_state(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_size]


def _folder_state(path: str) -> str | None:
    """A hash of the folder's names (the caches' own folder aside: a run creates it)."""
    try:
        names = sorted(n for n in os.listdir(path) if n != CACHE_DIR)
    except OSError:
        return None
    return hashlib.blake2b("\0".join(names).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


def _probe_state(path: str) -> str:
    if os.path.isdir(path):
        return "folder"
    if os.path.isfile(path):
        return "file"
    return "other" if os.path.lexists(path) else "none"


def _ignored(path: str) -> bool:
    """The caches' own files (the run writes them) and the system's pseudo-files."""
    return f"{os.sep}{CACHE_DIR}" in path or path.startswith(("/proc/", "/dev/", "/sys/"))


def _states_now(inputs: Inputs) -> dict[str, dict[str, Any]] | None:
    """The inputs' states for the record; None if one changed while the run read it (or
    changed so recently that a later write may keep its time)."""
    limit = (inputs.started - RACY_SECONDS) * 1e9
    files: dict[str, Any] = {}
    for path, first in reversed(list(inputs.files.items())):  # the checked files, added last, first
        if _ignored(path):
            continue
        now = _file_state(path)
        if (first is not None and now != first) or (now is not None and now[0] >= limit):
            return None
        files[path] = now
    folders = _same_as_first(inputs.folders, _folder_state)
    probes = _same_as_first(inputs.probes, _probe_state)
    if folders is None or probes is None:
        return None
    return {"files": files, "folders": folders, "probes": probes}


def _same_as_first(first_states: dict[str, Any], state_of) -> dict[str, Any] | None:
    """The states now, if each is what it was when the run first read it."""
    now = {path: state_of(path) for path in first_states}
    return now if now == first_states else None


def _unchanged(states: dict[str, dict[str, Any]]) -> bool:
    for path, state in states.get("files", {}).items():
        if _file_state(path) != state:
            return False
    for path, state in states.get("folders", {}).items():
        if _folder_state(path) != state:
            return False
    return all(_probe_state(path) == state for path, state in states.get("probes", {}).items())


# -- records ---------------------------------------------------------------------------------

def run_key(paths: Iterable[str], force_exclude: bool, configuration: str, environment: str) -> str:
    """What a run's answer depends on besides the files it reads: `configuration` is
    the command line's settings (`ConfigResolver.fingerprint`), `environment` the
    installed TensorFlow and Keras (`mplint.facts.target.environment_fingerprint`)."""
    variables = sorted((k, v) for k, v in os.environ.items()
                       if k.startswith(_ENVIRONMENT_PREFIXES) and k not in _IGNORED_VARIABLES)
    return json.dumps([
        __version__, os.getcwd(), list(paths), configuration, force_exclude,
        variables, os.environ.get("HOME"), environment,
    ])


def _records_folder(root: str) -> str:
    return os.path.join(root, CACHE_DIR, __version__, "runs")


def _record_path(root: str, key: str) -> str:
    """One file per key: a run reads only its own record (a one-file run need not parse
    the whole tree's)."""
    name = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()
    return os.path.join(_records_folder(root), f"{name}.json")


def load(root: str, key: str) -> dict[str, Any] | None:
    """The answer of the last run under `key`, if none of its inputs changed since."""
    try:
        with open(_record_path(root, key), encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != key or not isinstance(record.get("inputs"), dict):
        return None
    try:
        return record if _unchanged(record["inputs"]) else None
    except (TypeError, ValueError, AttributeError):
        return None


def save(root: str, key: str, inputs: Inputs, answer: dict[str, Any]) -> str | None:
    """Keep a run's answer; a warning if it could not be written. Nothing is kept when
    this process had read files before, or when an input changed too recently. The
    folder keeps the `RECORDS_KEPT` most recent records."""
    if not _clean:
        return None
    states = _states_now(inputs)
    if states is None:
        return None
    folder = _records_folder(root)
    try:
        write_json(folder, _record_path(root, key), {"key": key, "inputs": states, **answer})
        kept = sorted((e for e in os.scandir(folder) if e.name.endswith(".json")), key=lambda e: e.stat().st_mtime_ns)
        for entry in kept[:-RECORDS_KEPT]:
            os.unlink(entry.path)
    except OSError as exc:
        return f"run record not written: {exc.strerror or exc}"
    return None


def finished_run() -> None:
    """A run of this process has read (and memoised) project files: later runs of the
    same process do not read them again, so they may not write records."""
    disable()
