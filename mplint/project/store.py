"""The project index's memory between runs: `.mplint_cache/<version>/project.json`.

Per file (by path under the project root): its size and modification time, the hash of
its content, and what was derived from it (the text scan, the `ast` table, the libcst
summary with what that summary relied on in other modules). An entry whose size and
time match is used without reading the file; one whose content hash matches keeps
what was derived from that content. A broken store is ignored, never fatal.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mplint import __version__
from mplint.inputs.cache import CACHE_DIR, file_digest, write_json

STORE_VERSION = "23"  # 23: flows read settings keys as flags (`config["training"].get("amp")`, `cfg.train.amp`: policy_flags); 22: scans read any Keras `experimental` namespace as Keras-2-era code (keras2_era); 21: summaries say which call arguments are written in the code (code); 20: tables keep configuration attributes set once (attribute_constants) and the attributes each module sets (stored_attributes); 19: scans say whether a module instantiates Hydra configs (instantiates_configs); 18: tables say which parameters each function trains or predicts with as a model (consumes); 17: tables keep functions that check TensorFlow's version (version_functions); 16: tables list import statements and whether only TF 1.x runs them (tf1_only_imports); 15: flows say which flags guard the settings of mixed_float16 (float16_flags); 14: tables keep module-level TensorFlow version flags (version_flags); 13: scans read more Keras-2-era names (keras2_era: `optimizers.experimental`, ...); 12: flows say which flags guard the module's mixed settings (policy_flags); 11: tables say which functions return float32 (float32_unless); 10: scans say whether a file has Keras-2-era code (keras2_era); 9: scans keep the text match for a training call (training_call) and whether the file names a half dtype (half), tables the imported names never read; 8 (this round only): scans said whether a module trains; 7: scans say whether a float16 Keras policy is named; 6: summary variants; 5: tables list the names a module calls; 4: a policy setter is a call in the parse


class Store:
    def __init__(self, root: str, enabled: bool = True) -> None:
        self.root = root
        self.enabled = enabled
        self.folder = os.path.join(root, CACHE_DIR, __version__)
        self.path = os.path.join(self.folder, "project.json")
        self.entries: dict[str, dict[str, Any]] = {}
        self._dirty = False
        if not enabled:
            return
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, dict) and data.get("store") == STORE_VERSION and isinstance(data.get("files"), dict):
                self.entries = data["files"]
        except (OSError, ValueError):
            self.entries = {}

    def entry(self, relpath: str, stat: tuple[int, int]) -> dict[str, Any] | None:
        """The entry of an unchanged file (same size and time), else None."""
        entry = self.entries.get(relpath)
        if entry is not None and entry.get("stat") == list(stat):
            return entry
        return None

    def fresh(self, relpath: str, stat: tuple[int, int], data: bytes) -> dict[str, Any]:
        """The entry for a file read now: kept if its content is the same, else new."""
        digest = file_digest(data)
        entry = self.entries.get(relpath)
        if entry is None or entry.get("hash") != digest:
            entry = {"hash": digest}
        entry["stat"] = list(stat)
        self.entries[relpath] = entry
        self._dirty = True
        return entry

    def adopt(self, entries: dict[str, dict[str, Any]]) -> None:
        """Entries derived by another process from the same files (a parallel solve,
        mplint.project.parallel_solve), taken as if read from disk: `entry` uses one only
        while its size and time match the file."""
        self.entries.update(entries)
        self._dirty = True

    def touched(self) -> None:
        self._dirty = True

    def save(self) -> str | None:
        if not (self.enabled and self._dirty):
            return None
        try:
            write_json(self.folder, self.path, {"store": STORE_VERSION, "files": self.entries})
        except OSError as exc:
            return f"project index not written to {self.folder}: {exc.strerror or exc}"
        self._dirty = False
        return None
