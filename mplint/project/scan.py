"""The first, text-only look at every file of a project (no parsing).

It says what a file imports (for the import graph), which names it defines at the top
level, and the tokens the project facts care about: a policy set, a test file, the
Keras it targets (`TF_USE_LEGACY_KERAS`, `tf_keras`, Keras-2-only or Keras-3-only APIs),
the Keras backend it sets, the absl flags it defines. Cheap enough to run on every file
of a 10,000-file project; kept on disk by file size and modification time.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from mplint.facts.target import sets_legacy_keras

_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_DEFINITION = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
_SETS_POLICY = re.compile(r"(?<!def )\b(?:set_global_policy|set_dtype_policy|set_policy|policy_scope)[ \t]*\(")
_TF_KERAS = re.compile(r"^[ \t]*(?:import[ \t]+tf_keras\b|from[ \t]+tf_keras\b)", re.M)
_KERAS2_ONLY = re.compile(r"\boptimizers\.legacy\b|^[ \t]*(?:import|from)[ \t]+tensorflow_addons\b", re.M)
_KERAS3_ONLY = re.compile(r"\bkeras\.(?:ops|config|random|tree|DTypePolicy|dtype_policies)\b")
_BACKEND = re.compile(r"""KERAS_BACKEND['"]?\s*(?:\]\s*=|,)\s*['"](\w+)['"]""")
_FLAG = re.compile(r"""\bDEFINE_\w+\(\s*(?:name\s*=\s*)?['"](\w+)['"]""")

_TEST_FOLDERS = frozenset({"tests", "test", "testing"})


@dataclass
class FileScan:
    imports: list[tuple[int, str, list[str]]] = field(default_factory=list)  # (level, module, names)
    definitions: list[str] = field(default_factory=list)
    sets_policy: bool = False
    test: bool = False
    legacy_keras: bool = False  # sets TF_USE_LEGACY_KERAS
    tf_keras: bool = False
    keras2_only: bool = False
    keras3_only: bool = False
    backend: str | None = None  # KERAS_BACKEND it sets
    flags: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "FileScan":
        scan = cls(**data)
        scan.imports = [(level, module, list(names)) for level, module, names in scan.imports]
        return scan


def scan_text(text: str, path: str) -> FileScan:
    scan = FileScan(test=is_test_file(path))
    for match in _FROM_IMPORT.finditer(text):
        level = len(match.group(1))
        names = [n.strip().split(" as ")[0].strip() for n in match.group(3).strip("()").replace("\\", " ").split(",")]
        scan.imports.append((level, match.group(2), [n for n in names if n.isidentifier()]))
    for match in _IMPORT.finditer(text):
        for part in match.group(1).replace("\\", " ").split(","):
            module = part.strip().split(" as ")[0].strip()
            if module and all(p.isidentifier() for p in module.split(".")):
                scan.imports.append((0, module, []))
    scan.definitions = _DEFINITION.findall(text)
    scan.sets_policy = _SETS_POLICY.search(text) is not None
    scan.legacy_keras = sets_legacy_keras(text)
    scan.tf_keras = _TF_KERAS.search(text) is not None
    scan.keras2_only = _KERAS2_ONLY.search(text) is not None
    scan.keras3_only = "keras" in text and _KERAS3_ONLY.search(text) is not None
    backend = _BACKEND.search(text)
    scan.backend = backend.group(1) if backend else None
    scan.flags = sorted(set(_FLAG.findall(text)))
    return scan


def is_test_file(path: str) -> bool:
    """A test module: `test_*.py`, `*_test.py`, `conftest.py`, or under tests/test/testing."""
    normalised = path.replace("\\", "/")
    name = normalised.rsplit("/", 1)[-1]
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return bool(set(normalised.split("/")[:-1]) & _TEST_FOLDERS)
