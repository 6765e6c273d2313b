"""What to verify: TARGET parsing, model entry points, and which Keras to run.

TARGET is `path/to/file.py[:callable]` or `package.module[:callable]`. Nothing here
imports the user's code or TensorFlow: entry points are found with `ast`, the Keras
choice like mplint's own target facts (`mplint.facts.target`).
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

ENTRY_POINTS = ("build_model", "create_model", "get_model", "make_model")
MODEL_ATTRIBUTE = "model"
TRAIN_STEP = "train_step"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class TargetError(Exception):
    """TARGET cannot be verified (exit 2); the message says why."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True)
class Target:
    text: str  # as the user wrote it
    kind: str  # "file" or "module"
    path: str | None  # the file (absolute), when known
    module: str | None  # the dotted module name (kind "module")
    attribute: str | None  # the callable or model named after ":"

    @property
    def display(self) -> str:
        return self.text


def parse_target(text: str, cwd: str | None = None) -> Target:
    cwd = cwd or os.getcwd()
    base, attribute = text, None
    if ":" in text:
        head, _, tail = text.rpartition(":")
        if head and _DOTTED.fullmatch(tail):
            base, attribute = head, tail
    looks_like_file = base.endswith(".py") or "/" in base or os.sep in base
    candidate = os.path.join(cwd, base)
    if looks_like_file or os.path.isfile(candidate):
        path = os.path.abspath(candidate)
        if os.path.isdir(path):
            raise TargetError("bad-target", f"{base} is a directory; name a Python file (path/to/file.py[:callable])")
        if not os.path.isfile(path):
            raise TargetError("target-not-found", f"no such file: {base}")
        return Target(text, "file", path, None, attribute)
    if not _DOTTED.fullmatch(base):
        raise TargetError(
            "bad-target", f"{text!r} is neither a Python file nor a module: use path/to/file.py[:callable] "
            "or package.module:callable"
        )
    return Target(text, "module", _module_file(base, cwd), base, attribute)


def _module_file(module: str, cwd: str) -> str | None:
    """The source file of a dotted module, looked up from cwd and PYTHONPATH (not imported)."""
    roots = [cwd] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    relative = module.replace(".", os.sep)
    for root in roots:
        for candidate in (relative + ".py", os.path.join(relative, "__init__.py")):
            path = os.path.join(root, candidate)
            if os.path.isfile(path):
                return os.path.abspath(path)
    return None


def entry_point(path: str) -> str | None:
    """What verify would start from in a file, found without running it: a model entry
    point defined or imported at module level, a module-level `model`, else a
    module-level `train_step` (a training script: verify finds the model it trains)."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    functions, assigned, imported = set(), set(), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        assigned.add(name.id)
        elif isinstance(node, ast.ImportFrom):
            imported.update(alias.asname or alias.name for alias in node.names)
    for name in ENTRY_POINTS:
        if name in functions or name in imported:
            return name
    if MODEL_ATTRIBUTE in assigned:
        return MODEL_ATTRIBUTE
    return TRAIN_STEP if TRAIN_STEP in functions else None


@dataclass(frozen=True)
class KerasChoice:
    legacy: bool | None  # TF_USE_LEGACY_KERAS=1 (True), unset (False), or left as it is (None)
    reason: str


def choose_keras(requested: str, path: str | None, other_python: bool) -> KerasChoice:
    """Keras 2 or 3 for the child, decided like `mplint check` decides a file's target.

    `--keras 2|3` wins. With `auto`, the file (TF_USE_LEGACY_KERAS, tf_keras imports,
    Keras-3-only names) and the project's pins decide; the installed versions decide
    only when the child runs this interpreter (another `--python` has its own, and its
    TensorFlow picks its own default Keras)."""
    if requested == "2":
        return KerasChoice(True, "--keras 2")
    if requested == "3":
        return KerasChoice(False, "--keras 3")
    if path is None:
        return KerasChoice(None, "auto: the module's file was not found; the child's TensorFlow decides")
    decision = _static_target(path)
    if decision is None:
        return KerasChoice(None, "auto: the file could not be read; the child's TensorFlow decides")
    from mplint.facts.target import KERAS2

    if decision.assumed and other_python:  # only the environment running mplint decided
        return KerasChoice(None, "auto: nothing in the file or project decides; the --python TensorFlow decides")
    return KerasChoice(decision.keras == KERAS2, f"auto: {decision.reason}")


def _static_target(path: str):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    from mplint.facts.target import decide_target

    try:
        import libcst as cst

        from mplint.facts.module import ModuleFacts

        return ModuleFacts(cst.parse_module(text), text, path).target
    except Exception:  # a file libcst cannot parse: decide from its text and project only
        return decide_target("auto", text, set(), set(), path)


BACKENDS = ("tensorflow", "jax", "torch")


@dataclass(frozen=True)
class BackendChoice:
    name: str  # the KERAS_BACKEND the child runs with
    reason: str


def choose_backend(requested: str, path: str | None) -> BackendChoice:
    """The Keras backend for the child: `--backend` wins; `auto` decides like `mplint
    check -v` (mplint.facts.backend: the file, its train steps, the project, the
    environment), else TensorFlow."""
    if requested != "auto":
        return BackendChoice(requested, f"--backend {requested}")
    if path is None:
        return BackendChoice("tensorflow", "auto: the module's file was not found")
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        import libcst as cst

        from mplint.facts.module import ModuleFacts

        decided = ModuleFacts(cst.parse_module(text), text, path).backend
    except Exception:  # unreadable or unparsable: the child reports the import error
        return BackendChoice("tensorflow", "auto: the file could not be read")
    if decided.name not in BACKENDS:
        return BackendChoice("tensorflow", f"auto: {decided.describe()} cannot train; TensorFlow instead")
    return BackendChoice(decided.name, f"auto: {decided.reason}")
