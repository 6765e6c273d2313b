"""MP5xx: float16 numerics hazards (constants float16 cannot hold, float16 inputs).

Which code counts as computing in float16 is decided once per module by
`mplint.facts.float16_code.Float16Code` (a library's layer code everywhere, a program's
layer code and `@tf.function` code under a float16 policy); the input pipeline by
`mplint.facts.input_pipeline.InputPipeline`. The float16 arithmetic itself is
`rules._float16` (exact IEEE binary16 rounding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from mplint.analysis.assigned_reads import reads_of_assigned
from mplint.analysis.calls import arg_value, callee_name, string_value
from mplint.analysis.values import literal_number
from mplint.core.diagnostics import DTYPE, FixAvailability, Premise, Severity, Status
from mplint.core.float16_literals import has_float16_hazard_literal, is_float16_hazard
from mplint.catalogue.rule import Replace, Rule

from mplint.facts.float16_numbers import SAFE_EPSILON_TEXT, overflows, rounds_to_zero, spell
from mplint.facts.float16_code import ARITHMETIC, AUG_ARITHMETIC, LAYER, Constant, Float16Code
from mplint.facts.input_pipeline import InputPipeline, float16_dtype_fix
from mplint.facts.scaled_fill import scaled_after_fill

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

# Select a value by mask: (canonical name, positions of the two branches, their keywords).
WHERE_FUNCS = {
    "tensorflow.where": ((1, 2), ("x", "y")),
    "tensorflow.compat.v1.where": ((1, 2), ("x", "y")),
    "tensorflow.where_v2": ((1, 2), ("x", "y")),
    "keras.ops.where": ((1, 2), ("x1", "x2")),
    "keras.backend.switch": ((1, 2), ("then_expression", "else_expression")),
    "tensorflow.experimental.numpy.where": ((1, 2), ("x", "y")),
}
FULL_LIKE = frozenset({"keras.ops.full_like", "tensorflow.experimental.numpy.full_like"})
# Make a tensor of a value in a given dtype: (canonical name, position of the dtype).
CONVERT_WITH_DTYPE = {
    "tensorflow.constant": 1,
    "tensorflow.cast": 1,
    "tensorflow.dtypes.cast": 1,
    "tensorflow.convert_to_tensor": 1,
    "keras.ops.cast": 1,
    "keras.ops.convert_to_tensor": 1,
    "keras.backend.cast": 1,
    "keras.backend.constant": 1,
}
# Floors: the epsilon argument's position and keyword; the tensor is the other argument.
CLAMPS = {
    "tensorflow.maximum": (1, "y"),
    "tensorflow.math.maximum": (1, "y"),
    "keras.ops.maximum": (1, "x2"),
    "keras.backend.maximum": (1, "y"),
    "tensorflow.clip_by_value": (1, "clip_value_min"),
    "keras.ops.clip": (1, "x_min"),
    "keras.backend.clip": (1, "min_value"),
}
# Ops that add their epsilon in the input's dtype (checked in tf 2.21 / Keras 3.15).
EPSILON_OPS = {
    "tensorflow.math.l2_normalize": (2, "epsilon"),
    "tensorflow.nn.l2_normalize": (2, "epsilon"),
    "tensorflow.linalg.l2_normalize": (2, "epsilon"),
    "tensorflow.nn.batch_normalization": (5, "variance_epsilon"),
    "keras.ops.batch_normalization": (6, "epsilon"),
    "keras.backend.batch_normalization": (6, "epsilon"),
}
# Layers whose epsilon is added in float16 under mixed_float16 (see docs/numerics.md):
# name -> (position of epsilon, only for Keras 2?)
FLOAT16_EPSILON_LAYERS = {
    "keras.layers.GroupNormalization": (2, True),
    "tensorflow_addons.layers.GroupNormalization": (2, False),
    "tensorflow_addons.layers.InstanceNormalization": (None, False),
}


def _spelled_by_hazard_literal(constant: Constant) -> bool:
    """The value comes from a literal float16 cannot hold itself (`1e9`, `1e-12`), not from
    arithmetic on small ones (`1000 * 1000`), written in this file: what the pre-filter can
    see in its code (a constant imported from another module is not, so reporting it would
    make the findings depend on which rules are selected)."""
    for source in constant.sources:
        if source.external:
            continue
        number = literal_number(source.literal)
        if number is not None and is_float16_hazard(abs(number)):
            return True
    return False


def _overflowing(constant: Constant | None) -> bool:
    return constant is not None and overflows(constant.value) and _spelled_by_hazard_literal(constant)


def _vanishing(constant: Constant | None) -> bool:
    return constant is not None and rounds_to_zero(constant.value) and _spelled_by_hazard_literal(constant)


def _ones_like(facts, expr: cst.BaseExpression) -> bool:
    """`-1e9 * tf.ones_like(x)`: a tensor filled with the constant."""
    return isinstance(expr, cst.Call) and (facts.qualified(expr.func) or "").endswith(".ones_like")


def _describe(facts, constant: Constant) -> str:
    code = facts.module.code_for_node(constant.node).strip()
    if constant.is_literal_here:
        return f"`{code}`"
    via = constant.sources[0].via if constant.sources else "value"
    return f"`{code}` ({via} = {spell(constant.value)})"


def _has_wide_dtype(code: Float16Code, call: cst.Call) -> bool:
    """The call is given a float32/float64 `dtype=`."""
    dtype = arg_value(call, None, "dtype")
    return dtype is not None and code.is_wide_dtype(dtype)



_TF_FUNCTION = frozenset({"tensorflow.function", "tensorflow.compat.v1.function"})
_WIDE_SPECS = frozenset({"float32", "float64"})


def _float32_signature(facts: "ModuleFacts", node: cst.CSTNode) -> bool:
    """Inside a `@tf.function(input_signature=[tf.TensorSpec(..., tf.float32), ...])`:
    its float inputs are float32 whatever the policy (a float16 tensor is refused), so
    the code computes in float32."""
    function = facts.index.function_of(node)
    if function is None:
        return False
    for decorator in function.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call) or facts.qualified(call.func) not in _TF_FUNCTION:
            continue
        signature = arg_value(call, 1, "input_signature")
        if not isinstance(signature, (cst.List, cst.Tuple)) or not signature.elements:
            continue
        floats = set()
        for element in signature.elements:
            spec = element.value
            if not (isinstance(spec, cst.Call) and facts.qualified(spec.func) == "tensorflow.TensorSpec"):
                return False
            dtype = arg_value(spec, 1, "dtype")
            names = facts.policy.policy_names(dtype) if dtype is not None else frozenset({"float32"})
            if not names:
                spelled = (facts.qualified(dtype) or string_value(dtype) or "").rsplit(".", 1)[-1]
                if spelled.startswith(("int", "uint", "bool", "string")):
                    continue  # a non-float input
                return False
            floats |= {n for n in names if "float" in n}
        return bool(floats) and floats <= _WIDE_SPECS
    return False


def spells_hazard_literal(facts: "ModuleFacts") -> bool:
    """MP501/MP502 only report constants spelled by a literal float16 cannot hold, so a
    module without one needs no analysis (memoised per module with facts.analysis)."""
    return has_float16_hazard_literal(facts.text)

# Ops that pass a tensor's values on unchanged (reshaped, moved, cast): a fill value
# goes through them to what consumes it.
_PASS_THROUGH = frozenset(
    {"reshape", "transpose", "expand_dims", "squeeze", "cast", "identity", "stop_gradient", "tile",
     "broadcast_to", "concat", "concatenate", "stack", "gather", "pad"}
)
# Where -inf becomes NaN: a softmax over a fully masked row, exp-sums, arithmetic.
_INF_HAZARD_CALLS = ("softmax", "logsumexp", "reduce_logsumexp", "log_softmax", "sparsemax")


def _fill_reaches_hazard(facts, fill: cst.Call, depth: int = 0) -> bool:
    """Whether the tensor a `where` fills with an overflowing constant reaches code where
    -inf turns into NaN: a softmax or exp-sum, arithmetic, a `return` (the caller's use),
    directly or through a local name. A tensor that only goes into another function
    (RWKV's `rnn_delta_rule(w, ...)`, which computes `exp(-exp(w))`: -inf is as harmless
    there as -1e9) is not reported: what that function does with -inf is unknown."""
    index = facts.index
    node: cst.CSTNode = fill
    while True:
        parent = index.parent_of(node)
        if parent is None:
            return False
        if isinstance(parent, (cst.Arg, cst.Element, cst.List, cst.Tuple, cst.Subscript, cst.SubscriptElement,
                               cst.Index, cst.Slice)):
            node = parent
            continue
        if isinstance(parent, cst.Call):
            if node is parent.func:
                return False
            name = (facts.qualified(parent.func) or "").rsplit(".", 1)[-1] or callee_name(parent)
            if any(hazard in name.lower() for hazard in _INF_HAZARD_CALLS):
                return True
            if name in _PASS_THROUGH:
                node = parent
                continue
            return False
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.AugAssign, cst.Return)):
            return True
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            return depth < 4 and _name_reaches_hazard(facts, parent, parent.targets[0].target.value, depth + 1)
        return True  # a use this walk does not follow: keep reporting


_RANKING_CALLS = ("top_k", "sort", "reduce_max", "max", "amax", "kthvalue")


def _keeps_an_entry_per_row(facts, where: cst.Call) -> bool:
    """`where(logits < kth_largest(logits), -1e9, logits)`: the condition compares a
    tensor with a value ranked from that same tensor (`top_k`, `sort`, `max`), so every row
    keeps at least its largest entry and -inf never fills a whole row."""
    condition = arg_value(where, 0, "condition")
    if not isinstance(condition, cst.Comparison) or len(condition.comparisons) != 1:
        return False
    module = facts.module
    sides = (condition.left, condition.comparisons[0].comparator)
    for side, other in ((sides[0], sides[1]), (sides[1], sides[0])):
        other_code = module.code_for_node(other).strip()
        for source in _ranked_sources(facts, side):
            argument = arg_value(source, 0, "x", "input", "a")
            if argument is not None and module.code_for_node(argument).strip() == other_code:
                return True
    return False


def _ranked_sources(facts, expr: cst.BaseExpression, depth: int = 0) -> list[cst.Call]:
    """The ranking calls (`top_k(x)`, `sort(x)`) an expression is read from."""
    if depth > 4:
        return []
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Call):
        name = (facts.qualified(expr.func) or callee_name(expr) or "").rsplit(".", 1)[-1]
        return [expr] if name in _RANKING_CALLS else []
    if isinstance(expr, cst.Name):
        values = list(facts.bindings.values_visible(expr, facts.index))
        scope = facts.index.enclosing(expr, cst.FunctionDef)
        if not values and scope is not None:  # `values, _ = top_k(x, k)`: unpacked from the call
            for assign in facts.index.descendants(scope):
                if isinstance(assign, cst.Assign) and any(
                        isinstance(t.target, (cst.Tuple, cst.List)) and any(
                            isinstance(e.value, cst.Name) and e.value.value == expr.value for e in t.target.elements)
                        for t in assign.targets):
                    values.append(assign.value)
        found = []
        for value in values:
            found += _ranked_sources(facts, value, depth + 1)
        return found
    return []


def _name_reaches_hazard(facts, assign: cst.Assign, name: str, depth: int) -> bool:
    index = facts.index
    function = index.enclosing(assign, cst.FunctionDef)
    if function is None:
        return True
    uses = [n for n in index.descendants(function) if isinstance(n, cst.Name) and n.value == name
            and index.before(assign, n) and not index.contains(assign, n)
            and not (isinstance(index.parent_of(n), cst.Attribute) and index.parent_of(n).attr is n)]
    if not uses:
        return False
    for use in uses:
        parent = index.parent_of(use)
        if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.Assign) and use in [t.target for t in parent.targets]):
            continue  # re-bound
        if _fill_reaches_hazard(facts, use, depth):
            return True
    return False


class Float16OverflowConstant(Rule):
    """## What it does
    Finds constants beyond float16's range (|x| >= 65520, e.g. `1e9`, `1e30`, or a name
    bound to one: `INF = 1e6`) used in arithmetic with tensors, as a `tf.where` /
    `keras.ops.where` fill value, in `full_like`, or converted with a tensor's dtype
    (`tf.constant(-1e9, dtype=x.dtype)`), in code that computes in the layer's dtype:
    the `call` of Keras `Layer`/`Model` subclasses (also through a layer class of the same
    module), functions given to `keras.layers.Lambda`, the module's functions and methods
    they call, and `@tf.function` code when the module runs `mixed_float16`.

    Layer code of a library (a module of a package: its folder has an `__init__.py`, or
    it sits under `src/`) is checked whether or not the module sets a policy (a model
    zoo's attention layer runs under its user's policy); layer code of a program (a
    script, a notebook, an example app) only where a float16 policy can be in effect
    there (set in the program, assumed, or brought by the project). Never where the
    module sets only policies without float16 (`mixed_bfloat16`, `float32`) or the class
    pins `dtype="float32"`. A `where` fill is reported where the filled tensor reaches a
    softmax or exp-sum, arithmetic, or a `return` (directly or through local names), not
    where it only goes into another function (what that does with -inf is unknown).
    Not reported: code that already chose a dtype-aware value (`x.dtype.min`,
    `tf.float16.min`, `np.finfo`, a branch on the dtype), code known to compute in
    float32 (`tf.cast(x, tf.float32)` first, float32-created tensors, the value of a helper
    whose every return casts to float32, in this module or another of the project:
    `get_padding(x)` returning `tf.cast(..., dtype)` with `dtype=tf.float32` by default,
    unless the call passes `dtype`), integer constants with no float in the expression
    (index and hash arithmetic).

    ## Why is this bad?
    float16 tops out at 65504. Under `mixed_float16` a layer computes in float16, so
    `-1e9` becomes `-inf`, and the usual mask arithmetic turns into NaN:
    `(1 - mask) * -1e9` is `0 * -inf = NaN` wherever the mask is 1, and a softmax over
    a fully masked row of `-inf` is NaN. The model trained fine in float32.

    ## Example
    ```python
    class Attention(tf.keras.layers.Layer):
        def call(self, scores, mask):
            scores = scores - 1e30 * (1.0 - mask)
            return tf.nn.softmax(scores)
    ```

    ## Use instead
    ```python
    class Attention(tf.keras.layers.Layer):
        def call(self, scores, mask):
            scores = scores - scores.dtype.max * (1.0 - mask)
            return tf.nn.softmax(scores)
    ```

    ## Fix safety
    Unsafe: it changes the value (to the tensor's dtype limit, -65504/65504 in float16,
    ±3.4e38 in float32). Offered only where the constant is a mask fill value (multiplied
    by a mask-like expression, or the fill of `where`/`full_like`/`tf.constant(...,
    dtype=x.dtype)`), a tensor of the same dtype is at hand (a parameter or a local tensor
    in the same expression), and the tensors are TensorFlow tensors (the module imports
    TensorFlow at its top level or targets Keras 2): `x.dtype.min` is a `tf.DType` limit
    there, also in Keras 3 (symbolic tensors in `call` are TensorFlow tensors too). Keras 3
    code that imports TensorFlow only for its TensorFlow backend branch also runs on JAX
    and torch, where `x.dtype.min` raises: no fix there, and the message names a value
    float16 can hold instead. Positive constants
    become `x.dtype.max`, negative ones `x.dtype.min`. No fix where the filled tensor is
    divided later by anything but a constant of at least 1 (`weights / temperature`, here
    or in the caller that unpacks it): a dtype limit has no headroom and overflows to -inf
    in float32 too, so a fully masked row becomes NaN. A constant that scales values
    (`x * 1e6`, `x / 1e6`) or comes from a parameter default or a flag is reported
    without a fix: compute that part in float32.
    """

    code = "MP501"
    premises = ("policy", "dtype")
    name = "float16-overflow-constant"
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES

    def check(self) -> None:
        if not self.facts.analysis(spells_hazard_literal):
            return
        code = self.facts.analysis(Float16Code)
        reported: set[int] = set()
        for constant, kind, tensor, fill, dtype in self._hazards(code):
            if id(constant.node) in reported:
                continue
            if code.under_dtype_branch(constant.node) or code.dtype_aware_nearby(constant.node):
                continue
            if any(code.under_dtype_branch(s.literal) for s in constant.sources if s.via != "literal"):
                continue
            if _float32_signature(self.facts, constant.node):
                continue
            reported.add(id(constant.node))
            self._report(code, constant, kind, tensor if fill else None, dtype)

    def _hazards(self, code: Float16Code) -> Iterator[tuple[Constant, str, cst.Name | None, bool, Premise]]:
        """(constant, region kind, tensor a dtype-aware value can use, is it a fill value,
        the premise that the tensors it meets are float16)."""
        facts = self.facts
        for operation in code.nodes_in_regions(cst.BinaryOperation):
            if not isinstance(operation.operator, ARITHMETIC) or code.constant(operation) is not None:
                continue
            for side, other in ((operation.left, operation.right), (operation.right, operation.left)):
                constant = code.constant(side)
                if not _overflowing(constant):
                    continue
                root = code.tree_root(operation)
                leaves = code.leaves(root)
                if not code.has_tensor_operand(leaves) or code.any_wide([l for l in leaves if l is not side]):
                    continue
                if code.host_computed(root):
                    continue
                if isinstance(constant.value, int) and not self._float_context(code, leaves):
                    continue
                fill = isinstance(operation.operator, cst.Multiply) and (code.mask_like(other) or _ones_like(facts, other))
                dtype = code.operand_dtype([l for l in leaves if l is not side])
                yield constant, code.region_of(operation), code.dtype_source(leaves), fill, dtype  # type: ignore[misc]
        for assign in code.nodes_in_regions(cst.AugAssign):
            if type(assign.operator) not in AUG_ARITHMETIC:
                continue
            constant = code.constant(assign.value)
            if not _overflowing(constant) or isinstance(constant.value, int):
                continue
            if code.is_wide(assign.target):
                continue
            yield constant, code.region_of(assign), code.tensor_name(assign.target), False, \
                code.operand_dtype([assign.target])  # type: ignore[misc]
        for call in code.nodes_in_regions(cst.Call):
            qualified = facts.qualified(call.func)
            if qualified in WHERE_FUNCS:
                positions, keywords = WHERE_FUNCS[qualified]
                branches = [arg_value(call, p, k) for p, k in zip(positions, keywords)]
                for branch, other in ((branches[0], branches[1]), (branches[1], branches[0])):
                    constant = code.constant(branch) if branch is not None else None
                    if not _overflowing(constant) or isinstance(constant.value, int):
                        continue
                    if other is None or code.constant(other) is not None or code.is_wide(other):
                        continue  # where(c, -1e9, 0.0) builds a float32 tensor
                    if not _fill_reaches_hazard(facts, call):
                        continue  # the filled tensor only goes into a call whose use of -inf is unknown
                    if _keeps_an_entry_per_row(facts, call):
                        continue  # top-k: every row keeps finite values, a softmax over it is finite
                    yield constant, code.region_of(call), code.tensor_name(other), True, \
                        code.operand_dtype([other])  # type: ignore[misc]
            elif qualified in FULL_LIKE:
                fill_value = arg_value(call, 1, "fill_value")
                constant = code.constant(fill_value) if fill_value is not None else None
                if not _overflowing(constant) or isinstance(constant.value, int):
                    continue
                like = arg_value(call, 0, "x", "a")
                if _has_wide_dtype(code, call) or (like is not None and code.is_wide(like)):
                    continue
                yield constant, code.region_of(call), code.tensor_name(like), True, \
                    code.operand_dtype([like])  # type: ignore[misc]
            elif qualified in CONVERT_WITH_DTYPE:
                value = arg_value(call, 0, "value", "x")
                constant = code.constant(value) if value is not None else None
                if not _overflowing(constant) or isinstance(constant.value, int):
                    continue
                dtype = arg_value(call, CONVERT_WITH_DTYPE[qualified], "dtype")
                names = facts.policy.policy_names(dtype) if dtype is not None else None
                if dtype is None or (names and not names & {"float16", "half"}):
                    continue  # float32 by default, or a known dtype other than float16
                tensor = None
                if isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype" and isinstance(dtype.value, cst.Name):
                    tensor = dtype.value
                if names:
                    premise = Premise(DTYPE, "float16", Status.PROVED, f"`{facts.module.code_for_node(call)}` is float16")
                elif isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype":
                    premise = code.operand_dtype([dtype.value])
                else:
                    premise = Premise(DTYPE, "float16", Status.INFERRED, "the dtype it is given")
                yield constant, code.region_of(call), tensor, True, premise  # type: ignore[misc]

    @staticmethod
    def _float_context(code: Float16Code, leaves: list[cst.BaseExpression]) -> bool:
        """An integer constant overflows float16 only in float arithmetic: require a float
        literal or a cast in the same expression."""
        for leaf in leaves:
            constant = code.constant(leaf)
            if constant is not None and isinstance(constant.value, float):
                return True
            if isinstance(leaf, cst.Call) and code.facts.qualified(leaf.func) in CONVERT_WITH_DTYPE:
                return True
        return False

    def _report(self, code: Float16Code, constant: Constant, kind: str, tensor: cst.Name | None,
                dtype: Premise) -> None:
        infinity = "-inf" if constant.value < 0 else "inf"
        limit = "min" if constant.value < 0 else "max"
        where = "layer code" if kind == LAYER else "@tf.function"
        message = f"{_describe(self.facts, constant)} overflows float16 (max 65504) to {infinity} in this {where}: "
        detail = (f"it becomes {infinity} when this {where} computes in float16 under mixed_float16 (NaN after "
                  "`inf * 0` or a softmax over -inf)")
        fix = None
        on_tensorflow = code.runs_on_tensorflow()
        scaled = scaled_after_fill(self.facts, constant.node) if tensor is not None else None
        if scaled is not None:  # a dtype limit has no headroom for `x / temperature`
            message += "compute it in float32 (the filled tensor is scaled later)"
            detail += f"; `{scaled}` scales the filled tensor, where a dtype limit (`x.dtype.min`) overflows too"
        elif tensor is not None and constant.fixed_in_code and on_tensorflow:
            spelled = f"{tensor.value}.dtype.{limit}"
            message += f"use the dtype-aware `{spelled}`"
            replacement = cst.Attribute(
                value=cst.Attribute(value=cst.Name(tensor.value), attr=cst.Name("dtype")), attr=cst.Name(limit)
            )
            fix = self.fix(f"Use `{spelled}`", [Replace(constant.node, replacement)], unsafe=True)
        elif on_tensorflow:
            message += "compute it in float32 or use a dtype-aware value like `x.dtype.min`"
        else:  # Keras 3 code that also runs on JAX/torch, where `x.dtype.min` raises
            bound = "-65504.0 is its lowest" if constant.value < 0 else "65504.0 is its highest"
            message += f"compute it in float32 or use a value float16 can hold ({bound})"
            detail += "; `x.dtype.min` is TensorFlow-only and raises on JAX and torch"
        self.report(constant.node, message, fix=fix, detail=detail, premises=[dtype])


class Float16UnderflowEpsilon(Rule):
    """## What it does
    Finds epsilons that float16 rounds to zero (below about 3e-8: `1e-8`, `1e-10`,
    `1e-12`, or a name bound to one) where they guard a division, root or log in code
    that computes in the layer's dtype (the same code as MP501): added to a tensor
    (`x / (norm + 1e-12)`), used as a floor (`tf.maximum(norm, 1e-12)`,
    `tf.clip_by_value(p, 1e-10, 1.0)`), or passed as the epsilon of ops that add it in
    the input's dtype (`tf.math.l2_normalize`, `tf.nn.batch_normalization`,
    `keras.ops.batch_normalization`). Also the `epsilon=` of normalization layers that
    compute in float16 under `mixed_float16`: `GroupNormalization` in Keras 2 (tf-keras)
    and TensorFlow Addons' `GroupNormalization`/`InstanceNormalization`.

    Not reported: Keras's `LayerNormalization`, `BatchNormalization`,
    `RMSNormalization` (and Keras 3's `GroupNormalization`): they compute in float32
    under a mixed policy, so `LayerNormalization(epsilon=1e-12)` is fine. Nor code known
    to compute in float32, or epsilons float16 keeps as a subnormal (`1e-7`,
    `keras.backend.epsilon()`).

    ## Why is this bad?
    float16's smallest number is 6e-8; anything below half of that rounds to 0. In float16
    `x / (norm + 1e-12)` is `0 / 0 = NaN` for a zero vector, `rsqrt(var + 1e-12)` is inf
    for a constant input, `log(p + 1e-10)` is -inf when `p` underflows.

    ## Example
    ```python
    class Normalize(tf.keras.layers.Layer):
        def call(self, x):
            return x / (tf.norm(x, axis=-1, keepdims=True) + 1e-12)
    ```

    ## Use instead
    ```python
    class Normalize(tf.keras.layers.Layer):
        def call(self, x):
            return x / (tf.norm(x, axis=-1, keepdims=True) + 1e-7)
    ```

    ## Fix safety
    Unsafe: the epsilon becomes `1e-7` (Keras's default `backend.epsilon()`; float16
    keeps it as 1.2e-7), which also changes float32 results slightly. The literal is
    rewritten where it is written (at the constant's definition when it comes from one);
    an epsilon from a parameter default or a flag is reported without a fix.
    """

    code = "MP502"
    premises = ("policy", "dtype")
    precision = "medium"
    precision_evidence = "1 of its 13 judged findings in the fresh audits were true (12 false, 4 debatable)"
    name = "float16-underflow-epsilon"
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES

    def check(self) -> None:
        if not self.facts.analysis(spells_hazard_literal):
            return
        code = self.facts.analysis(Float16Code)
        reported: set[int] = set()
        for constant, kind, what, operands in self._hazards(code):
            if id(constant.node) in reported:
                continue
            if code.under_dtype_branch(constant.node) or code.dtype_aware_nearby(constant.node):
                continue
            if _float32_signature(self.facts, constant.node):
                continue
            reported.add(id(constant.node))
            self._report(constant, kind, what, code.operand_dtype(operands))
        if not code.float16_excluded:
            self._check_layers(reported)

    def _hazards(self, code: Float16Code) -> Iterator[tuple[Constant, str, str, list]]:
        """(epsilon, region kind, how it is used, the tensors it meets)."""
        facts = self.facts
        for operation in code.nodes_in_regions(cst.BinaryOperation):
            if not isinstance(operation.operator, (cst.Add, cst.Subtract)) or code.constant(operation) is not None:
                continue
            for side in (operation.left, operation.right):
                constant = code.constant(side)
                if not _vanishing(constant):
                    continue
                root = code.tree_root(operation)
                leaves = code.leaves(root)
                if code.host_computed(root):
                    continue
                others = [l for l in leaves if l is not side]
                if code.has_tensor_operand(leaves) and not code.any_wide(others):
                    yield constant, code.region_of(operation), "added to a tensor", others  # type: ignore[misc]
        for assign in code.nodes_in_regions(cst.AugAssign):
            if isinstance(assign.operator, (cst.AddAssign, cst.SubtractAssign)):
                constant = code.constant(assign.value)
                if _vanishing(constant) and not code.is_wide(assign.target):
                    yield constant, code.region_of(assign), "added to a tensor", [assign.target]  # type: ignore[misc]
        for call in code.nodes_in_regions(cst.Call):
            qualified = facts.qualified(call.func)
            if qualified in CLAMPS:
                position, keyword = CLAMPS[qualified]
                floor = arg_value(call, position, keyword)
                tensor = arg_value(call, 0, "x", "t", "x1")
                if qualified.endswith("maximum"):
                    # tf.maximum(1e-12, x) is the same floor
                    first = arg_value(call, 0, "x", "x1")
                    if first is not None and code.constant(first) is not None:
                        floor, tensor = first, floor
                constant = code.constant(floor) if floor is not None else None
                if _vanishing(constant) and not (tensor is not None and code.is_wide(tensor)) \
                        and not self._only_multiplied(call):
                    yield constant, code.region_of(call), "used as a floor", [tensor]  # type: ignore[misc]
            elif qualified in EPSILON_OPS:
                position, keyword = EPSILON_OPS[qualified]
                epsilon = arg_value(call, position, keyword)
                constant = code.constant(epsilon) if epsilon is not None else None
                tensor = arg_value(call, 0, "x")
                if _vanishing(constant) and not (tensor is not None and code.is_wide(tensor)):
                    short = qualified.rsplit(".", 1)[-1]
                    yield constant, code.region_of(call), f"as the epsilon of `{short}`", [tensor]  # type: ignore[misc]

    def _only_multiplied(self, call: cst.Call) -> bool:
        """A floor whose result is assigned and then only multiplied with (`inv = max(inv,
        eps); return x * inv`) guards no division, square root or log: losing it in float16
        changes nothing."""
        index = self.facts.index
        uses = reads_of_assigned(index, call)
        return bool(uses) and all(
            isinstance(index.parent_of(use), cst.BinaryOperation)
            and isinstance(index.parent_of(use).operator, cst.Multiply) for use in uses  # type: ignore[union-attr]
        )

    def _check_layers(self, reported: set[int]) -> None:
        facts = self.facts
        code = facts.analysis(Float16Code)
        for call in facts.calls_to(*FLOAT16_EPSILON_LAYERS):
            qualified = facts.qualified(call.func)
            position, keras2_only = FLOAT16_EPSILON_LAYERS[qualified]  # type: ignore[index]
            if keras2_only and not facts.target.is_keras2:
                continue
            if _has_wide_dtype(code, call):
                continue
            epsilon = arg_value(call, position, "epsilon")
            constant = code.constant(epsilon) if epsilon is not None else None
            if not _vanishing(constant) or id(constant.node) in reported:
                continue
            reported.add(id(constant.node))
            layer = qualified.rsplit(".", 1)[-1]  # type: ignore[union-attr]
            origin = "TensorFlow Addons'" if qualified.startswith("tensorflow_addons.") else "Keras 2's (tf-keras)"  # type: ignore[union-attr]
            message = f"epsilon {_describe(facts, constant)} rounds to 0 in float16 in {origin} {layer}: "
            self._finish(constant, message, f"{origin} {layer} adds it in float16 under mixed_float16, so a "
                                            "constant group gives NaN",
                         Premise(DTYPE, "float16", Status.INFERRED, f"{layer} computes in the policy's dtype"))

    def _report(self, constant: Constant, kind: str, what: str, dtype: Premise) -> None:
        where = "layer code" if kind == LAYER else "@tf.function"
        message = f"epsilon {_describe(self.facts, constant)} {what} rounds to 0 in float16: "
        self._finish(constant, message, f"the smallest float16 is 6e-8: the epsilon no longer guards against division "
                                        f"by zero, rsqrt(0) or log(0) when this {where} computes in float16 under "
                                        "mixed_float16", dtype)

    def _finish(self, constant: Constant, message: str, detail: str, dtype: Premise) -> None:
        target = self._fix_target(constant)
        fix = None
        if target is not None:
            message += f"use a float16-safe epsilon such as {SAFE_EPSILON_TEXT}"
            fix = self.fix(f"Use epsilon {SAFE_EPSILON_TEXT}", [Replace(target, cst.Float(SAFE_EPSILON_TEXT))], unsafe=True)
        else:
            message += f"use a float16-safe epsilon (>= {SAFE_EPSILON_TEXT}) or float32 here"
        self.report(constant.node, message, fix=fix, detail=detail, premises=[dtype])

    def _fix_target(self, constant: Constant) -> cst.CSTNode | None:
        """The positive literal that spells the epsilon, where it is written."""
        if not constant.fixed_in_code or len(constant.sources) != 1 or constant.value <= 0:
            return None
        if constant.sources[0].external:
            return None  # written in another file: edited there, not from here
        literal = constant.sources[0].literal
        value = self.facts.values.resolve(literal)
        if not isinstance(literal, (cst.Float, cst.Integer)) or value is None or value.value != constant.value:
            return None
        return literal


class Float16InputPipeline(Rule):
    """## What it does
    Finds float16 *arithmetic* in input preprocessing on the CPU: a conversion to float16
    (`tf.cast(x, tf.float16)`, `x.astype("float16")`, `np.float16(x)`,
    `np.asarray(x, dtype=np.float16)`) whose value is then computed with (`/ 255.0`,
    `x -= mean`, `tf.math.*`, NumPy, `.mean()`, also through variables, helper functions
    and return values), and `tf.image.convert_image_dtype(x, tf.float16)`, which scales
    integer images in float16 itself. Looked for in functions passed to a `tf.data`
    dataset's `.map(...)` (and the module's functions they call), and in data passed to a
    Keras model's `fit`/`evaluate`/`predict` (directly or through the variables that hold
    it) or to `Dataset.from_tensor_slices`.

    Not reported: a final cast to float16 with no arithmetic after it (as a model whose
    `Input` is declared float16 wants; it also halves the host-to-device copy), float16
    test data built for a comparison, casts in model code (layers, the functional graph),
    and bfloat16 casts (TPU input pipelines cast to bfloat16 on purpose to halve infeed
    traffic).

    ## Why is this bad?
    Keep input preprocessing in float32: the model's first layer casts its inputs to the
    compute dtype. Every float16 operation rounds its result to float16 (3 significant
    digits), so a chain of steps in float16 (`(x / 255. - mean) / std`) loses precision
    that float32 math followed by the model's one cast keeps (measured with TF 2.21: 162
    of the 256 uint8 values differ, by up to 2e-3). A single step on exact integer data
    (`tf.cast(x, tf.float16) / 255.`) rounds like the model's cast would (same values),
    so there the finding is about style and the next edit, not about today's numbers:
    one step with a number and nothing computed after it rests on an assumed dtype
    premise (a chain of float16 steps) and is in the extended tier.

    ## Example
    ```python
    def preprocess(image, label):
        image = (tf.cast(image, tf.float16) / 255.0 - 0.5) / 0.25
        return image, label

    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).map(preprocess)
    ```

    ## Use instead
    ```python
    def preprocess(image, label):
        image = (tf.cast(image, tf.float32) / 255.0 - 0.5) / 0.25
        return image, label

    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).map(preprocess)
    ```

    ## Fix safety
    Unsafe, as every fix of a rule in the extended suite. The edit itself keeps what the
    model sees: the model casts float32 inputs to its compute dtype itself, so it sees the
    same values (computed more precisely). The dtype is rewritten in the spelling it was written
    in (`"float16"` -> `"float32"`, `tf.float16` -> `tf.float32`, `np.half` -> `np.float32`);
    a dtype held in a variable or imported bare (`from numpy import float16`) is reported
    without a fix. Unsafe where the module declares a float16 model input
    (`Input(dtype="float16")`, `tf.TensorSpec(..., tf.float16)`): the fixed pipeline then
    yields float32 where float16 was declared (cast to float16 after the arithmetic
    instead). Note that float32 arrays take twice the host memory: if you keep a large
    dataset in float16 on purpose, suppress with `# noqa: MP503`.
    """

    code = "MP503"
    premises = ()  # the float16 is the code's own cast, whatever the policy
    precision = "medium"
    precision_evidence = "0 of its 4 judged findings in the fresh audits were true (4 false, 9 debatable)"
    name = "float16-input-pipeline"
    severity = Severity.WARNING
    fix_availability = FixAvailability.SOMETIMES

    def check(self) -> None:
        pipeline = self.facts.analysis(InputPipeline)
        for cast in pipeline.casts():
            message = f"input preprocessing computes in float16 ({cast.arithmetic}): cast to float32 here"
            notes = [f"{cast.context}: every float16 step on the CPU rounds to 3 significant digits, where float32 "
                     "math and the model's own cast to float16 round once"]
            change = float16_dtype_fix(self.facts, cast.dtype)
            fix = None
            if change is not None:
                declared = pipeline.declares_float16_input()
                if declared:
                    notes.append("this module declares a float16 model input, which the fixed pipeline no longer "
                                 "matches: cast to float16 after the arithmetic instead")
                fix = self.fix("Convert to float32", [Replace(*change)], unsafe=declared)
            premises = ()
            if cast.single_step:
                premises = (Premise(DTYPE, "a chain of float16 steps", Status.ASSUMED,
                                    "one float16 step with a number after the cast: it rounds within one float16 "
                                    "step of float32 math and the model's own cast (style, and the next edit)"),)
            self.report(cast.call, message, fix=fix, detail="; ".join(notes), premises=premises)
