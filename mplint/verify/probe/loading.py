"""Import the user's module and find its model entry point and custom training step."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys

from .errors import ProbeError, describe, user_traceback
from .kerasapi import is_keras_model

ENTRY_POINTS = ("build_model", "create_model", "get_model", "make_model")
MODEL_ATTRIBUTE = "model"
TRAIN_STEP = "train_step"


def import_target(request: dict):
    display = request["display"]
    try:
        if request["kind"] == "file":
            return _import_file(request["path"])
        return importlib.import_module(request["module"])
    except SystemExit as exc:
        raise ProbeError(
            "user-exit", f"importing {display} called sys.exit({exc.code!r})", user_traceback(exc)
        ) from None
    except ProbeError:
        raise
    except BaseException as exc:  # anything the user's code raises, SyntaxError included
        raise ProbeError("import-error", f"importing {display} raised {describe(exc)}", user_traceback(exc)) from None


def _import_file(path: str):
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # like running the script: its siblings are importable
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if re.fullmatch(r"[A-Za-z_]\w*", stem) and stem not in sys.modules else "_mplint_verify_target"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProbeError("import-error", f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _attribute(module, dotted: str):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def first_model(value):
    """The model a builder returned: the value itself, or the first model in a tuple/list/dict."""
    if is_keras_model(value):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            if is_keras_model(item):
                return item
    return None


def find_model(module, request: dict, on_call=None):
    """(model, entry point description). `on_call(name)` is told before a builder runs."""
    display = request["display"]
    explicit = request.get("attribute")
    names = [explicit] if explicit else list(ENTRY_POINTS)
    for name in names:
        try:
            obj = _attribute(module, name)
        except AttributeError:
            if explicit:
                raise ProbeError("no-model", f"{display} has no attribute {name!r}") from None
            continue
        if is_keras_model(obj):
            return obj, name
        if not callable(obj):
            raise ProbeError("no-model", f"{display}: {name} is a {type(obj).__name__}, not a Keras model or a callable")
        if on_call is not None:
            on_call(name)
        _check_callable_without_arguments(obj, name, display)
        try:
            value = obj()
        except SystemExit as exc:
            raise ProbeError("user-exit", f"{name}() called sys.exit({exc.code!r})", user_traceback(exc)) from None
        except BaseException as exc:
            raise ProbeError("model-error", f"{name}() raised {describe(exc)}", user_traceback(exc)) from None
        model = first_model(value)
        if model is None:
            raise ProbeError("no-model", f"{name}() returned {type(value).__name__}, not a Keras model")
        return model, f"{name}()"
    value = getattr(module, MODEL_ATTRIBUTE, None)
    if value is not None and is_keras_model(value):
        return value, MODEL_ATTRIBUTE
    raise ProbeError(
        "no-model",
        f"no model entry point in {display}: define {'(), '.join(ENTRY_POINTS)}() returning a Keras "
        f"model, or a module-level `{MODEL_ATTRIBUTE}`, or name one as TARGET:CALLABLE",
    )


def _check_callable_without_arguments(obj, name: str, display: str) -> None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if required:
        raise ProbeError(
            "no-model",
            f"{display}: {name}({', '.join(required)}) needs arguments; the verifier calls the entry point "
            "with none: add defaults, or name a wrapper as TARGET:CALLABLE",
        )


def find_train_step(module, request: dict):
    """The custom training step, `train_step(x, y)` or the one named by --train-step."""
    name = request.get("train_step")
    obj = getattr(module, name or TRAIN_STEP, None)
    if obj is None:
        if name:
            raise ProbeError("no-train-step", f"{request['display']} has no function {name!r} (--train-step)")
        return None, None
    if not callable(obj):
        if name:
            raise ProbeError("no-train-step", f"{request['display']}: {name} is not callable")
        return None, None
    return obj, name or TRAIN_STEP


def python_function(func):
    """The plain Python function behind a tf.function (or the function itself)."""
    seen = 0
    while seen < 5:
        inner = getattr(func, "python_function", None) or getattr(func, "__wrapped__", None)
        if inner is None or inner is func:
            break
        func = inner
        seen += 1
    return func


def referenced_globals(func) -> list:
    """Module globals the function's code names (nested functions and lambdas included), in order."""
    return [value for _, value in referenced_global_items(func)]


def referenced_global_items(func) -> list:
    """(name, value) of the module globals the function's code names, in order."""
    func = python_function(func)
    code = getattr(func, "__code__", None)
    namespace = getattr(func, "__globals__", {})
    if code is None:
        return []
    names: list[str] = []
    stack = [code]
    while stack:
        current = stack.pop(0)
        for name in current.co_names:
            if name not in names:
                names.append(name)
        stack.extend(c for c in current.co_consts if inspect.iscode(c))
    return [(n, namespace[n]) for n in names if n in namespace]


# -- a training script: its step, the model it trains, the arguments it takes ------------

# Names of functions that build a model, imported from the project (`from models import
# create_classifier`): tried, with no arguments, when the script has no entry point.
BUILDER = re.compile(r"^(build|create|make|get|new)_?\w*$", re.I)
MODEL_WORDS = re.compile(r"model|net|classifier|regressor|encoder|decoder|transformer|gan|cnn|rnn|lstm|mlp", re.I)
_LIBRARIES = ("keras", "tensorflow", "tf_keras", "numpy", "jax", "torch", "builtins", "_mplint_verify_probe")
MODEL_PARAMETERS = re.compile(r"model|net|classifier|regressor|encoder|autoencoder", re.I)
OPTIMIZER_PARAMETERS = re.compile(r"optim|^opt$", re.I)
DATA_PARAMETERS = ("data", "batch", "example", "examples", "inputs_and_targets")
TARGET_PARAMETERS = re.compile(r"^(y|ys|labels?|targets?|y_true|batch_y|gt)$", re.I)


def model_for_train_step(module, train_step, step_name: str, on_call=None):
    """(model, description) for a training script without a model entry point: a model
    its step uses, a model the module holds, else a builder it imports (called with no
    arguments)."""
    for name, value in referenced_global_items(train_step):
        if is_keras_model(value):
            return value, f"{name} (used by {step_name})"
    for name, value in vars(module).items():
        if is_keras_model(value):
            return value, name
    tried = []
    for name, value in vars(module).items():
        if not _is_builder(name, value):
            continue
        try:
            signature = inspect.signature(value)
        except (TypeError, ValueError):
            continue
        if any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               for p in signature.parameters.values()):
            tried.append(f"{name} (needs arguments)")
            continue
        if on_call is not None:
            on_call(name)
        try:
            model = first_model(value())
        except SystemExit as exc:
            raise ProbeError("user-exit", f"{name}() called sys.exit({exc.code!r})", user_traceback(exc)) from None
        except BaseException as exc:
            raise ProbeError("model-error", f"{name}() raised {describe(exc)}", user_traceback(exc)) from None
        if model is not None:
            return model, f"{name}() from {value.__module__}"
        tried.append(f"{name} (returned no Keras model)")
    raise ProbeError(
        "no-model",
        f"{step_name} trains a model, but no model was found: none among the globals it uses or the module's, "
        "and no builder to call (" + (", ".join(tried) or "no build_/create_/make_/get_ function of a model") + "); "
        "name the builder as TARGET:CALLABLE",
    )


def _is_builder(name: str, value) -> bool:
    if not (inspect.isfunction(value) and BUILDER.match(name) and MODEL_WORDS.search(name)):
        return False
    return (getattr(value, "__module__", "") or "").split(".")[0] not in _LIBRARIES


def step_arguments(train_step, model, optimizers: list, x, y) -> tuple[list, str]:
    """The arguments to call a training step with, by its parameter names: the model,
    an optimizer, the batch as `data`/`batch`, else x then y; and how the call reads."""
    try:
        parameters = [
            p for p in inspect.signature(python_function(train_step)).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
    except (TypeError, ValueError):
        return [x, y], "(x, y)"
    if len(parameters) == 2 and not any(MODEL_PARAMETERS.search(p.name) or OPTIMIZER_PARAMETERS.search(p.name)
                                        for p in parameters):
        return [x, y], "(x, y)"
    arguments, words, data = [], [], [x, y]
    for parameter in parameters:
        name = parameter.name
        if OPTIMIZER_PARAMETERS.search(name):
            if not optimizers:
                raise ProbeError("no-train-step", f"{TRAIN_STEP} parameter {name!r} takes an optimizer, and none "
                                 "was found (module-level, or model.optimizer after compile)")
            arguments.append(optimizers[0])
            words.append(name)
        elif MODEL_PARAMETERS.search(name):
            arguments.append(model)
            words.append(name)
        elif name.lower() in DATA_PARAMETERS:
            arguments.append((x, y))
            words.append(f"{name}=(x, y)")
            data = []
        elif TARGET_PARAMETERS.match(name) and any(d is y for d in data):
            arguments.append(y)
            words.append(f"{name}=y")
            data = [d for d in data if d is not y]
        elif data:
            value = data.pop(0)
            arguments.append(value)
            words.append(f"{name}={'x' if value is x else 'y'}")
        else:
            raise ProbeError("no-train-step", f"cannot tell what to pass to {name!r}: the verifier passes the "
                             "model, an optimizer, and one synthetic batch (x, y or data/batch)")
    return arguments, f"({', '.join(words)})"
