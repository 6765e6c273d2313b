"""A content-hash cache of findings: re-checking unchanged files is nearly free.

`.mplint_cache/<version>/findings.json` in the project root maps each file's
absolute path to the key it was checked under (hash of its bytes, its settings and
what outside the file can change the result) and the findings. Only files that
needed parsing are stored: the others cost a text scan either way. The file is
rewritten atomically at the end of a run; a broken cache is ignored, not fatal.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mplint import __version__
from mplint.diagnostics import Finding

CACHE_DIR = ".mplint_cache"


def content_key(data: bytes, *parts: str) -> str:
    import hashlib

    digest = hashlib.blake2b(data, digest_size=16)
    for part in parts:
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()


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

    def get(self, path: str, key: str, filename: str) -> list[Finding] | None:
        entry = self._entries.get(os.path.abspath(path))
        if entry is None or entry.get("key") != key:
            return None
        try:
            return [Finding.from_json(f, filename) for f in entry["findings"]]
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, path: str, key: str, findings: list[Finding]) -> None:
        self._entries[os.path.abspath(path)] = {"key": key, "findings": [f.cache_json() for f in findings]}
        self._dirty = True

    def save(self) -> str | None:
        """Write the cache; returns a warning message if it could not be written."""
        if not self._dirty:
            return None
        import tempfile

        try:
            os.makedirs(self.folder, exist_ok=True)
            gitignore = os.path.join(os.path.dirname(self.folder), ".gitignore")
            if not os.path.exists(gitignore):
                with open(gitignore, "w", encoding="utf-8") as handle:
                    handle.write("# Created by mplint\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            # dumps, not dump: only the one-shot encoder runs in C
            payload = json.dumps({"version": __version__, "entries": self._entries}, separators=(",", ":"))
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(tmp, self.path)
        except OSError as exc:
            return f"cache not written to {self.folder}: {exc.strerror or exc}"
        return None
