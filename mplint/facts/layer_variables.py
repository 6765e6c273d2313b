"""Which layers own float variables, and whether a module trains any (MP103).

A pure float16/bfloat16 dtype keeps a layer's *variables* in that dtype. Layers without
float variables have nothing to keep: activations, dropout and noise, reshaping and
cropping, pooling, merging, `Rescaling`/`Resizing`/random augmentation (Keras 3's random
layers hold an integer seed state, no float variable), `UnitNormalization`, `Lambda`,
`Attention` without `use_scale`/`score_mode="concat"`, and `Normalization` given its
`mean` and `variance` (they are constants then; only `adapt()` creates variables). A
layer that is only constructed and serialized (`get_config`, a serialization
round-trip) is never built, so it has no variables either.

Variables that nothing trains are kept in float16 on purpose as often as not: a script
(a `__main__` block, `app.run`) or a test module that never fits, applies
gradients, records a tape or compiles with an optimizer or loss is inference, checkpoint
conversion or a dtype test, and MP103 says so at info level there. A library module
that trains nothing keeps its warning: its layers may be trained elsewhere; so does a
notebook (an editor checks it cell by cell, and training is often in a later cell). A
layer that never leaves the function that builds it, is only run forward there on
concrete data and sees no training there (`run_only_forward`: a benchmark that times
float16 layers) keeps float16 variables that nothing trains, whatever else the module
trains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import arg_value, get_arg, string_value
from mplint.analysis.index import ModuleIndex
from mplint.core.diagnostics import ROLE, Premise, Status
from mplint.facts.training_calls import TRAINING_METHODS

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

_WITHOUT_VARIABLES = frozenset({
    "Activation", "ReLU", "Softmax", "LeakyReLU", "ELU", "ThresholdedReLU", "Dropout", "SpatialDropout1D",
    "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise", "GaussianDropout", "AlphaDropout", "Reshape",
    "Flatten", "Permute", "RepeatVector", "Lambda", "Masking", "Identity", "Cropping1D", "Cropping2D", "Cropping3D",
    "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "UpSampling1D", "UpSampling2D", "UpSampling3D",
    "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AveragePooling1D",
    "AveragePooling2D", "AveragePooling3D", "AvgPool1D", "AvgPool2D", "AvgPool3D", "GlobalMaxPooling1D",
    "GlobalMaxPooling2D", "GlobalMaxPooling3D", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
    "GlobalAveragePooling3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D",
    "GlobalAvgPool2D", "GlobalAvgPool3D", "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum",
    "Concatenate", "Dot", "ActivityRegularization", "UnitNormalization", "Rescaling", "Resizing", "CenterCrop",
    "RandomFlip", "RandomRotation", "RandomZoom", "RandomTranslation", "RandomContrast", "RandomCrop",
    "RandomBrightness", "RandomHeight", "RandomWidth", "CategoryEncoding", "Hashing", "Discretization",
})
# Built, or handed on to something that builds it.
_BUILDING_METHODS = frozenset({"build", "__call__", "call", "add", "predict", "fit"})
# Functions a layer is handed to only to (de)serialize or inspect it.
_SERIALIZING = ("serialize", "deserialize", "roundtrip", "round_trip", "get_config", "from_config", "to_json",
                "assert", "config")
_TRAINING_METHODS = TRAINING_METHODS | {"train_step"}
_APP_RUN = frozenset({"absl.app.run", "tensorflow.app.run", "tensorflow.compat.v1.app.run"})
_TAPES = frozenset({"tensorflow.GradientTape", "tensorflow.gradients", "tensorflow.compat.v1.gradients"})


def owns_no_float_variables(facts: "ModuleFacts", call: cst.Call) -> bool:
    """Whether the layer this call constructs has no float variables."""
    qualified = facts.qualified(call.func) or ""
    name = qualified.rsplit(".", 1)[-1]
    if name in _WITHOUT_VARIABLES:
        return True
    if name == "Normalization":
        return arg_value(call, 1, "mean") is not None and arg_value(call, 2, "variance") is not None
    if name == "Attention":
        if string_value(arg_value(call, None, "score_mode")) == "concat":
            return False
        use_scale = arg_value(call, 0, "use_scale")
        if use_scale is None:
            return True
        value = facts.values.resolve(use_scale)
        return value is not None and value.value is False
    return False


def never_built(facts: "ModuleFacts", call: cst.Call) -> bool:
    """A layer assigned to a name that is only serialized or inspected afterwards."""
    parent = facts.index.parent_of(call)
    if not (isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return False
    name = parent.targets[0].target.value
    scope = facts.index.scope_of(call)
    uses = [n for n in facts.index.names(name) if n is not parent.targets[0].target
            and facts.index.scope_of(n) is scope]
    if not uses:
        return False
    for use in uses:
        holder = facts.index.parent_of(use)
        if isinstance(holder, cst.Attribute) and holder.value is use:
            owner = facts.index.parent_of(holder)
            if isinstance(owner, cst.Call) and owner.func is holder and holder.attr.value in _BUILDING_METHODS:
                return False
            continue  # an attribute read (`layer.name`, `layer.compute_dtype`)
        if isinstance(holder, cst.Arg):
            owner = facts.index.parent_of(holder)
            callee = facts.module.code_for_node(owner.func).lower() if isinstance(owner, cst.Call) else ""
            if any(word in callee for word in _SERIALIZING):
                continue
        return False  # called, put in a list, passed to a model or anything else
    return True


# Calls whose value is concrete data (a tensor or an array), never a model's symbolic tensor.
_DATA_MAKERS = ("tensorflow.random.", "tensorflow.constant", "tensorflow.ones", "tensorflow.zeros", "tensorflow.fill",
                "tensorflow.convert_to_tensor", "tensorflow.range", "numpy.")
# Methods that build a layer or read what it holds, without training or handing it on.
_INSPECTING_METHODS = frozenset({"build", "count_params", "get_weights", "compute_output_shape", "get_config"})


def run_only_forward(facts: "ModuleFacts", call: cst.Call) -> str | None:
    """Why the layer this call constructs is never trained, where it stays inside one
    function that trains nothing and only runs it forward on data: a benchmark
    (`layer = Dense(n, dtype=tf.float16)`, `layer.build(shape)`, `layer(test_input)`
    with `test_input = tf.random.normal(...)`) or a dtype check. The layer must be
    called at once (`Dense(n)(data)`) or be bound to a local name that is only called on
    data, built or inspected: returned, stored, listed or handed to anything else, it may
    be trained elsewhere. None where it may be trained."""
    index = facts.index
    function = index.enclosing(call, cst.FunctionDef)
    if function is None or any(_trains(facts, c) for c in index.descendants(function) if isinstance(c, cst.Call)):
        return None
    parent = index.parent_of(call)
    if isinstance(parent, cst.Call) and parent.func is call:
        applied = [parent]
    elif isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1 \
            and isinstance(parent.targets[0].target, cst.Name):
        name = parent.targets[0].target.value
        scope = index.scope_of(call)
        applied = []
        for use in index.nodes(cst.Name):
            if use.value != name or use is parent.targets[0].target or index.scope_of(use) is not scope:
                continue
            holder = index.parent_of(use)
            if _deleted(index, holder):
                continue  # `del layer`
            if isinstance(holder, cst.Call) and holder.func is use:
                applied.append(holder)
            elif isinstance(holder, cst.Attribute) and holder.value is use:
                owner = index.parent_of(holder)
                if isinstance(owner, cst.Call) and owner.func is holder and holder.attr.value not in _INSPECTING_METHODS:
                    return None  # `layer.fit(...)`, `layer.add_loss(...)`: more than a forward run
            else:
                return None  # returned, stored, listed, passed on, bound again
    else:
        return None
    if not applied or not all(a.args and _is_data(facts, a.args[0].value) for a in applied):
        return None
    return f"only `{function.name.value}()` runs it, forward only"


def _deleted(index: ModuleIndex, holder: cst.CSTNode | None) -> bool:
    """Whether a name read under `holder` is deleted (`del layer`, `del out, layer`)."""
    while isinstance(holder, (cst.Element, cst.Tuple)):
        holder = index.parent_of(holder)
    return isinstance(holder, cst.Del)


def _is_data(facts: "ModuleFacts", expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether `expr` is concrete data: a call of `_DATA_MAKERS`, or a name bound only to one."""
    if isinstance(expr, cst.Call):
        qualified = facts.qualified(expr.func) or ""
        return qualified.startswith(_DATA_MAKERS)
    if isinstance(expr, cst.Name) and depth < 3 and facts.values.parameter_of(expr) is None:
        scope = facts.index.enclosing(expr, cst.FunctionDef, cst.Lambda) or facts.index.module
        bound = facts.bindings.bindings.get((id(scope), expr.value))  # None: a value not written down
        return bool(bound) and all(v is not None and _is_data(facts, v, depth + 1) for v in bound)
    return False


def trains_anything(facts: "ModuleFacts") -> bool:
    """Whether the module fits, applies gradients, records a tape, or compiles with an
    optimizer or a loss without predicting or evaluating (a script that compiles and then
    only predicts, evaluates or calls the model on data is an evaluation: old Keras needs
    `compile` for metrics).
    A walk over every call: ask it through `facts.analysis(trains_anything)`, once per
    module, not once per finding."""
    if facts.calls_to(_TAPES):
        return True
    compiled: set[str] = set()  # the names compiled with an optimizer or a loss
    inference = False
    for call in facts.index.nodes(cst.Call):
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        method = func.attr.value
        if method in _TRAINING_METHODS:
            return True
        if method == "compile" and (get_arg(call, 0, "optimizer") is not None or get_arg(call, 1, "loss") is not None):
            compiled.add(facts.module.code_for_node(func.value))
        elif method in _EVALUATION_METHODS:
            inference = True
    if not compiled or inference:
        return False
    return not _runs_on_data(facts, compiled)


def _runs_on_data(facts: "ModuleFacts", compiled: set[str]) -> bool:
    """Whether a compiled model is called directly on data (`preds.append(model(batch))`:
    inference, as `predict` is), not on the symbolic tensors of a model under construction."""
    from mplint.facts.model_graph import ModelGraph

    graph = None
    for call in facts.index.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Name) and func.value in compiled and call.args:
            graph = graph or facts.analysis(ModelGraph)
            if not graph.is_symbolic(call.args[0].value):
                return True
    return False


_EVALUATION_METHODS = frozenset({"predict", "predict_on_batch", "predict_generator", "evaluate", "evaluate_generator",
                                 "test_on_batch"})


def training_premise(facts: "ModuleFacts", untrained: str | None) -> Premise:
    """That something trains the variables (MP103's role premise): proved where this module
    trains; inferred where a module that imports it (directly or through others) trains;
    otherwise only assumed (`untrained`: why nothing here trains them, if nothing does)."""
    value = "trained variables"
    if untrained is not None:
        return Premise(ROLE, value, Status.ASSUMED, f"{untrained}: float16 variables may be kept on purpose")
    if facts.analysis(trains_anything):
        return Premise(ROLE, value, Status.PROVED, "this module trains (fits, applies gradients or records a tape)")
    trainer = facts.project.trainer() if facts.project is not None else None
    if trainer is not None:
        return Premise(ROLE, value, Status.INFERRED, f"trained by `{trainer}`, which imports this module")
    return Premise(ROLE, value, Status.ASSUMED, "nothing here, and no module that imports this one, trains")


def restored_before_training(facts: "ModuleFacts", setting: cst.Call) -> str | None:
    """Why nothing trains while a `set_floatx("float16")` holds, where that is known:
    it sits in a function (`set_f16_infer()`) that only functions of this module call,
    each of which then restores float32 (`set_f32_train()`, `set_floatx("float32")`)
    before it returns, trains nothing in between, and returns no value (a model built
    in between does not leave). An export that rebuilds a model in float16 and saves it."""
    index, graph = facts.index, facts.call_graph
    function = index.enclosing(setting, cst.FunctionDef)
    if function is None or index.parent_of(function) is not index.module:
        return None
    if facts.project is not None and facts.project.used_elsewhere(function.name.value):
        return None
    sites = graph.sites_of(function)
    if not sites or not all(isinstance(site, cst.Call) for site in sites):
        return None
    restorers = {id(f) for f in _float32_floatx_functions(facts)}
    callers = []
    for site in sites:
        caller = index.enclosing(site, cst.FunctionDef)
        if caller is None or any(isinstance(r, cst.Return) and r.value is not None for r in index.descendants(caller)):
            return None
        later = [c for c in index.descendants(caller) if isinstance(c, cst.Call) and index.before(site, c)]
        restore = next((c for c in later if _restores_float32(facts, c, restorers)), None)
        if restore is None or index.enclosing(restore, cst.FunctionDef) is not caller:
            return None
        between = [c for c in later if index.before(c, restore)]
        if any(_trains(facts, c) for c in between):
            return None
        callers.append(caller.name.value)
    return f"`{'`, `'.join(sorted(set(callers)))}` calls it, restores float32 and trains nothing"


def _float32_floatx_functions(facts: "ModuleFacts") -> list[cst.FunctionDef]:
    """The module-level functions that set floatx to float32 (`set_f32_train`)."""
    found = []
    for setting in facts.policy.global_settings:
        if setting.kind == "floatx" and setting.names == frozenset({"float32"}):
            function = facts.index.enclosing(setting.call, cst.FunctionDef)
            if function is not None and facts.index.parent_of(function) is facts.index.module:
                found.append(function)
    return found


def _restores_float32(facts: "ModuleFacts", call: cst.Call, restorers: set[int]) -> bool:
    if any(s.call is call and s.kind == "floatx" and s.names == frozenset({"float32"})
           for s in facts.policy.global_settings):
        return True
    return any(id(f) in restorers for f in facts.call_graph.callees(call))


def _trains(facts: "ModuleFacts", call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in _TRAINING_METHODS or name == "compile" or name.endswith("GradientTape")


def untrained_entry_point(facts: "ModuleFacts") -> str | None:
    """"this script" / "this test module" when the module is one and trains nothing."""
    import os

    from mplint.facts.float16_code import is_library_module

    name = os.path.basename(facts.path)
    if "__main__" in facts.text or facts.calls_to(_APP_RUN):
        what = "this script"
    elif name.startswith("test_") or name.endswith("_test.py"):
        what = "this test module"
    elif facts.path.endswith(".ipynb") and _runs_a_model_at_top_level(facts):
        what = "this notebook"
    elif not is_library_module(facts.path) and _runs_a_model_at_top_level(facts):
        what = "this script"  # no `__main__` guard: its top level runs (generates, predicts, exports)
    else:
        return None
    return None if facts.analysis(trains_anything) else what


_INFERENCE_METHODS = frozenset({"generate", "predict", "predict_on_batch", "export", "save", "save_weights",
                                "save_to_preset", "convert"})


def _runs_a_model_at_top_level(facts: "ModuleFacts") -> bool:
    """Whether a program (a script, a notebook) generates, predicts, exports or saves
    outside any class: its program is that (functions included: a notebook's helper that
    calls `model.predict`), not a module others import."""
    for call in facts.index.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _INFERENCE_METHODS \
                and facts.index.enclosing(call, cst.ClassDef) is None:
            return True
    return False


def under_variable_creator(facts: "ModuleFacts", node: cst.CSTNode) -> bool:
    """Whether the function (or module) around `node` enters a variable creator scope or
    a variable scope with a custom getter: variables are then what the creator makes
    (typically float32 masters cast to float16: manual mixed precision)."""
    scope = facts.index.scope_of(node)
    for with_node in facts.index.nodes(cst.With):
        if facts.index.scope_of(with_node) is not scope:
            continue
        for item in with_node.items:
            expr = item.item
            if not isinstance(expr, cst.Call):
                continue
            qualified = facts.qualified(expr.func) or ""
            if qualified.endswith(".variable_creator_scope") or (
                    qualified.endswith(".variable_scope") and get_arg(expr, None, "custom_getter") is not None):
                return True
    return False
