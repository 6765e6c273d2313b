"""Which code computes in float16 under `mixed_float16`, and what its values are.

Shared by MP501/MP502 (one analysis per module, `facts.analysis(Float16Code)`):

* **Layer code**: the `call` method of every class whose bases resolve to a Keras
  `Layer`/`Model` (also through a layer class defined in the same module), functions
  passed to `keras.layers.Lambda`, and everything those reach in the same module
  (`self.helper(...)` methods, module-level functions). Layer code of a *library* (a
  module of a package: its folder has an `__init__.py`, or it sits under `src/`) runs
  under whatever policy its users set, so it is checked there whatever the module
  sets, in a project that names mixed precision somewhere (its code, tests or
  examples: a library that never does is not used so by its own project); layer code
  of a *program* (a script, a notebook, an example app) runs under the policy its
  program sets, so it is checked only where a float16 policy can be in effect (set in
  the module, assumed, or brought by the project). Never where the
  module pins a policy without float16 (`set_global_policy("mixed_bfloat16")`) or the
  class pins its own dtype (`super().__init__(dtype="float32")`).
* **@tf.function code** (decorated, or wrapped by `tf.function(f)`) and what it reaches:
  its tensors are float16 only when the module runs `mixed_float16` (set in the file or
  by `assume-policy`), so it is checked only then.

Besides the regions, it answers the per-expression questions the rules ask: the constant
value of an operand (literals, constants, `self.attr` set once), whether an expression
is known to be float32 (cast first), whether code sits in a branch on the dtype, and
which tensor a dtype-aware replacement can be spelled with.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from mplint.core.diagnostics import DTYPE, Premise, Status

from mplint.analysis.calls import arg_value, has_star_args
from mplint.analysis.names import dotted_name
from mplint.analysis.values import Source, Value
from mplint.facts.receivers import project_function
from mplint.facts.policy import DTYPE_CONSTANTS

from mplint.facts.float16_numbers import is_number
from mplint.facts.test_modules import is_test_file
from mplint.inputs import run_record

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

LAYER = "layer code"
TF_FUNCTION = "@tf.function code"

ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
AUG_ARITHMETIC = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
}
TF_FUNCTION_NAMES = frozenset({"tensorflow.function", "tensorflow.compat.v1.function"})
LAMBDA_LAYER = "keras.layers.Lambda"
FLOAT16_POLICIES = frozenset({"mixed_float16", "float16"})
WIDE_FLOATS = frozenset({"float32", "float64", "float", "double"})
# `self.dtype` of a layer is its variable dtype: float32 under the mixed policies.
VARIABLE_DTYPE_ATTRS = frozenset({"dtype", "_dtype", "variable_dtype"})

# Casts: (canonical name, position of the dtype argument).
CASTS = {
    "tensorflow.cast": 1,
    "tensorflow.dtypes.cast": 1,
    "tensorflow.saturate_cast": 1,
    "tensorflow.dtypes.saturate_cast": 1,
    "tensorflow.image.convert_image_dtype": 1,
    "keras.ops.cast": 1,
    "keras.backend.cast": 1,
}
FRAMEWORK_PREFIXES = ("tensorflow.", "keras.", "tf_keras.")
# How far the dtype walk follows bindings, helpers' returns and their callers' arguments.
ORIGIN_DEPTH = 24
# Creation ops whose float results are float32 unless given a dtype.
FLOAT32_BY_DEFAULT = frozenset(
    {
        "tensorflow.ones", "tensorflow.zeros", "tensorflow.fill", "tensorflow.eye",
        "tensorflow.linspace", "tensorflow.random.uniform", "tensorflow.random.normal",
        "tensorflow.random.truncated_normal", "keras.ops.ones", "keras.ops.zeros",
        "keras.ops.eye", "keras.random.uniform", "keras.random.normal",
        "tensorflow.one_hot", "keras.ops.one_hot",  # float32 unless given a dtype (Keras: floatx)
        # TF 1.x names (and their compat.v1 spellings) of the same ops
        "tensorflow.random_uniform", "tensorflow.random_normal", "tensorflow.truncated_normal",
        "tensorflow.compat.v1.random_uniform", "tensorflow.compat.v1.random_normal",
        "tensorflow.compat.v1.truncated_normal", "tensorflow.compat.v1.ones", "tensorflow.compat.v1.zeros",
        "tensorflow.compat.v1.one_hot",
        "tensorflow.compat.v1.random.uniform", "tensorflow.compat.v1.random.normal",
    }
)
# Ops with float32/float64 kernels only: a float16 input raises ("RFFT requires tf.float32
# or tf.float64 inputs"), so their results (complex64/float32) are never float16.
WIDE_ONLY = frozenset(
    f"tensorflow.signal.{name}"
    for name in ("stft", "inverse_stft", "rfft", "rfft2d", "rfft3d", "irfft", "irfft2d", "irfft3d", "mfccs_from_log_mel_spectrograms")
)
# TensorFlow/Keras ops whose tensor operands share one dtype, the result's.
MATCHING_OPERANDS = frozenset(
    f"{module}.{name}"
    for module in ("tensorflow", "tensorflow.math", "tensorflow.linalg", "keras.ops", "keras.backend")
    for name in ("matmul", "tensordot", "einsum", "dot", "batch_dot", "add", "subtract", "multiply", "divide",
                 "truediv", "maximum", "minimum", "pow", "squared_difference")
)
# TensorFlow/Keras ops whose result has the dtype of their first argument.
DTYPE_PRESERVING = frozenset(
    f"{module}.{name}"
    for module in ("tensorflow", "tensorflow.math", "tensorflow.nn", "tensorflow.linalg", "keras.ops", "keras.backend")
    for name in (
        "sqrt", "rsqrt", "exp", "log", "abs", "square", "negative", "reduce_sum", "reduce_mean",
        "reduce_max", "reduce_min", "sum", "mean", "max", "min", "matmul", "einsum", "reshape",
        "transpose", "expand_dims", "squeeze", "tile", "softmax", "tanh", "sigmoid", "relu",
        "norm", "identity", "stop_gradient", "batch_dot", "dot", "gather", "gather_nd", "take",
        "take_along_axis", "clip_by_value", "pad", "slice", "cumsum", "reverse", "roll",
    )
)
# Calls that make a host-side constant: float32 (or NumPy float64) unless given a dtype.
HOST_CONSTANTS = frozenset(
    {"tensorflow.constant", "keras.backend.constant", "tensorflow.convert_to_tensor", "keras.ops.convert_to_tensor"}
)
# Calls that give shapes, sizes and Python values, never float tensors.
NOT_TENSOR_FUNCS = frozenset(
    {
        "len", "int", "float", "bool", "str", "range", "list", "tuple", "dict", "set", "min",
        "max", "sum", "abs", "round", "isinstance", "getattr", "super", "print", "zip",
        "enumerate", "tensorflow.shape", "tensorflow.rank", "tensorflow.size",
        "keras.ops.shape", "keras.backend.int_shape", "keras.backend.shape",
        "keras.backend.ndim", "tensorflow.TensorShape",
    }
)
NOT_TENSOR_METHODS = frozenset({"get_shape", "as_list", "numpy", "get", "item", "get_config"})
NOT_TENSOR_PARAMS = frozenset({"self", "cls", "training", "return_attention_scores", "use_causal_mask"})
DTYPE_ATTRS = frozenset({"dtype", "compute_dtype", "_compute_dtype", "variable_dtype", "dtype_policy", "_dtype_policy"})
DTYPE_WORDS = frozenset({"float16", "float32", "bfloat16", "float64", "half", "mixed_float16", "mixed_bfloat16"})
MASK_FUNCS = frozenset(
    {
        "tensorflow.sequence_mask", "tensorflow.linalg.band_part", "tensorflow.logical_not",
        "tensorflow.math.logical_not", "keras.ops.logical_not", "keras.ops.tril", "keras.ops.triu",
    }
)


def is_library_module(path: str) -> bool:
    """Whether a file is a module of an importable package (its folder holds an
    `__init__.py`, or it sits under a `src/` folder), whose layers others use under
    policies of their own; a script, a notebook or a test module runs under the policy
    its program sets."""
    if not path or path.endswith(".ipynb") or is_test_file(path):
        return False  # a test module is a program of its own: its layers run under its policy
    folder = os.path.dirname(os.path.abspath(path))
    if run_record.isfile(os.path.join(folder, "__init__.py")):
        return True
    return "src" in folder.replace(os.sep, "/").split("/")


@dataclass(frozen=True)
class Constant:
    """A constant operand: its value, how it was written, and the node to replace."""

    node: cst.BaseExpression  # the operand as written at the use (`-1e9`, `INF`, `self.neg`)
    value: float | int
    sources: tuple[Source, ...]

    @property
    def is_literal_here(self) -> bool:
        return all(s.via == "literal" for s in self.sources)

    @property
    def fixed_in_code(self) -> bool:
        """Written in code (a literal, a constant, a variable, `self.x = ...`), not a
        user-configurable default (parameter, flag)."""
        return bool(self.sources) and all(
            s.via == "literal" or s.via.startswith(("constant ", "variable ", "attribute "))
            for s in self.sources
        )


class Float16Code:
    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.index = facts.index
        self._region: dict[int, str] = {}
        self._classes = [c for c in self.index.nodes(cst.ClassDef)]
        self._class_by_name = _unique_by_name(self._classes)
        self._module_functions = _unique_by_name(
            [f for f in self.index.nodes(cst.FunctionDef) if self.index.parent_of(f) is facts.module]
        )
        self._assignments: dict[tuple[int, str], list[tuple[cst.CSTNode, cst.BaseExpression | None]]] | None = None
        self._self_attributes: dict[tuple[int, str], list[cst.BaseExpression]] | None = None
        self._functions_by_name: dict[str, list[cst.FunctionDef]] | None = None
        self._dtype_exits: dict[int, tuple[cst.CSTNode, dict[int, int], int | None]] = {}
        self.layer_classes = self._find_layer_classes()
        policies, known = self._module_policies()
        self.float16_excluded = bool(policies) and known and not (policies & FLOAT16_POLICIES)
        self.float16_policy = bool(policies & FLOAT16_POLICIES)
        self.library_code = is_library_module(facts.path) and (
            facts.project is None or facts.project.mentions_mixed_precision())
        if not self.float16_excluded and (self.float16_policy or self.library_code):
            self._mark_layer_code()
        if self.float16_policy:
            self._mark_tf_functions()

    # -- regions -------------------------------------------------------------------------
    def region_of(self, node: cst.CSTNode) -> str | None:
        """LAYER or TF_FUNCTION when `node` runs in such code, else None."""
        if not self._region:
            return None
        index = self.index
        scope = index.scope_of(node)
        while scope is not index.module:
            if isinstance(scope, (cst.FunctionDef, cst.Lambda)):
                kind = self._region.get(id(scope))
                if kind is not None:
                    return kind
            scope = index.scope_of(scope)
        return None

    def nodes_in_regions(self, node_type: type) -> list:
        """Every node of a type inside a region, in source order."""
        if not self._region:
            return []
        return [n for n in self.index.nodes(node_type) if self.region_of(n) is not None]

    def _module_policies(self) -> tuple[set[str], bool]:
        policy = self.facts.policy
        names: set[str] = set()
        known = True
        for setting in policy.global_settings:
            if setting.names is None:
                known = False
            else:
                names |= set(setting.names)
        if policy.assumed:
            names.add(policy.assumed)
        names |= policy.from_project[0]
        return names, known

    def _find_layer_classes(self) -> set[int]:
        layers: set[int] = set()
        changed = True
        while changed:
            changed = False
            for cls in self._classes:
                if id(cls) in layers:
                    continue
                for base in cls.bases:
                    if base.keyword is not None:
                        continue
                    local = self._local_class(base.value)
                    if (local is not None and id(local) in layers) or _is_keras_layer_name(
                        self.facts.qualified(base.value)
                    ):
                        layers.add(id(cls))
                        changed = True
                        break
        return layers

    def _local_class(self, expr: cst.BaseExpression) -> cst.ClassDef | None:
        if isinstance(expr, cst.Name) and expr.value not in self.facts.imports.aliases:
            return self._class_by_name.get(expr.value)
        return None

    def _pins_wide_dtype(self, cls: cst.ClassDef, seen: frozenset[int] = frozenset()) -> bool:
        """`super().__init__(dtype="float32")` in the class or a same-module base, or
        `dtype=tf.float32` given to every construction of the class there is."""
        if id(cls) in seen:
            return False
        if not seen and self._built_wide_only(cls):
            return True
        init = _methods(cls).get("__init__")
        if init is not None:
            for node in self.index.descendants(init):
                if isinstance(node, cst.Call) and _is_init_call(node.func):
                    dtype = arg_value(node, None, "dtype")
                    if dtype is not None and self.is_wide_dtype(dtype):
                        return True
        for base in cls.bases:
            local = self._local_class(base.value)
            if local is not None and self._pins_wide_dtype(local, seen | {id(cls)}):
                return True
        return False

    def _built_wide_only(self, cls: cst.ClassDef) -> bool:
        """Every construction of the class passes a float32/float64 `dtype=`
        (`MelSpectrogram(..., dtype=tf.float32)`): its `call` computes in that dtype
        whatever the policy. Only where the module's constructions are all there are: no
        other module of the project names the class, and a library module without a
        project may be built by anyone."""
        built = self.facts.call_graph.constructions(cls)
        if not built:
            return False
        for call in built:
            dtype = arg_value(call, None, "dtype")
            if dtype is None or not self.is_wide_dtype(dtype):
                return False
        project = self.facts.project
        if project is None:
            return not is_library_module(self.facts.path)
        return not project.used_elsewhere(cls.name.value)

    def _mark_layer_code(self) -> None:
        roots: list[cst.CSTNode] = []
        for cls in self._classes:
            if id(cls) in self.layer_classes and not self._pins_wide_dtype(cls):
                call = _methods(cls).get("call")
                if call is not None:
                    roots.append(call)
        for call in self.facts.calls_to(LAMBDA_LAYER):
            dtype = arg_value(call, None, "dtype")
            if dtype is not None and self.is_wide_dtype(dtype):
                continue
            function = self._callable(arg_value(call, 0, "function"), call)
            if function is not None:
                roots.append(function)
        self._mark(roots, LAYER)

    def _mark_tf_functions(self) -> None:
        roots: list[cst.CSTNode] = []
        for function in self.index.nodes(cst.FunctionDef):
            for decorator in function.decorators:
                expr = decorator.decorator
                expr = expr.func if isinstance(expr, cst.Call) else expr
                if self.facts.qualified(expr) in TF_FUNCTION_NAMES:
                    roots.append(function)
        for call in self.facts.calls_to(TF_FUNCTION_NAMES):
            function = self._callable(arg_value(call, 0, "func"), call)
            if function is not None:
                roots.append(function)
        # Only functions that can run under a float16 policy (not ones run before it is set).
        policy = self.facts.policy
        roots = [r for r in roots if not isinstance(r, cst.FunctionDef) or policy.global_float16_at(r.body)]
        self._mark(roots, TF_FUNCTION)

    def _callable(self, expr: cst.BaseExpression | None, at: cst.CSTNode) -> cst.CSTNode | None:
        """The Lambda or same-module FunctionDef an argument names."""
        if isinstance(expr, cst.Lambda):
            return expr
        if isinstance(expr, cst.Name):
            return self._function_named(expr.value)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            cls = self.index.class_of(at)
            return self._method(cls, expr.attr.value) if cls is not None else None
        return None

    def _function_named(self, name: str) -> cst.FunctionDef | None:
        if name in self.facts.imports.aliases:
            return None
        found = self._module_functions.get(name)
        if found is not None:
            return found
        if self._functions_by_name is None:  # built once: a call per function otherwise re-reads them all
            self._functions_by_name = {}
            for function in self.index.nodes(cst.FunctionDef):
                self._functions_by_name.setdefault(function.name.value, []).append(function)
        candidates = self._functions_by_name.get(name, [])
        return candidates[0] if len(candidates) == 1 and self.index.class_of(candidates[0]) is None else None

    def _method(self, cls: cst.ClassDef, name: str, seen: frozenset[int] = frozenset()) -> cst.FunctionDef | None:
        if id(cls) in seen:
            return None
        method = _methods(cls).get(name)
        if method is not None:
            return method
        for base in cls.bases:
            local = self._local_class(base.value)
            if local is not None:
                found = self._method(local, name, seen | {id(cls)})
                if found is not None:
                    return found
        return None

    def _mark(self, roots: list[cst.CSTNode], kind: str) -> None:
        queue = [r for r in roots if id(r) not in self._region]
        for root in queue:
            self._region[id(root)] = kind
        while queue:
            function = queue.pop()
            upcast = self._last_parameter_upcast(function)
            for node in self.index.descendants(function):
                if not isinstance(node, cst.Call):
                    continue
                if upcast is not None and self.index.before(upcast, node):
                    continue  # called with the float32 copies of the inputs: its code computes in float32
                target = self._callee(node)
                if target is not None and id(target) not in self._region:
                    self._region[id(target)] = kind
                    queue.append(target)

    def _last_parameter_upcast(self, function: cst.CSTNode) -> cst.CSTNode | None:
        """The last statement of a function that re-binds one of its parameters to a
        float32 cast of it (`boxes = ops.pad(ops.cast(boxes, "float32"), ...)`): the
        function chose float32 for what it computes from there on, and so for what it
        hands the functions it calls after it (keras-hub's NMS casts its boxes, then
        loops over `_bbox_overlap`)."""
        if not isinstance(function, cst.FunctionDef):
            return None
        params = {p.name.value for p in _params(function)}
        found = None
        for node in self.index.descendants(function):
            if not (isinstance(node, cst.Assign) and len(node.targets) == 1
                    and isinstance(node.targets[0].target, cst.Name) and node.targets[0].target.value in params):
                continue
            name = node.targets[0].target.value
            for call in [node.value, *self.index.descendants(node.value)]:
                if isinstance(call, cst.Call) and self.facts.qualified(call.func) in CASTS and self.is_wide(call):
                    value = arg_value(call, 0, "x")
                    if isinstance(value, cst.Name) and value.value == name:
                        found = node
        return found

    def _callee(self, call: cst.Call) -> cst.FunctionDef | None:
        func = call.func
        if isinstance(func, cst.Name):
            return self._function_named(func.value)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            cls = self.index.class_of(call)
            return self._method(cls, func.attr.value) if cls is not None else None
        return None

    # -- constants ---------------------------------------------------------------------------
    def constant(self, expr: cst.BaseExpression) -> Constant | None:
        """The numeric constant an operand stands for (literal, constant name, parameter
        default, `self.attr` assigned once in the class), else None."""
        value = self.facts.values.resolve(expr)
        if value is None:
            value = self._resolve_self_attribute(expr)
        if value is None or not is_number(value.value):
            return None
        return Constant(expr, value.value, value.sources)  # type: ignore[arg-type]

    def _resolve_self_attribute(self, expr: cst.BaseExpression, depth: int = 0) -> Value | None:
        negate = False
        while isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            negate ^= isinstance(expr.operator, cst.Minus)
            expr = expr.expression
        if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"):
            return None
        cls = self.index.class_of(expr)
        if cls is None or depth > 2:
            return None
        assigned = self._assigned_in_hierarchy(cls, expr.attr.value)
        if len(assigned) != 1:
            return None
        inner = self.facts.values.resolve(assigned[0])
        if inner is None or not is_number(inner.value):
            return None
        label = f"attribute self.{expr.attr.value}"
        sources = tuple(Source(s.literal, label if s.via == "literal" else s.via, s.name, s.where) for s in inner.sources)
        return Value(-inner.value if negate else inner.value, sources)  # type: ignore[operator]

    def _assigned_in_hierarchy(
        self, cls: cst.ClassDef, attribute: str, seen: frozenset[int] = frozenset()
    ) -> list[cst.BaseExpression]:
        """`self.<attribute> = ...` values in the class and its same-module bases."""
        if id(cls) in seen:
            return []
        found = list(self._attribute_values().get((id(cls), attribute), []))
        for base in cls.bases:
            local = self._local_class(base.value)
            if local is not None:
                found += self._assigned_in_hierarchy(local, attribute, seen | {id(cls)})
        return found

    def _attribute_values(self) -> dict[tuple[int, str], list[cst.BaseExpression]]:
        if self._self_attributes is None:
            found: dict[tuple[int, str], list[cst.BaseExpression]] = {}
            for node in self.index.nodes(cst.Assign):
                for target in node.targets:
                    t = target.target
                    if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                        cls = self.index.class_of(node)
                        if cls is not None:
                            found.setdefault((id(cls), t.attr.value), []).append(node.value)
            for node in self.index.nodes(cst.AugAssign):
                t = node.target
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                    cls = self.index.class_of(node)
                    if cls is not None:
                        found.setdefault((id(cls), t.attr.value), []).extend([node.value, node.value])
            self._self_attributes = found
        return self._self_attributes

    # -- arithmetic trees ---------------------------------------------------------------------
    def tree_root(self, node: cst.CSTNode) -> cst.BaseExpression:
        """The largest arithmetic expression (+ - * / and unary signs) containing `node`."""
        current = node
        while True:
            parent = self.index.parent_of(current)
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, ARITHMETIC):
                current = parent
            elif isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, (cst.Minus, cst.Plus)):
                current = parent
            else:
                return current  # type: ignore[return-value]

    def leaves(self, root: cst.BaseExpression) -> list[cst.BaseExpression]:
        """Operands of an arithmetic tree, in source order (an augmented assignment's
        target counts: `scores += -1e9 * mask`)."""
        found: list[cst.BaseExpression] = []
        parent = self.index.parent_of(root)
        if isinstance(parent, cst.AugAssign) and type(parent.operator) in AUG_ARITHMETIC and parent.value is root:
            found.append(parent.target)

        def walk(expr: cst.BaseExpression) -> None:
            if self.constant(expr) is not None:
                found.append(expr)
            elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, ARITHMETIC):
                walk(expr.left)
                walk(expr.right)
            elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
                walk(expr.expression)
            else:
                found.append(expr)

        walk(root)
        return found

    def has_tensor_operand(self, leaves: list[cst.BaseExpression]) -> bool:
        return any(self.constant(leaf) is None for leaf in leaves)

    # -- dtypes -------------------------------------------------------------------------------
    def is_wide(self, expr: cst.BaseExpression | None, depth: int = 0) -> bool:
        """Known to compute in float32/float64 (cast first, created float32, or combined
        with such a tensor: TensorFlow does not promote between float dtypes)."""
        if expr is None or depth > 16:
            return False
        facts = self.facts
        if isinstance(expr, cst.Call):
            qualified = facts.qualified(expr.func)
            if qualified in CASTS:
                dtype = arg_value(expr, CASTS[qualified], "dtype")
                return dtype is not None and self.is_wide_dtype(dtype, depth + 1)
            dtype = arg_value(expr, None, "dtype")
            if dtype is not None:
                return self.is_wide_dtype(dtype, depth + 1)
            if qualified is None:
                # A function of the module whose every return value is float32.
                callees = facts.call_graph.callees(expr)
                returns = [r for f in callees for r in self._returns(f)]
                return bool(callees) and bool(returns) and all(self.is_wide(r, depth + 1) for r in returns)
            if qualified in MATCHING_OPERANDS:
                # Operands of one dtype: a float32 one makes it float32 (TensorFlow does not
                # promote between float dtypes, `tf.tensordot(float16, float32)` raises; Keras 3
                # promotes to the wider one).
                return any(a.keyword is None and self.is_wide(a.value, depth + 1) for a in expr.args)
            if qualified in DTYPE_PRESERVING:
                return self.is_wide(arg_value(expr, 0), depth + 1)
            return qualified in FLOAT32_BY_DEFAULT or qualified in WIDE_ONLY or self._float32_from_another_module(expr)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, ARITHMETIC):
            return self.is_wide(expr.left, depth + 1) or self.is_wide(expr.right, depth + 1)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Power):
            return self.is_wide(expr.left, depth + 1)  # `tf.abs(stft) ** 2`: the base's dtype
        if isinstance(expr, cst.UnaryOperation):
            return self.is_wide(expr.expression, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.is_wide(expr.value, depth + 1)
        if isinstance(expr, cst.Name):
            binding = self.binding_before(expr)
            if binding is None:
                return self._wide_argument(expr, depth)
            node, value = binding
            if isinstance(node, cst.AugAssign):
                return self.is_wide(node.value, depth + 1) or self._name_wide_before(expr, node, depth)
            return self.is_wide(value, depth + 1)
        return False

    def _float32_from_another_module(self, call: cst.Call) -> bool:
        """A call of another project module's function whose every return casts to
        float32 (`get_padding(x)`, which returns `tf.cast(..., dtype)` with
        `dtype=tf.float32` by default), given no argument that could choose another dtype."""
        name = project_function(self.facts, call)
        found = self.facts.project.float32_returns(name) if name is not None else None  # type: ignore[union-attr]
        if found is None or has_star_args(call):
            return False
        params, deciding, bound = found
        positional = params[1:] if bound else params
        passed = {a.keyword.value for a in call.args if a.keyword is not None}
        passed |= set(positional[:len([a for a in call.args if a.keyword is None])])
        return not passed & set(deciding)

    def _wide_argument(self, name: cst.Name, depth: int) -> bool:
        """A parameter that every call of its function in the module gives a float32
        tensor (`attention(q, k, v, create_padding_mask(seq))`)."""
        values = self.facts.values
        found = values.parameter_of(name)
        if found is None:
            return False
        arguments = [argument for _, argument in values.arguments(*found)]
        return bool(arguments) and all(self.is_wide(a, depth + 1) for a in arguments)

    def _returns(self, function: cst.FunctionDef) -> list[cst.BaseExpression]:
        return [
            node.value for node in self.index.descendants(function)
            if isinstance(node, cst.Return) and node.value is not None
            and self.index.enclosing(node, cst.FunctionDef, cst.Lambda) is function
        ]

    def is_wide_dtype(self, dtype: cst.BaseExpression, depth: int = 0) -> bool:
        """float32/float64 by name, `K.floatx()` or a layer's `self.dtype` (both float32
        under the mixed policies: the variable dtype, not the compute dtype)."""
        if isinstance(dtype, cst.Call) and self.facts.qualified(dtype.func) in ("keras.backend.floatx", "keras.config.floatx"):
            return True
        if (
            isinstance(dtype, cst.Attribute)
            and dtype.attr.value in VARIABLE_DTYPE_ATTRS
            and isinstance(dtype.value, cst.Name)
            and dtype.value.value == "self"
            and self.index.class_of(dtype) is not None
            and id(self.index.class_of(dtype)) in self.layer_classes
        ):
            return True
        if isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype" and depth <= 16:
            return self.is_wide(dtype.value, depth + 1)  # `tf.cast(mask, dist.dtype)`: dist's dtype
        names = self.facts.policy.policy_names(dtype)
        return bool(names) and names <= WIDE_FLOATS  # type: ignore[operator]

    def host_computed(self, root: cst.CSTNode) -> bool:
        """The expression is the value of a host-side constant (`K.constant(-1e9 * tri)`,
        `tf.constant(...)`) made without a dtype or with a float32 one: float32, not the
        layer's dtype."""
        parent = self.index.parent_of(root)
        call = self.index.parent_of(parent) if isinstance(parent, cst.Arg) else None
        if not isinstance(call, cst.Call) or self.facts.qualified(call.func) not in HOST_CONSTANTS:
            return False
        if arg_value(call, 0, "value", "x") is not root:
            return False
        dtype = arg_value(call, 1, "dtype")
        return dtype is None or self.is_wide_dtype(dtype)

    def _name_wide_before(self, name: cst.Name, before: cst.CSTNode, depth: int) -> bool:
        binding = self.binding_before(name, before)
        return binding is not None and self.is_wide(binding[1], depth + 1)

    def any_wide(self, exprs: list[cst.BaseExpression]) -> bool:
        return any(self.is_wide(e) for e in exprs)

    def binding_before(
        self, name: cst.Name, use: cst.CSTNode | None = None
    ) -> tuple[cst.CSTNode, cst.BaseExpression | None] | None:
        """The last assignment to `name` in its function that precedes `use` (default:
        the name itself), as (statement node, value); None if there is none."""
        read = use is None or use is name
        use = use or name
        scope = self.index.enclosing(name, cst.FunctionDef, cst.Lambda, cst.ClassDef) or self.facts.module
        entries = self._assignment_table().get((id(scope), name.value), [])
        chosen = None
        for node, value in entries:
            if self.index.before(node, use) and not self.index.contains(node, use):
                chosen = (node, value)
        if chosen is None and read and not entries:
            return self._closure_binding(name, scope)
        return chosen

    def _closure_binding(self, name: cst.Name, scope: cst.CSTNode) -> tuple[cst.CSTNode, cst.BaseExpression | None] | None:
        """What a nested function reads for a name it does not bind: the enclosing
        function's last assignment to it, where none comes after the nested function's
        definition (`x = tf.cast(x, tf.float32)`, then `def body(): ... x ...`)."""
        inner = scope
        while isinstance(inner, (cst.FunctionDef, cst.Lambda)):
            if any(p.name.value == name.value for p in _params(inner)) or self.facts.bindings.is_bound(inner, name.value):
                return None  # a parameter, `with ... as`, an import: bound here
            outer = self.index.enclosing(inner, cst.FunctionDef, cst.Lambda, cst.ClassDef)
            if not isinstance(outer, (cst.FunctionDef, cst.Lambda)):
                return None
            entries = self._assignment_table().get((id(outer), name.value), [])
            if entries:
                if any(not self.index.before(node, inner) for node, _ in entries):
                    return None  # rebound after the definition: the value depends on when it runs
                return entries[-1]
            inner = outer
        return None

    def _assignment_table(self) -> dict[tuple[int, str], list[tuple[cst.CSTNode, cst.BaseExpression | None]]]:
        if self._assignments is None:
            table: dict[tuple[int, str], list[tuple[cst.CSTNode, cst.BaseExpression | None]]] = {}
            module = self.facts.module

            def add(node: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
                scope = self.index.enclosing(node, cst.FunctionDef, cst.Lambda, cst.ClassDef) or module
                if isinstance(target, cst.Name):
                    table.setdefault((id(scope), target.value), []).append((node, value))
                elif isinstance(target, (cst.Tuple, cst.List)):
                    for element in target.elements:
                        add(node, element.value, None)

            for node in self.index.nodes(cst.Assign):
                for target in node.targets:
                    add(node, target.target, node.value)
            for node in self.index.nodes(cst.AnnAssign):
                add(node, node.target, node.value)
            for node in self.index.nodes(cst.AugAssign):
                add(node, node.target, None)
            for node in self.index.nodes(cst.For):
                add(node, node.target, None)
            for lst in table.values():
                lst.sort(key=lambda entry: self.index.position_in_order(entry[0]))
            self._assignments = table
        return self._assignments

    # -- tensors a dtype-aware value can be spelled with --------------------------------------
    def tensor_name(self, expr: cst.BaseExpression | None, depth: int = 0) -> cst.Name | None:
        """`expr` if it is a plain name that certainly holds a tensor in this function:
        a parameter without a value default, or a local bound to a tensor-valued call,
        arithmetic on tensors or a slice of one."""
        if not isinstance(expr, cst.Name) or depth > 4 or expr.value in NOT_TENSOR_PARAMS:
            return None
        if self.constant(expr) is not None:
            return None
        binding = self.binding_before(expr)
        if binding is not None:
            node, value = binding
            if isinstance(node, cst.AugAssign):
                return expr if self._tensor_valued(node.value, depth) else None
            return expr if value is not None and self._tensor_valued(value, depth) else None
        function = self.index.enclosing(expr, cst.FunctionDef, cst.Lambda)
        if function is None:
            return None
        params = function.params
        for param in _params(function):
            if param.name.value == expr.value:
                if param is params.star_arg or param is params.star_kwarg:
                    return None
                default = param.default
                if default is not None and not (isinstance(default, cst.Name) and default.value == "None"):
                    return None
                annotation = param.annotation
                if annotation is not None and dotted_name(annotation.annotation) in ("bool", "int", "float", "str"):
                    return None
                return expr
        return None

    def _tensor_valued(self, value: cst.BaseExpression, depth: int) -> bool:
        if isinstance(value, cst.Call):
            func = value.func
            qualified = self.facts.qualified(func)
            name = qualified or (func.value if isinstance(func, cst.Name) else None)
            if name in NOT_TENSOR_FUNCS:
                return False
            if isinstance(func, cst.Attribute) and func.attr.value in NOT_TENSOR_METHODS:
                return False
            return True
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, ARITHMETIC):
            return any(
                self.tensor_name(leaf, depth + 1) is not None or (isinstance(leaf, cst.Call) and self._tensor_valued(leaf, depth + 1))
                for leaf in self.leaves(value)
            )
        if isinstance(value, cst.Subscript):
            inner = value.value
            return self.tensor_name(inner, depth + 1) is not None if isinstance(inner, cst.Name) else False
        return False

    def dtype_source(self, leaves: list[cst.BaseExpression]) -> cst.Name | None:
        """A tensor whose `.dtype` the leaves compute in: the `x` of a `tf.cast(m, x.dtype)`
        leaf first, else the first tensor-valued name, else the argument of a `*_like` call."""
        for leaf in leaves:
            if isinstance(leaf, cst.Call) and self.facts.qualified(leaf.func) in CASTS:
                dtype = arg_value(leaf, CASTS[self.facts.qualified(leaf.func)], "dtype")  # type: ignore[index]
                if isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype" and isinstance(dtype.value, cst.Name):
                    if dtype.value.value not in NOT_TENSOR_PARAMS:
                        return dtype.value
        for leaf in leaves:
            found = self.tensor_name(leaf)
            if found is not None:
                return found
        for leaf in leaves:
            if isinstance(leaf, cst.Call) and (self.facts.qualified(leaf.func) or "").endswith(("ones_like", "zeros_like")):
                found = self.tensor_name(arg_value(leaf, 0, "input", "x"))
                if found is not None:
                    return found
        return None

    # -- the dtype premise ------------------------------------------------------------------------
    def operand_dtype(self, operands: list[cst.BaseExpression | None]) -> Premise:
        """The premise that the tensors a constant meets are float16, from where the
        non-constant operands come from:

        - proved: one is cast to float16 (or created with a float16 `dtype=`);
        - inferred: one is the code's own tensor (a parameter of the layer code, a
          framework op or a sublayer on its tensors, an attribute of the layer): it
          computes in the layer's dtype, float16 under mixed_float16;
        - assumed: every one is the value of a function of another project module, a
          comparison (booleans), a parameter of @tf.function code (no layer casts what
          it is given), or, in Keras 2 code, an argument of a layer's `call` other than
          its inputs (Keras 2 casts only the first), whose dtype mplint does not follow.

        The walk follows names to their bindings (also a tuple unpacked from a function
        of the module: the matching element of what it returns), the module's helpers to
        what they return, a helper's parameter to what the module's calls give it, a
        framework op to the tensors it is given, and an explicit `dtype=` to its value:
        a dtype that a call mplint does not follow chooses (`mask_dtype(...)`) is unknown.
        """
        kind, why = _strongest([self._origin(o) for o in operands if o is not None and self.constant(o) is None])
        if kind == "float16":
            return Premise(DTYPE, "float16", Status.PROVED, why)
        if kind == "activation":
            return Premise(DTYPE, "float16", Status.INFERRED,
                           "the layer code's own tensor: its compute dtype, float16 under mixed_float16")
        return Premise(DTYPE, "float16", Status.ASSUMED, why or "no tensor operand")

    def _origin(self, expr: cst.BaseExpression, depth: int = 0) -> tuple[str, str]:
        """("float16" | "activation" | "unknown", why) for one operand."""
        facts = self.facts
        short = " ".join(facts.module.code_for_node(expr).split())[:50]
        if depth > ORIGIN_DEPTH:
            return "activation", ""
        if isinstance(expr, cst.Comparison):
            return "unknown", f"`{short}` is a comparison's booleans"
        if isinstance(expr, (cst.BinaryOperation, cst.UnaryOperation)):
            parts = [expr.left, expr.right] if isinstance(expr, cst.BinaryOperation) else [expr.expression]
            found = [self._origin(p, depth + 1) for p in parts if self.constant(p) is None]
            return _strongest(found) if found else ("activation", "")
        if isinstance(expr, cst.Subscript):
            return self._origin(expr.value, depth + 1)
        if isinstance(expr, cst.Name):
            binding = self.binding_before(expr)
            if binding is None:
                if self.region_of(expr) == TF_FUNCTION and self._is_parameter(expr):
                    # no layer casts what a @tf.function is given: its callers decide
                    return "unknown", f"`{short}` is a parameter of @tf.function code: its dtype is what its callers pass"
                parameter = self.facts.values.parameter_of(expr)
                passed = self._passed_arguments(parameter)
                if passed:  # a helper's parameter: what the module's calls of it give
                    return _strongest([self._origin(a, depth + 1) for a in passed])
                if self._uncast_call_argument(parameter):
                    return "unknown", (f"`{short}` is an argument of a layer's `call` other than its inputs: Keras 2 "
                                       "casts only the inputs to the compute dtype, so its dtype is what the caller passes")
                return "activation", ""  # a parameter of layer code (or a name this walk does not follow)
            node, value = binding
            if isinstance(node, cst.AugAssign):
                value = node.value
            if value is None and isinstance(node, cst.Assign):
                return self._unpacked_origin(node, expr, depth)
            return self._origin(value, depth + 1) if value is not None else ("activation", "")
        if isinstance(expr, cst.Call):
            qualified = facts.qualified(expr.func)
            dtype = arg_value(expr, CASTS[qualified], "dtype") if qualified in CASTS else arg_value(expr, None, "dtype")
            if dtype is not None:
                return self._given_dtype_origin(dtype, short, depth)
            if qualified in DTYPE_PRESERVING:
                first = arg_value(expr, 0)
                return self._origin(first, depth + 1) if first is not None else ("activation", "")
            if qualified is None:  # a function of this module: what it returns
                returns = [r for f in facts.call_graph.callees(expr) for r in self._returns(f)]
                if returns:
                    return _strongest([self._origin(r, depth + 1) for r in returns])
            elif qualified.startswith(FRAMEWORK_PREFIXES) and qualified not in FLOAT32_BY_DEFAULT:
                # a framework op computes in the dtype of the tensors it is given
                given = [a.value for a in expr.args if a.keyword is None and self.constant(a.value) is None
                         and not isinstance(a.value, (cst.Tuple, cst.List, cst.SimpleString))]
                if given:
                    return _strongest([self._origin(g, depth + 1) for g in given])
            elsewhere = project_function(self.facts, expr)
            if elsewhere is not None:
                return "unknown", (f"`{short}` is the value of `{elsewhere}`, a function of another module "
                                   "whose return dtype mplint does not follow")
        return "activation", ""

    def _given_dtype_origin(self, dtype: cst.BaseExpression, short: str, depth: int) -> tuple[str, str]:
        """The origin of a value created or cast with an explicit `dtype`: float16 by name,
        the origin of `x` for `x.dtype`, the layer's own dtype for a dtype of the layer;
        a dtype bound to the value of a call mplint does not follow (`_mask_dtype(...)`)
        is unknown, not the layer's compute dtype."""
        names = self.facts.policy.policy_names(dtype) or set()
        if names & {"float16", "half"}:
            return "float16", f"`{short}` is float16"
        if names:
            return "activation", ""  # a named dtype other than float16 (wide ones are filtered before)
        if isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype":
            return self._origin(dtype.value, depth + 1)  # `tf.cast(mask, scores.dtype)`
        if isinstance(dtype, cst.Name) and depth <= ORIGIN_DEPTH:
            binding = self.binding_before(dtype)
            if binding is not None and binding[1] is not None and isinstance(binding[1], cst.Call):
                spelled = " ".join(self.facts.module.code_for_node(binding[1]).split())[:50]
                return "unknown", (f"`{short}` has the dtype `{spelled}` gives, which mplint does not follow")
            passed = self._passed_arguments(self.facts.values.parameter_of(dtype)) if binding is None else []
            if passed:  # a helper's `dtype` parameter: the dtypes the module's calls give it
                return _strongest([self._given_dtype_origin(a, short, depth + 1) for a in passed])
        return "activation", ""

    def _uncast_call_argument(self, found: tuple[cst.FunctionDef, cst.Param] | None) -> bool:
        """The parameter a name reads (`values.parameter_of`) is one of a layer's `call`
        other than its first (`mask`, `attention_bias`), in Keras 2 code: Keras 2 casts
        only a layer's first input to its compute dtype (Keras 3 casts every floating
        argument)."""
        if found is None or found[0].name.value != "call":
            return False
        function, param = found
        owner = self.index.class_of(function)
        if owner is None or id(owner) not in self.layer_classes:
            return False
        positional = [*function.params.posonly_params, *function.params.params]
        first = positional[1] if len(positional) > 1 else None
        return param is not first and self.facts.target.is_keras2

    def _passed_arguments(self, found: tuple[cst.FunctionDef, cst.Param] | None) -> list[cst.BaseExpression]:
        """What the module's calls give a helper's parameter (as `values.parameter_of`
        finds it; not `None`): empty for a parameter of a layer's own `call` (what Keras
        passes it) or one without calls in the module."""
        if found is None or found[0].name.value in ("call", "__call__"):
            return []
        return [
            argument for _, argument in self.facts.values.arguments(*found)
            if not (isinstance(argument, cst.Name) and argument.value == "None")
        ]

    def _unpacked_origin(self, node: cst.Assign, name: cst.Name, depth: int) -> tuple[str, str]:
        """The origin of a name bound by unpacking (`keep, masked = self._mask(x)`): the
        matching element of what the module's function returns; unknown for a function
        of another module; the layer's own tensor otherwise (`q, k = tf.split(x, 2)`)."""
        value = node.value
        position = _position_in_targets(node, name)
        if not isinstance(value, cst.Call) or position is None:
            return "activation", ""
        callees = self.facts.call_graph.callees(value)
        if callees:
            found = []
            for function in callees:
                for returned in self._returns(function):
                    if isinstance(returned, cst.Tuple) and position < len(returned.elements):
                        element = returned.elements[position].value
                        if not isinstance(element, cst.StarredElement):
                            found.append(self._origin(element, depth + 1))
            return _strongest(found) if found else ("activation", "")
        elsewhere = project_function(self.facts, value)
        if elsewhere is not None:
            short = " ".join(self.facts.module.code_for_node(value).split())[:50]
            return "unknown", (f"`{name.value}` is unpacked from `{short}`, a function of another module "
                               "whose return dtype mplint does not follow")
        return "activation", ""

    def _is_parameter(self, name: cst.Name) -> bool:
        function = self.index.enclosing(name, cst.FunctionDef, cst.Lambda)
        return function is not None and any(p.name.value == name.value for p in _params(function))

    # -- being dtype-aware already --------------------------------------------------------------
    def under_dtype_branch(self, node: cst.CSTNode) -> bool:
        """Inside a branch of an `if`/conditional expression that tests a dtype, or after
        an `if` that tests one and leaves the block (`if dtype == tf.float16: return
        tf.constant(-1e4, dtype)`, then `return tf.constant(-1e9, dtype)`)."""
        previous = node
        for ancestor in self.index.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.While)) and previous is not ancestor.test:
                if self.mentions_dtype(ancestor.test):
                    return True
            if isinstance(ancestor, cst.BaseStatement) and self._after_a_dtype_exit(ancestor):
                return True
            previous = ancestor
        return False

    def _after_a_dtype_exit(self, statement: cst.BaseStatement) -> bool:
        """An earlier statement of the same block is an `if` that tests a dtype and
        returns or raises: this statement runs only where that test is false."""
        block = self.index.parent_of(statement)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return False
        cached = self._dtype_exits.get(id(block))
        if cached is None:
            # Per block, once: each statement's position and the first dtype exit's (the
            # block itself is kept with them, so that its id stays its own).
            positions = {id(sibling): i for i, sibling in enumerate(block.body)}
            first = next((i for i, sibling in enumerate(block.body)
                          if isinstance(sibling, cst.If) and sibling.orelse is None
                          and _leaves_the_block(sibling.body) and self.mentions_dtype(sibling.test)), None)
            cached = self._dtype_exits[id(block)] = (block, positions, first)
        _, positions, first = cached
        return first is not None and positions.get(id(statement), -1) > first

    def mentions_dtype(self, expr: cst.CSTNode) -> bool:
        for node in (expr, *self.index.descendants(expr)):
            if isinstance(node, cst.Attribute) and (
                node.attr.value in DTYPE_ATTRS or self.facts.qualified(node) in DTYPE_CONSTANTS
            ):
                return True
            if isinstance(node, cst.Name) and (node.value in DTYPE_ATTRS or node.value in DTYPE_WORDS):
                return True
            if isinstance(node, cst.SimpleString) and node.evaluated_value in DTYPE_WORDS:
                return True
        return False

    def dtype_aware_nearby(self, node: cst.CSTNode) -> bool:
        """The statement already uses a dtype's limits (`x.dtype.min`, `tf.float16.max`,
        `np.finfo(...)`): the author chose dtype-aware values there."""
        statement = self.index.statement_of(node)
        if statement is None:
            return False
        for inner in self.index.descendants(statement):
            if isinstance(inner, cst.Attribute) and inner.attr.value in ("min", "max", "tiny", "eps"):
                owner = inner.value
                if isinstance(owner, cst.Attribute) and owner.attr.value in DTYPE_ATTRS:
                    return True
                if self.facts.qualified(owner) in DTYPE_CONSTANTS:
                    return True
                if isinstance(owner, cst.Call) and _callee_name(owner).endswith(("finfo", "as_dtype")):
                    return True
            if isinstance(inner, cst.Call) and _callee_name(inner).endswith("finfo"):
                return True
        return False

    def mask_like(self, expr: cst.BaseExpression) -> bool:
        """Looks like an attention/padding mask: a name with "mask" in it, the `1 - m`
        inversion idiom, or a mask-building call."""
        for node in (expr, *self.index.descendants(expr)):
            if isinstance(node, cst.Name) and "mask" in node.value.lower():
                return True
            if isinstance(node, cst.Attribute) and "mask" in node.attr.value.lower():
                return True
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract):
                left = self.facts.values.resolve(node.left)
                if left is not None and left.value == 1 and self.constant(node.right) is None:
                    return True
            if isinstance(node, cst.Call) and self.facts.qualified(node.func) in MASK_FUNCS:
                return True
        return False

    def runs_on_tensorflow(self) -> bool:
        """Tensors here are TensorFlow tensors (`x.dtype.min` works): the module targets
        Keras 2 (always TensorFlow) or imports TensorFlow at its top level."""
        if self.facts.target.is_keras2:
            return True
        # A Keras 3 module that imports TensorFlow only in a function or a branch (for the
        # TensorFlow backend) also runs on JAX and torch, where `x.dtype.min` raises.
        for statement in self.facts.module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    names = [alias.name for alias in small.names] if isinstance(small, cst.Import) else \
                        [small.module] if isinstance(small, cst.ImportFrom) and small.module is not None else []
                    if any((dotted_name(n) or "").split(".")[0] == "tensorflow" for n in names):
                        return True
        return False


# -- helpers ------------------------------------------------------------------------------

def _is_keras_layer_name(qualified: str | None) -> bool:
    if not qualified or not qualified.startswith("keras."):
        return False
    last = qualified.rsplit(".", 1)[-1]
    if last in ("Layer", "Model", "Sequential", "Functional"):
        return True
    return qualified.startswith("keras.layers.") and last[:1].isupper()


def _unique_by_name(nodes: list) -> dict:
    found: dict = {}
    duplicated: set[str] = set()
    for node in nodes:
        name = node.name.value
        if name in found:
            duplicated.add(name)
        found[name] = node
    return {k: v for k, v in found.items() if k not in duplicated}


def _methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    body = cls.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    return {s.name.value: s for s in statements if isinstance(s, cst.FunctionDef)}


def _params(function: cst.CSTNode) -> list[cst.Param]:
    params = function.params  # type: ignore[attr-defined]
    found = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            found.append(star)
    return found


def _is_init_call(func: cst.BaseExpression) -> bool:
    """`super().__init__`, `super(C, self).__init__` or `Base.__init__`."""
    return isinstance(func, cst.Attribute) and func.attr.value == "__init__"


def _position_in_targets(node: cst.Assign, name: cst.Name) -> int | None:
    """The index of `name` in the assignment's one flat tuple/list target, if it is there."""
    for target in node.targets:
        if isinstance(target.target, (cst.Tuple, cst.List)):
            for index, element in enumerate(target.target.elements):
                if isinstance(element.value, cst.Name) and element.value.value == name.value:
                    return index
    return None


def _callee_name(call: cst.Call) -> str:
    return dotted_name(call.func) or (call.func.attr.value if isinstance(call.func, cst.Attribute) else "")


def _strongest(origins: list[tuple[str, str]]) -> tuple[str, str]:
    """The origin a set of operands gives their result: float16 if one is, else the
    layer's own tensor if one is, else the first unknown (("", "") for none)."""
    for wanted in ("float16", "activation"):
        for kind, why in origins:
            if kind == wanted:
                return kind, why
    return origins[0] if origins else ("", "")


def _leaves_the_block(body: cst.BaseSuite) -> bool:
    """The suite's last statement returns or raises."""
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return isinstance(last, (cst.Return, cst.Raise))
