"""A cache of what each file said last time: re-checking unchanged files is nearly free.

`.mplint_cache/<version>/findings.json` in the project root maps each file's absolute
path to:

- `digest`: a hash of its bytes, and `stat`: its size and modification time when it was
  read (only when that time was at least `RACY_SECONDS` old, so a file written again
  within the filesystem's time resolution is never mistaken for the one read);
- `scan`: what the runner's first pass learned from it (whether it needs the engine,
  whether it mentions Keras), with the
  assume-policy flag it was learned under;
- `key` and `findings`: the findings of the engine, under a key made of the digest,
  the file's settings and what outside the file can change the result.

A file whose size and modification time are unchanged is not even read: its scan and its
findings come from here. The file is rewritten atomically at the end of a run; a broken
cache is ignored, not fatal.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from mplint import __version__
from mplint.core.diagnostics import Finding

CACHE_DIR = ".mplint_cache"
RACY_SECONDS = 2.0  # a modification time this recent may hide a second write


def write_json(folder: str, path: str, data: Any) -> None:
    """Write `data` to `path` in `folder` (under `.mplint_cache/`) atomically, creating the
    folder and a `.gitignore` that keeps the cache out of version control. OSError on
    failure."""
    import tempfile

    os.makedirs(folder, exist_ok=True)
    gitignore = os.path.join(os.path.dirname(folder), ".gitignore")
    if not os.path.exists(gitignore):
        with open(gitignore, "w", encoding="utf-8") as handle:
            handle.write("# Created by mplint\n*\n")
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    payload = json.dumps(data, separators=(",", ":"))  # dumps, not dump: only the one-shot encoder runs in C
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(payload)
    os.replace(tmp, path)


def file_digest(data: bytes) -> str:
    import hashlib

    return hashlib.blake2b(data, digest_size=16).hexdigest()


def findings_key(digest: str, *parts: str) -> str:
    """The key findings are stored under: the content and everything else they depend on."""
    import hashlib

    key = hashlib.blake2b(digest.encode(), digest_size=16)
    for part in parts:
        key.update(b"\0" + part.encode())
    return key.hexdigest()


def file_stat(path: str) -> tuple[int, int] | None:
    """(size, modification time in ns), or None if it cannot be trusted to detect a change
    (the file is missing, or was modified too recently)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if info.st_mtime_ns > time.time_ns() - RACY_SECONDS * 1e9:
        return None
    return info.st_size, info.st_mtime_ns


@dataclass(frozen=True)
class Scan:
    """What the runner's first pass learned from a file (see runner._scan)."""

    assumed: bool  # learned with an assumed policy
    needs_parse: bool
    mentions_keras: bool

    def to_json(self) -> list:
        return [self.assumed, self.needs_parse, self.mentions_keras]

    @classmethod
    def from_json(cls, data: list) -> "Scan":
        assumed, needs, keras = data[:3]
        return cls(bool(assumed), bool(needs), bool(keras))


class Cache:
    def __init__(self, root: str) -> None:
        self.folder = os.path.join(root, CACHE_DIR, __version__)
        self.path = os.path.join(self.folder, "findings.json")
        self._entries: dict[str, dict[str, Any]] = {}
        self._dirty = False
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, dict) and isinstance(data.get("entries"), dict):
                self._entries = data["entries"]
        except (OSError, ValueError):
            self._entries = {}

    # -- the first pass ----------------------------------------------------------------
    def scan_of(self, path: str, stat: tuple[int, int] | None, assumed: bool) -> tuple[Scan, str] | None:
        """The scan and digest stored for a file that has not changed since (same size and
        modification time), learned under the same assume-policy flag."""
        if stat is None:
            return None
        entry = self._entries.get(os.path.abspath(path))
        if entry is None or entry.get("stat") != list(stat) or "scan" not in entry:
            return None
        try:
            scan = Scan.from_json(entry["scan"])
        except (TypeError, ValueError):
            return None
        return (scan, entry["digest"]) if scan.assumed == assumed else None

    def put_scan(self, path: str, stat: tuple[int, int] | None, digest: str, scan: Scan) -> None:
        absolute = os.path.abspath(path)
        entry = self._entries.get(absolute)
        if entry is None or entry.get("digest") != digest:
            entry = self._entries[absolute] = {"digest": digest}  # new content: old findings go
        entry["stat"] = list(stat) if stat is not None else None
        entry["scan"] = scan.to_json()
        self._dirty = True

    def digest_of(self, path: str, stat: tuple[int, int] | None) -> str | None:
        """The digest of an unchanged file, without reading it."""
        if stat is None:
            return None
        entry = self._entries.get(os.path.abspath(path))
        if entry is None or entry.get("stat") != list(stat):
            return None
        return entry.get("digest")

    def has(self, path: str) -> bool:
        return os.path.abspath(path) in self._entries

    # -- findings ----------------------------------------------------------------------
    def get(self, path: str, key: str, filename: str) -> list[Finding] | None:
        entry = self._entries.get(os.path.abspath(path))
        if entry is None or entry.get("key") != key:
            return None
        try:
            return [Finding.from_json(f, filename) for f in entry["findings"]]
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, path: str, key: str, findings: list[Finding], digest: str | None = None) -> None:
        absolute = os.path.abspath(path)
        entry = self._entries.get(absolute)
        if entry is None or (digest is not None and entry.get("digest") != digest):
            entry = self._entries[absolute] = {"digest": digest}  # a fixed file: its new content
        entry["key"] = key
        entry["findings"] = [f.cache_json() for f in findings]
        self._dirty = True

    def save(self) -> str | None:
        """Write the cache; returns a warning message if it could not be written."""
        if not self._dirty:
            return None
        try:
            write_json(self.folder, self.path, {"version": __version__, "entries": self._entries})
        except OSError as exc:
            return f"cache not written to {self.folder}: {exc.strerror or exc}"
        return None
