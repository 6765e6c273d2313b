"""Which Keras 3 backend a file runs on: tensorflow, jax or torch (numpy, openvino).

Keras picks its backend once, when `keras` is first imported: the `KERAS_BACKEND`
environment variable if it is set and not empty, else `"backend"` in
`$KERAS_HOME/keras.json` (`~/.keras/keras.json` by default), else `tensorflow`
(keras/src/backend/config.py). mplint decides per file, first match wins:

1. **the file** sets it, before Keras is imported: `os.environ["KERAS_BACKEND"] = "jax"`,
   `os.environ.setdefault(...)`, `os.environ.update(...)`, or calls
   `keras.config.set_backend("jax")` (which reloads Keras). A module-level setting that
   runs after the file has imported Keras changes nothing and does not count; neither
   does `os.putenv` (it leaves `os.environ`, which Keras reads, unchanged);
2. **the file's training code** can only run on one backend: `jax` calls or
   `optimizer.stateless_apply` in a `train_step` (`test_step`, `predict_step`), or
   torch (`loss.backward()`, `self.zero_grad()`, `torch.*`), or `tf.GradientTape`.
   Steps written for several backends decide nothing;
3. **the project** (`ProjectEvidence`, first match): a module of the project the file
   imports before Keras that sets `KERAS_BACKEND` (a config module); a `conftest.py`
   in the file's folder or above it, up to the project root, that sets it (pytest runs
   it before the tests); `KERAS_BACKEND=...` in a `.env` at the project root (exported
   by docker compose, pipenv, VS Code and python-dotenv's `load_dotenv()`); a
   `keras.json` at the project root or in its `.keras/` folder (the file Keras reads
   when `KERAS_HOME` points there). CI workflows, tox.ini and shell scripts do not count;
4. **the environment mplint runs in**: `KERAS_BACKEND`, then `$KERAS_HOME/keras.json`
   (`~/.keras/keras.json`), which is what Keras would read on this machine;
5. `tensorflow`, Keras's own default.

`decide_backend` takes the evidence of each step as input: the project's comes from
`project_evidence` (a scan of the file's folders) unless the caller supplies it (a
project index that already knows which modules set what).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Sequence

import libcst as cst

from mplint.analysis.calls import arg_value, string_value
from mplint.inputs import run_record

# ModuleFacts (mplint.facts.module) builds this fact and hands itself in: its type is
# named, not imported, so that module.py -> this module is the only import between them.
ModuleFacts = Any

TENSORFLOW, JAX, TORCH = "tensorflow", "jax", "torch"
BACKENDS = (TENSORFLOW, JAX, TORCH, "numpy", "openvino")
DEFAULT = TENSORFLOW
VARIABLE = "KERAS_BACKEND"

# Importing any of these imports Keras 3 (and so reads KERAS_BACKEND).
KERAS_PACKAGES = ("keras", "keras_hub", "keras_nlp", "keras_cv", "keras_rs", "keras_tuner")
SET_BACKEND = "keras.config.set_backend"
STEP_NAMES = ("train_step", "test_step", "predict_step")
# Attribute calls that only exist on one backend's training path.
JAX_METHODS = frozenset({"stateless_apply", "stateless_call", "stateless_compute_loss"})
TORCH_METHODS = frozenset({"backward", "zero_grad"})

_ENV_FILE_LINE = re.compile(r"^\s*(?:export\s+)?KERAS_BACKEND\s*=\s*['\"]?([A-Za-z_]*)['\"]?\s*(?:#.*)?$", re.M)
# How another file sets the variable (read as text: those files are not parsed).
_TEXT_SETTINGS = re.compile(
    r"""(?:environ\s*\[\s*['"]KERAS_BACKEND['"]\s*\]\s*=\s*|environ\.setdefault\(\s*['"]KERAS_BACKEND['"]\s*,\s*"""
    r"""|KERAS_BACKEND['"]?\s*[:=]\s*|set_backend\(\s*)['"]([A-Za-z_]+)['"]"""
)


@dataclass(frozen=True)
class Evidence:
    """One place that says which backend runs: `backend` None when it is set to a value
    mplint cannot read (a variable, a flag)."""

    backend: str | None
    reason: str


@dataclass(frozen=True)
class Backend:
    name: str  # one of BACKENDS
    reason: str
    source: str  # "file", "code", "project", "environment" or "default"

    @property
    def decided(self) -> bool:
        """Whether something in the code, the project or the environment says so."""
        return self.source != "default"

    def describe(self) -> str:
        return f"{self.name} ({self.reason})"


def decide_backend(
    file: Sequence[Evidence],
    code: Sequence[Evidence],
    project: Sequence[Evidence],
    environment: Sequence[Evidence] = (),
) -> Backend:
    """The backend in effect, from each step's evidence in order (see the module doc)."""
    notes: list[str] = []
    for source, found in (("file", file), ("code", code), ("project", project), ("environment", environment)):
        if source == "code" and len({e.backend for e in found}) > 1:
            notes.append("train steps for " + " and ".join(sorted({e.backend or "?" for e in found})))
            continue
        for evidence in found:
            if evidence.backend is not None:
                reason = evidence.reason + (f" ({'; '.join(notes)})" if notes else "")
                return Backend(evidence.backend, reason, source)
            notes.append(evidence.reason)
    reason = "Keras's default: nothing sets KERAS_BACKEND"
    return Backend(DEFAULT, reason + (f" ({'; '.join(notes)})" if notes else ""), "default")


def backend_of(facts: "ModuleFacts", project: Sequence[Evidence] | None = None) -> Backend:
    """The backend `facts`' module runs on; `project`: the project's evidence when the
    caller knows it (else the file's folders are scanned)."""
    if project is None:
        project = project_evidence(facts.path, local_imports_before_keras(facts))
    return decide_backend(file_settings(facts), code_evidence(facts), project, environment_evidence())


# -- 1. the file ---------------------------------------------------------------------------

def _value(facts: "ModuleFacts", node: cst.BaseExpression | None) -> str | None:
    text = string_value(node)
    if text is None and node is not None:
        resolved = facts.values.resolve(node)
        text = resolved.value if resolved is not None and isinstance(resolved.value, str) else None
    return text


def _is_variable_name(facts: "ModuleFacts", node: cst.BaseExpression | None) -> bool:
    return _value(facts, node) == VARIABLE


def _settings(facts: "ModuleFacts") -> Iterable[tuple[cst.CSTNode, cst.BaseExpression | None, str]]:
    """(node, value expression, how) for each place the file sets the backend."""
    names = facts.names
    for node in facts.index.nodes(cst.Assign):  # os.environ["KERAS_BACKEND"] = "jax"
        for target in node.targets:
            subscript = target.target
            if isinstance(subscript, cst.Subscript) and names.qualified(subscript.value) == "os.environ" \
                    and len(subscript.slice) == 1 and isinstance(subscript.slice[0].slice, cst.Index) \
                    and _is_variable_name(facts, subscript.slice[0].slice.value):
                yield node, node.value, "os.environ[...] ="
    for call in facts.index.nodes(cst.Call):
        qualified = names.qualified(call.func)
        if qualified == "os.environ.setdefault" and _is_variable_name(facts, arg_value(call, 0, "key")):
            yield call, arg_value(call, 1, "default"), "os.environ.setdefault"
        elif qualified == "os.environ.update":
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == VARIABLE:
                    yield call, arg.value, "os.environ.update"
                elif arg.keyword is None and isinstance(arg.value, cst.Dict):
                    for element in arg.value.elements:
                        if isinstance(element, cst.DictElement) and _is_variable_name(facts, element.key):
                            yield call, element.value, "os.environ.update"
        elif qualified == "os.putenv" and _is_variable_name(facts, arg_value(call, 0, "key")):
            yield call, arg_value(call, 1, "value"), "os.putenv"
        elif qualified == SET_BACKEND:
            yield call, arg_value(call, 0, "backend"), "keras.config.set_backend"


def _keras_imports(facts: "ModuleFacts") -> list[cst.CSTNode]:
    found = []
    for node in (*facts.index.nodes(cst.Import), *facts.index.nodes(cst.ImportFrom)):
        modules = []
        if isinstance(node, cst.Import):
            modules = [facts.module.code_for_node(a.name) for a in node.names]
        elif node.module is not None and not node.relative:
            modules = [facts.module.code_for_node(node.module)]
        if any(m.split(".", 1)[0] in KERAS_PACKAGES for m in modules):
            found.append(node)
    return found


def _too_late(facts: "ModuleFacts", node: cst.CSTNode, keras_imports: list[cst.CSTNode]) -> bool:
    """Whether Keras has been imported (and has read KERAS_BACKEND) before `node` runs."""
    function = facts.index.enclosing(node, cst.FunctionDef)
    for imported in keras_imports:
        inner = facts.index.enclosing(imported, cst.FunctionDef)
        if inner is None and (function is not None or facts.index.before(imported, node)):
            return True  # a module-level import runs before the function is called
        if inner is not None and inner is function and facts.index.before(imported, node):
            return True
    return False


def file_settings(facts: "ModuleFacts") -> list[Evidence]:
    """What the file itself sets, in source order."""
    keras_imports = _keras_imports(facts)
    found: list[Evidence] = []
    for node, value, how in _settings(facts):
        backend = _value(facts, value)
        where = how
        if how == "os.putenv":
            found.append(Evidence(None, f"the file's os.putenv({VARIABLE}) does not change os.environ, which Keras reads"))
        elif how != "keras.config.set_backend" and _too_late(facts, node, keras_imports):
            found.append(Evidence(None, f"the file sets {VARIABLE} with {where} after importing Keras: no effect"))
        elif backend is None:
            found.append(Evidence(None, f"the file sets {VARIABLE} with {where} to a value mplint cannot read"))
        elif backend not in BACKENDS:
            found.append(Evidence(None, f"the file sets {VARIABLE} with {where} to unknown backend {backend!r}"))
        else:
            found.append(Evidence(backend, f"the file sets {VARIABLE}={backend} with {where}"))
    return found


# -- 2. the training code ----------------------------------------------------------------------

def _step_functions(facts: "ModuleFacts") -> list[cst.FunctionDef]:
    return [f for f in facts.index.nodes(cst.FunctionDef) if f.name.value in STEP_NAMES]


def _backend_of_step(facts: "ModuleFacts", function: cst.FunctionDef) -> str | None:
    names = facts.names
    for node in facts.index.descendants(function):
        if not isinstance(node, cst.Call):
            continue
        qualified = names.qualified(node.func) or ""
        root = qualified.split(".", 1)[0]
        if root in (JAX, TORCH):
            return root
        if qualified == "tensorflow.GradientTape":
            return TENSORFLOW
        if isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in JAX_METHODS:
                return JAX
            if method in TORCH_METHODS and not _is_keras_call(facts, node):
                return TORCH
    return None


def _is_keras_call(facts: "ModuleFacts", call: cst.Call) -> bool:
    qualified = facts.names.qualified(call.func) or ""
    return qualified.split(".", 1)[0] in ("keras", "tensorflow")


def code_evidence(facts: "ModuleFacts") -> list[Evidence]:
    """One piece of evidence per training step that only runs on one backend."""
    found = []
    for function in _step_functions(facts):
        backend = _backend_of_step(facts, function)
        if backend is not None:
            owner = facts.index.class_of(function)
            label = f"{owner.name.value}.{function.name.value}" if owner is not None else function.name.value
            found.append(Evidence(backend, f"{label} uses {_API_WORDS[backend]}"))
    return found


_API_WORDS = {JAX: "JAX APIs", TORCH: "torch APIs", TENSORFLOW: "tf.GradientTape"}


# -- 3. the project ----------------------------------------------------------------------------

def local_imports_before_keras(facts: "ModuleFacts") -> list[str]:
    """Modules the file imports at module level before its first Keras import, as
    written (`config`, `.settings`): they run first and may set KERAS_BACKEND."""
    modules: list[str] = []
    for statement in facts.module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for node in statement.body:
            if isinstance(node, cst.Import):
                written = [facts.module.code_for_node(a.name) for a in node.names]
            elif isinstance(node, cst.ImportFrom):
                base = "." * len(node.relative) + (facts.module.code_for_node(node.module) if node.module else "")
                if node.module is None and not isinstance(node.names, cst.ImportStar):
                    written = [base + facts.module.code_for_node(a.name) for a in node.names]
                else:
                    written = [base]
            else:
                continue
            if any(m.split(".", 1)[0] in KERAS_PACKAGES for m in written):
                return modules
            modules.extend(written)
    return modules


def project_evidence(path: str, imported: Sequence[str] = ()) -> list[Evidence]:
    """The project's evidence for a file at `path` that imports `imported` before Keras
    (see the module doc, step 3), read from the file system."""
    folder = os.path.dirname(os.path.abspath(path))
    found: list[Evidence] = []
    for module in imported:
        source = _module_source(module, folder)
        if source is not None:
            setting = _setting_in_file(source)
            if setting is not None:
                found.append(Evidence(setting, f"{_relative(source, folder)}, imported before Keras, sets {VARIABLE}={setting}"))
    for candidate in _folders_up_to_root(folder):
        conftest = os.path.join(candidate, "conftest.py")
        setting = _setting_in_file(conftest)
        if setting is not None:
            found.append(Evidence(setting, f"{_relative(conftest, folder)} (pytest) sets {VARIABLE}={setting}"))
            break
    root = _project_root(folder)
    env_setting = _dotenv_setting(os.path.join(root, ".env"))
    if env_setting is not None:
        found.append(Evidence(env_setting, f"{_relative(os.path.join(root, '.env'), folder)} sets {VARIABLE}={env_setting}"))
    for config in (os.path.join(root, "keras.json"), os.path.join(root, ".keras", "keras.json")):
        setting = _keras_json_backend(config)
        if setting is not None:
            found.append(Evidence(setting, f"the project's {_relative(config, folder)} says backend {setting!r}"))
            break
    return found


def _relative(path: str, folder: str) -> str:
    return os.path.relpath(path, folder)


@lru_cache(maxsize=1024)
def _project_root(folder: str) -> str:
    """The project root mplint's Keras target uses, else the top of the git checkout,
    else the file's own folder."""
    from mplint.facts.target import project_root

    root = project_root(folder)
    if root is not None:
        return root
    current = folder
    while True:
        if run_record.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return folder
        current = parent


def _folders_up_to_root(folder: str) -> list[str]:
    root = _project_root(folder)
    folders = [folder]
    while folders[-1] != root and os.path.dirname(folders[-1]) != folders[-1] \
            and os.path.commonpath([root, folders[-1]]) == root:
        folders.append(os.path.dirname(folders[-1]))
    return folders


def _module_source(module: str, folder: str) -> str | None:
    """The project file a module name (as written in an import) refers to."""
    importer = os.path.join(folder, "__importer__.py")
    return next((p for p in module_file_candidates(importer, module, [_project_root(folder)]) if run_record.isfile(p)), None)


@lru_cache(maxsize=1024)
def _setting_in_file(path: str) -> str | None:
    """The backend a Python file sets KERAS_BACKEND to at import time (its text)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    if VARIABLE not in text and "set_backend" not in text:
        return None
    for match in _TEXT_SETTINGS.finditer(text):
        prefix = text[max(0, match.start() - 12):match.start()]
        if "putenv" in prefix:
            continue
        if match.group(1) in BACKENDS:
            return match.group(1)
    return None


@lru_cache(maxsize=64)
def _dotenv_setting(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    found = [m.group(1) for m in _ENV_FILE_LINE.finditer(text)]
    return found[-1] if found and found[-1] in BACKENDS else None


@lru_cache(maxsize=64)
def _keras_json_backend(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    backend = data.get("backend") if isinstance(data, dict) else None
    return backend if backend in BACKENDS else None


def forget_project_evidence() -> None:
    """Forget what was read from project files (a long-running process calls this when
    one changes)."""
    for cached in (_project_root, _setting_in_file, _dotenv_setting, _keras_json_backend):
        cached.cache_clear()


# -- 4. the environment ------------------------------------------------------------------------

def keras_home() -> str:
    """Where Keras looks for keras.json in this environment."""
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    home = os.path.expanduser("~")
    return os.path.join(home if os.access(home, os.W_OK) else "/tmp", ".keras")


def environment_evidence() -> list[Evidence]:
    found = []
    value = os.environ.get(VARIABLE)
    if value:
        found.append(Evidence(value if value in BACKENDS else None, f"{VARIABLE}={value} in mplint's environment"))
    config = os.path.join(keras_home(), "keras.json")
    setting = _keras_json_backend(config)
    if setting is not None:
        found.append(Evidence(setting, f"{config} says backend {setting!r}"))
    return found


def environment_fingerprint() -> str:
    """What outside the project can change a backend decision (for the cache key)."""
    return f"{os.environ.get(VARIABLE, '')}|{_keras_json_backend(os.path.join(keras_home(), 'keras.json'))}"


def module_file_candidates(importer: str, module: str, roots: list[str]) -> list[str]:
    """The files an import of `module` (as written: `config`, `..pkg.settings`) in the file
    `importer` can refer to: relative to its folder (dots), else in its folder or a root."""
    folder = os.path.dirname(importer)
    dots = len(module) - len(module.lstrip("."))
    parts = [p for p in module[dots:].split(".") if p]
    if dots:
        base = folder
        for _ in range(dots - 1):
            base = os.path.dirname(base)
        bases = [base]
    else:
        bases = [folder, *roots]
    paths = []
    for base in dict.fromkeys(bases):
        stem = os.path.join(base, *parts)
        paths += [stem + ".py", os.path.join(stem, "__init__.py")] if parts else [os.path.join(base, "__init__.py")]
    return paths
