"""Where input data is prepared on the CPU, and which casts there produce float16.

MP503 looks at two kinds of input pipeline, and nowhere else (a cast inside a layer or
in the functional model graph is model code, not input preprocessing):

* **`Dataset.map` functions**: the function (a lambda, a function of this module,
  `functools.partial(f, ...)`, `self.method`) passed to `.map(...)` of a `tf.data`
  dataset, and the module's functions it calls. A receiver is a dataset when it is
  built by `tf.data.*`, `tfds.load` or a `keras.utils.*_dataset_from_*` helper
  (directly, through method chains like `.shuffle().batch()`, or through a variable
  bound to one), when the chain uses a method only `tf.data` has (`.prefetch`,
  `.padded_batch`, `.interleave`, ...), or when the `.map` call passes
  `num_parallel_calls=`/`deterministic=`. A `.map` on anything else (pandas, Hugging
  Face datasets, a parameter of unknown type) is not looked at.
* **Data passed to Keras training**: the `x`/`y`/`validation_data` arguments of
  `fit`/`evaluate`/`predict`/`*_on_batch` on a Keras model (a receiver that is
  `.compile(...)`d in the module, or bound to `keras.Sequential/Model/load_model/
  applications`), and the arguments of `tf.data.Dataset.from_tensor_slices` /
  `from_tensors`; a cast counts when it is in the argument or in an assignment whose
  variable flows into it (up to four assignments back).

Of those casts, only the ones whose float16 value is then computed with on the CPU are
float16 *arithmetic* in the input pipeline (`mplint/facts/float16_arithmetic.py`): a final cast
(as a model's float16 `Input` wants, or to halve the host-to-device copy) is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from mplint.analysis.calls import arg_value, get_arg
from mplint.analysis.names import dotted_name
from mplint.facts.policy import DTYPE_CONSTANTS

from mplint.facts.float16_code import CASTS

from mplint.facts.float16_arithmetic import Float16Arithmetic, scales_integers

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

DATASET_FACTORIES = frozenset(
    {
        "keras.utils.image_dataset_from_directory",
        "keras.utils.text_dataset_from_directory",
        "keras.utils.timeseries_dataset_from_array",
        "keras.utils.audio_dataset_from_directory",
        "keras.preprocessing.image_dataset_from_directory",
        "keras.preprocessing.text_dataset_from_directory",
        "keras.preprocessing.timeseries_dataset_from_array",
        "tensorflow_datasets.load",
    }
)
DATASET_SOURCES_TAKING_DATA = frozenset(
    {"tensorflow.data.Dataset.from_tensor_slices", "tensorflow.data.Dataset.from_tensors"}
)
TRAINING_METHODS = {
    # method -> positional indexes of data arguments, keyword names of data arguments
    "fit": ((0, 1), ("x", "y", "validation_data")),
    "evaluate": ((0, 1), ("x", "y")),
    "predict": ((0,), ("x",)),
    "train_on_batch": ((0, 1), ("x", "y")),
    "test_on_batch": ((0, 1), ("x", "y")),
    "predict_on_batch": ((0,), ("x",)),
    "fit_generator": ((), ("validation_data",)),
}
MODEL_CONSTRUCTORS = frozenset(
    {"keras.Sequential", "keras.Model", "keras.models.Sequential", "keras.models.Model",
     "keras.models.load_model", "keras.models.clone_model", "keras.saving.load_model"}
)
PARTIAL = frozenset({"functools.partial"})
# Methods only tf.data datasets have (pandas, NumPy and Hugging Face datasets do not).
TF_DATA_METHODS = frozenset({"prefetch", "padded_batch", "unbatch", "interleave", "with_options"})
FLOW_DEPTH = 4
# Declarations of a model input's dtype: a float16 one makes float16 data what the model wants.
INPUT_DECLARATIONS = {"keras.Input": 2, "keras.layers.Input": 2, "keras.layers.InputLayer": None, "tensorflow.TensorSpec": 1}


@dataclass(frozen=True)
class Float16Cast:
    call: cst.Call
    dtype: cst.BaseExpression  # the expression that names float16 (fix target)
    context: str  # "a Dataset.map function", "data passed to `fit`", "data for a tf.data dataset"
    arithmetic: str  # what computes with the float16 value: "`/` after the cast", ...
    # One step with a constant and nothing after it (`x.astype("float16") / 255`): it
    # rounds within one float16 step of what float32 math and the model's cast give.
    single_step: bool = False


class InputPipeline:
    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.index = facts.index
        self._module_functions = {
            f.name.value: f for f in self.index.nodes(cst.FunctionDef) if self.index.parent_of(f) is facts.module
        }

    # -- float16 casts ------------------------------------------------------------------
    def float16_cast(self, call: cst.Call) -> cst.BaseExpression | None:
        """The dtype expression if this call converts to float16, else None."""
        facts = self.facts
        func = call.func
        qualified = facts.qualified(func)
        if qualified in ("numpy.float16", "numpy.half"):
            return func
        if qualified in CASTS:
            dtype = arg_value(call, CASTS[qualified], "dtype")
        elif isinstance(func, cst.Attribute) and func.attr.value == "astype" and qualified is None:
            dtype = arg_value(call, 0, "dtype")
        elif qualified is not None and qualified.startswith(("tensorflow.", "numpy.")):
            dtype = arg_value(call, None, "dtype")
        else:
            return None
        if dtype is None or (isinstance(dtype, cst.Name) and dtype.value == "half"):
            return None  # a bare `half` (from numpy import half): too ambiguous a name
        return dtype if facts.policy.policy_names(dtype) == frozenset({"float16"}) else None

    def casts(self) -> Iterator[Float16Cast]:
        """float16 casts in input pipelines whose value is then computed with on the CPU."""
        seen: set[int] = set()
        arithmetic = Float16Arithmetic(self.facts)
        candidates = [(call, "a Dataset.map function") for call in self._calls_in(self._map_functions())]
        for expr, use, context in self._training_data():
            candidates += [(call, context) for call in self._flowing_casts(expr, use, 0, set())]
        for call, context in candidates:
            dtype = self.float16_cast(call)
            if dtype is None or id(call) in seen:
                continue
            seen.add(id(call))
            if scales_integers(self.facts, call):
                yield Float16Cast(call, dtype, context, "the conversion scales integer images in float16")
                continue
            operation = arithmetic.after(call)
            if operation is not None:
                yield Float16Cast(call, dtype, context, f"{operation} after the cast",
                                  arithmetic.single_constant_step(call))

    def declares_float16_input(self) -> bool:
        """Whether the module declares a float16 model input (`Input(dtype="float16")`,
        `tf.TensorSpec(..., tf.float16)`): float16 data is then what the model expects."""
        for name, position in INPUT_DECLARATIONS.items():
            for call in self.facts.calls_to(name):
                dtype = arg_value(call, position, "dtype")
                if dtype is not None and self.facts.policy.policy_names(dtype) == frozenset({"float16"}):
                    return True
        return False

    def _calls_in(self, roots: list[cst.CSTNode]) -> Iterator[cst.Call]:
        for root in roots:
            for node in self.index.descendants(root):
                if isinstance(node, cst.Call):
                    yield node

    # -- Dataset.map -----------------------------------------------------------------------
    def _map_functions(self) -> list[cst.CSTNode]:
        roots: list[cst.CSTNode] = []
        for call in self.index.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "map"):
                continue
            keywords = {a.keyword.value for a in call.args if a.keyword is not None}
            if not (keywords & {"num_parallel_calls", "deterministic"} or self.is_dataset(func.value, 0)):
                continue
            function = self._callable(arg_value(call, 0, "map_func"), call)
            if function is not None:
                roots.append(function)
        # and the module's functions they call
        queue = list(roots)
        found = {id(r) for r in roots}
        while queue:
            current = queue.pop()
            for node in self.index.descendants(current):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Name):
                    target = self._function_named(node.func.value)
                    if target is not None and id(target) not in found:
                        found.add(id(target))
                        roots.append(target)
                        queue.append(target)
        return roots

    def _callable(self, expr: cst.BaseExpression | None, at: cst.CSTNode) -> cst.CSTNode | None:
        if isinstance(expr, cst.Lambda):
            return expr
        if isinstance(expr, cst.Name):
            return self._function_named(expr.value)
        if isinstance(expr, cst.Call) and self.facts.qualified(expr.func) in PARTIAL:
            return self._callable(arg_value(expr, 0, "func"), at)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.index.class_of(at)
            if cls is not None and isinstance(cls.body, cst.IndentedBlock):
                for statement in cls.body.body:
                    if isinstance(statement, cst.FunctionDef) and statement.name.value == expr.attr.value:
                        return statement
        return None

    def _function_named(self, name: str) -> cst.FunctionDef | None:
        if name in self.facts.imports.aliases:
            return None
        if name in self._module_functions:
            return self._module_functions[name]
        candidates = [f for f in self.index.nodes(cst.FunctionDef) if f.name.value == name]
        return candidates[0] if len(candidates) == 1 and self.index.class_of(candidates[0]) is None else None

    def is_dataset(self, expr: cst.BaseExpression, depth: int) -> bool:
        if depth > 8:
            return False
        if isinstance(expr, cst.Call):
            qualified = self.facts.qualified(expr.func)
            if qualified is not None and (qualified.startswith("tensorflow.data.") or qualified in DATASET_FACTORIES):
                return True
            if isinstance(expr.func, cst.Attribute):  # ds.shuffle(...).batch(...)
                if expr.func.attr.value in TF_DATA_METHODS:
                    return True
                return self.is_dataset(expr.func.value, depth + 1)
            return False
        if isinstance(expr, cst.Subscript):  # tfds.load(...)["train"]
            return self.is_dataset(expr.value, depth + 1)
        if isinstance(expr, cst.Name):
            for value in self._bound_values(expr):
                if self.is_dataset(value, depth + 1):
                    return True
        return False

    def _bound_values(self, name: cst.Name) -> list[cst.BaseExpression]:
        """What a name is bound to in its scope, also by tuple unpacking
        (`train, test = tfds.load(...)` binds both to the call)."""
        values = list(self.facts.bindings.values_visible(name, self.index))
        for assign in self.index.nodes(cst.Assign):
            for target in assign.targets:
                if isinstance(target.target, (cst.Tuple, cst.List)) and any(
                    isinstance(e.value, cst.Name) and e.value.value == name.value for e in target.target.elements
                ):
                    values.append(assign.value)
        return values

    # -- data passed to Keras training ----------------------------------------------------------
    def _training_data(self) -> Iterator[tuple[cst.BaseExpression, cst.CSTNode, str]]:
        for call in self.index.nodes(cst.Call):
            func = call.func
            qualified = self.facts.qualified(func)
            if qualified in DATASET_SOURCES_TAKING_DATA:
                for arg in call.args:
                    yield arg.value, call, "data for a tf.data dataset"
                continue
            if not isinstance(func, cst.Attribute) or func.attr.value not in TRAINING_METHODS:
                continue
            if not self._is_keras_model(func.value):
                continue
            positions, keywords = TRAINING_METHODS[func.attr.value]
            context = f"data passed to `{func.attr.value}`"
            for position in positions:
                arg = get_arg(call, position)
                if arg is not None:
                    yield arg.value, call, context
            for keyword in keywords:
                arg = get_arg(call, None, keyword)
                if arg is not None:
                    yield arg.value, call, context

    def _is_keras_model(self, receiver: cst.BaseExpression) -> bool:
        spelled = dotted_name(receiver)
        if spelled is None:
            return False
        for call in self.index.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "compile" and dotted_name(func.value) == spelled:
                return True
        if isinstance(receiver, cst.Name):
            for value in self.facts.bindings.values_visible(receiver, self.index):
                if isinstance(value, cst.Call):
                    qualified = self.facts.qualified(value.func) or ""
                    if qualified in MODEL_CONSTRUCTORS or qualified.startswith("keras.applications."):
                        return True
        return False

    def _flowing_casts(self, expr: cst.BaseExpression, use: cst.CSTNode, depth: int, seen: set[int]) -> Iterator[cst.Call]:
        """Calls in `expr`, and in the values of the variables it reads (assigned before
        `use`), following up to FLOW_DEPTH assignments back. Lambda bodies are skipped."""
        if depth > FLOW_DEPTH or id(expr) in seen:
            return
        seen.add(id(expr))
        for node in (expr, *self._expression_nodes(expr)):
            if isinstance(node, cst.Call):
                yield node
            elif isinstance(node, cst.Name) and self._reads_variable(node):
                for value in self.facts.bindings.values_visible(node, self.index):
                    if self.index.before(value, use):
                        yield from self._flowing_casts(value, value, depth + 1, seen)

    def _expression_nodes(self, expr: cst.CSTNode) -> Iterator[cst.CSTNode]:
        stack = [expr]
        while stack:
            current = stack.pop()
            for child in current.children:
                if isinstance(child, (cst.Lambda, cst.FunctionDef)):
                    continue
                yield child
                stack.append(child)

    def _reads_variable(self, name: cst.Name) -> bool:
        parent = self.index.parent_of(name)
        if isinstance(parent, cst.Call) and parent.func is name:
            return False
        if isinstance(parent, cst.Attribute) and parent.attr is name:
            return False
        if isinstance(parent, cst.Arg) and parent.keyword is name:
            return False
        return name.value not in self.facts.imports.aliases


def float16_dtype_fix(facts: "ModuleFacts", dtype: cst.BaseExpression) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """(node, replacement) that makes a float16 dtype expression float32, keeping its
    spelling (`"float16"` -> `"float32"`, `tf.float16` -> `tf.float32`, `np.half` ->
    `np.float32`); None for names bound elsewhere (`DTYPE`, `from numpy import float16`)."""
    from mplint.analysis.calls import quote_like

    if isinstance(dtype, cst.SimpleString) and dtype.evaluated_value == "float16":
        return dtype, quote_like(dtype, "float32")
    if isinstance(dtype, cst.Attribute) and dtype.attr.value in ("float16", "half"):
        if DTYPE_CONSTANTS.get(facts.qualified(dtype) or "") == "float16":
            return dtype.attr, cst.Name("float32")
    return None
