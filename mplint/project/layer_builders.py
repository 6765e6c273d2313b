"""Whether a module's functions may build Keras layers or models when they are called.

A global float16 policy gives float16 variables only to the layers built after it. Code
a module runs at import is built when it is imported; what its functions build is built
whenever they are called, so possibly under a policy set later. This reads the module's
syntax (Python's `ast`, as `mplint.project.scan` does: no libcst) and over-approximates:
any call inside a function (or a method) of a name that resolves through the module's
imports to Keras (`keras.*`, `tf.keras.*`, `tf_keras.*`, TF's private Keras, TF Hub's
`KerasLayer`) and is capitalised (a class: `layers.Dense`, `Sequential`), any loader
(`load_model`, `from_preset`, `from_pretrained`, `from_config`), any capitalised name
imported from another module of the project or defined in this one (a layer or model of
its own may be one), counts. A module that does not parse counts too.
"""

from __future__ import annotations

import ast

_KERAS_ROOTS = ("keras", "tensorflow.keras", "tf_keras", "tensorflow.python.keras", "tensorflow_hub", "keras_hub",
                "keras_cv", "keras_nlp", "transformers")
_NOT_LAYERS = ("optimizers", "losses", "metrics", "callbacks", "initializers", "regularizers", "constraints",
               "activations", "utils", "backend", "preprocessing", "datasets", "mixed_precision", "config", "ops",
               "random", "saving")
_LOADERS = frozenset({"load_model", "from_preset", "from_pretrained", "from_config", "clone_model", "model_from_json"})


def builds_layers_in_functions(text: str, project_names: frozenset[str] = frozenset()) -> bool:
    """Whether a function of the module may build a Keras layer or model (see above).
    `project_names`: top-level names of the project's own packages and modules."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    aliases = _aliases(tree)
    own_classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and _may_build(node.func, aliases, own_classes, project_names):
                return True
    return False


def _aliases(tree: ast.Module) -> dict[str, str]:
    """What each imported name stands for (`L` -> `tensorflow.keras.layers`)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for alias in node.names:
                found[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
    return found


def _dotted(func: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    return parts[::-1]


def _may_build(func: ast.expr, aliases: dict[str, str], own_classes: set[str], project_names: frozenset[str]) -> bool:
    parts = _dotted(func)
    if parts is None:
        return isinstance(func, ast.Attribute) and func.attr in _LOADERS  # `hub.load(...).from_preset(...)`
    last = parts[-1]
    if last in _LOADERS:
        return True
    if not last[:1].isupper():
        return False
    root = aliases.get(parts[0])
    if root is None:
        return len(parts) == 1 and parts[0] in own_classes  # a class of this module
    full = ".".join([root, *parts[1:]])
    if full.startswith("tensorflow.") and not full.startswith(("tensorflow.keras", "tensorflow.python.keras")):
        return False  # `tf.Variable`, `tf.TensorSpec`
    if root.startswith(".") or root.split(".")[0] in project_names:
        return True  # a class of the project's own (a layer or model, perhaps)
    if full.startswith(_KERAS_ROOTS):
        return not any(f".{part}." in f".{full}." for part in _NOT_LAYERS)
    return False
