"""Whether a value cast to float16 on the CPU is then computed with (MP503).

Casting input data to float16 as the last step costs nothing numerically (the model's
first layer would round the same way) and halves the host-to-device copy. What hurts is
float16 *arithmetic* on the CPU: `tf.cast(x, tf.float16) / 255.0`, `tf.image.resize` of a
float16 image, `x.astype("float16"); x -= mean`. The CPU emulates it (slow) and rounds
every intermediate result to 3 significant digits.

From the cast, the value is followed through the code that runs next: operators and
augmented assignments, arithmetic functions (`tf.math`, `tf.nn`, `tf.image.resize`,
NumPy, `keras.ops`), methods such as `.mean()`, through calls that only move data
(`tf.reshape`, `tf.transpose`, flips and crops), through the variables it is assigned
to, and out of a function through its return value to the function's call sites. It
stops at anything else (a tuple that is returned, an unknown call, another cast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from mplint.analysis.calls import arg_value

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

_OPERATORS = {
    cst.Add: "`+`", cst.Subtract: "`-`", cst.Multiply: "`*`", cst.Divide: "`/`", cst.FloorDivide: "`//`",
    cst.Modulo: "`%`", cst.Power: "`**`", cst.MatrixMultiply: "`@`",
}
_AUGMENTED = {
    cst.AddAssign: "`+=`", cst.SubtractAssign: "`-=`", cst.MultiplyAssign: "`*=`", cst.DivideAssign: "`/=`",
    cst.FloorDivideAssign: "`//=`", cst.PowerAssign: "`**=`", cst.MatrixMultiplyAssign: "`@=`",
}
# Calls that move or select data without computing with it: the float16 value goes on.
MOVES = frozenset({
    "tensorflow.reshape", "tensorflow.expand_dims", "tensorflow.squeeze", "tensorflow.transpose",
    "tensorflow.identity", "tensorflow.ensure_shape", "tensorflow.tile", "tensorflow.reverse",
    "tensorflow.gather", "tensorflow.slice", "tensorflow.image.flip_left_right", "tensorflow.image.flip_up_down",
    "tensorflow.image.random_flip_left_right", "tensorflow.image.random_flip_up_down", "tensorflow.image.rot90",
    "tensorflow.image.transpose", "tensorflow.image.crop_to_bounding_box", "tensorflow.image.central_crop",
    "tensorflow.image.random_crop", "tensorflow.image.resize_with_crop_or_pad", "tensorflow.image.pad_to_bounding_box",
    "numpy.reshape", "numpy.transpose", "numpy.expand_dims", "numpy.squeeze", "numpy.flip", "numpy.rot90",
    "numpy.ascontiguousarray", "numpy.moveaxis", "numpy.swapaxes", "numpy.asarray", "numpy.array", "numpy.copy",
    "numpy.concatenate", "numpy.stack", "numpy.tile", "numpy.repeat", "keras.ops.reshape", "keras.ops.transpose",
    "keras.ops.expand_dims", "keras.ops.squeeze",
})
# Calls that compute in float32 whatever they are given, or end the float16 value.
_STOPS = frozenset({"tensorflow.image.resize", "tensorflow.image.convert_image_dtype", "tensorflow.cast"})
_MOVE_METHODS = frozenset({"reshape", "transpose", "squeeze", "swapaxes", "copy", "flatten", "ravel"})
_ARITHMETIC_PREFIXES = (
    "tensorflow.math.", "tensorflow.nn.", "tensorflow.image.", "tensorflow.linalg.", "tensorflow.signal.",
    "tensorflow.reduce_", "numpy.", "keras.ops.",
)
_ARITHMETIC_TOP = frozenset({
    "tensorflow.add", "tensorflow.subtract", "tensorflow.multiply", "tensorflow.divide", "tensorflow.truediv",
    "tensorflow.matmul", "tensorflow.exp", "tensorflow.sqrt", "tensorflow.pow", "tensorflow.square",
    "tensorflow.abs", "tensorflow.maximum", "tensorflow.minimum", "tensorflow.clip_by_value", "tensorflow.einsum",
    "tensorflow.tensordot", "tensorflow.sigmoid", "tensorflow.tanh", "tensorflow.round", "tensorflow.cumsum",
    "tensorflow.add_n", "tensorflow.negative",
})
_ARITHMETIC_METHODS = frozenset({"mean", "sum", "std", "var", "dot", "clip", "cumsum", "round", "prod", "__truediv__"})
_MAX_DEPTH = 6


class Float16Arithmetic:
    """Finds the arithmetic a float16 value reaches (see the module docstring)."""

    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.index = facts.index

    def after(self, value: cst.BaseExpression, depth: int = 0) -> str | None:
        """A description of the first arithmetic `value` (a float16 expression) reaches,
        or None when it reaches none."""
        if depth > _MAX_DEPTH:
            return None
        node: cst.CSTNode = value
        parent = self.index.parent_of(node)
        while parent is not None:
            if isinstance(parent, cst.BinaryOperation) and type(parent.operator) in _OPERATORS:
                return _OPERATORS[type(parent.operator)]
            if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
                return "`-`"
            if isinstance(parent, cst.AugAssign) and parent.value is node and type(parent.operator) in _AUGMENTED:
                return _AUGMENTED[type(parent.operator)]
            if isinstance(parent, cst.Arg):
                call = self.index.parent_of(parent)
                if not isinstance(call, cst.Call) or parent.keyword is not None and parent.keyword.value == "dtype":
                    return None
                kind = self._call_kind(call)
                if kind == "move":
                    node, parent = call, self.index.parent_of(call)
                    continue
                return kind if kind != "other" else self._into_function(call, parent, depth)
            if isinstance(parent, cst.Attribute) and parent.value is node:
                call = self.index.parent_of(parent)
                if isinstance(call, cst.Call) and call.func is parent:
                    if parent.attr.value in _ARITHMETIC_METHODS:
                        return f"`.{parent.attr.value}()`"
                    if parent.attr.value in _MOVE_METHODS:
                        node, parent = call, self.index.parent_of(call)
                        continue
                return None
            if isinstance(parent, cst.Assign) and parent.value is node:
                return self._through_assignment(parent, depth)
            if isinstance(parent, cst.Return) and parent.value is node:
                return self._through_return(parent, depth)
            return None
        return None

    def single_constant_step(self, value: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether `value` meets exactly one arithmetic step, with a number
        (`x.astype("float16") / 255`, also through a name: `image = tf.cast(image,
        tf.float16)` then `image = image / 255.0`), and its result reaches no other
        arithmetic."""
        parent = self.index.parent_of(value)
        if isinstance(parent, cst.Assign) and parent.value is value and depth <= _MAX_DEPTH:
            steps = [use for use in self._uses_after(parent) if self.after(use, depth + 1) is not None]
            return len(steps) == 1 and self.single_constant_step(steps[0], depth + 1)
        if not (isinstance(parent, cst.BinaryOperation) and type(parent.operator) in _OPERATORS):
            return False
        other = parent.right if parent.left is value else parent.left
        if isinstance(other, cst.UnaryOperation) and isinstance(other.operator, cst.Minus):
            other = other.expression
        return isinstance(other, (cst.Integer, cst.Float)) and self.after(parent) is None

    def _call_kind(self, call: cst.Call) -> str:
        """"move", "other", or the description of an arithmetic call."""
        qualified = self.facts.qualified(call.func)
        if qualified is None or qualified in _STOPS:
            return "other"
        if qualified in MOVES:
            return "move"
        if qualified in _ARITHMETIC_TOP or qualified.startswith(_ARITHMETIC_PREFIXES):
            return f"`{qualified.replace('tensorflow.', 'tf.', 1).replace('numpy.', 'np.', 1)}`"
        return "other"

    def _uses_after(self, assign: cst.Assign) -> list[cst.Name]:
        """The reads of the name an assignment binds, after it in its scope (none where
        it binds anything but one name)."""
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return []
        target = assign.targets[0].target
        scope = self.index.scope_of(assign)
        return [use for use in self.index.names(target.value)
                if use is not target and self.index.before(assign, use)
                and self.index.scope_of(use) is scope and not self._is_store(use)
                and not any(a is assign for a in self.index.ancestors(use))]  # `x = tf.cast(x, ...)` reads the old x

    def _through_assignment(self, assign: cst.Assign, depth: int) -> str | None:
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return None
        name = assign.targets[0].target.value
        scope = self.index.scope_of(assign)
        for use in self._uses_after(assign):
            found = self.after(use, depth + 1)
            if found is not None:
                return found
        for aug in self.index.nodes(cst.AugAssign):
            target = aug.target
            if isinstance(target, cst.Name) and target.value == name and self.index.scope_of(aug) is scope \
                    and self.index.before(assign, aug) and type(aug.operator) in _AUGMENTED:
                return _AUGMENTED[type(aug.operator)]
        return None

    def _is_store(self, name: cst.Name) -> bool:
        """A name that is assigned, an attribute's or keyword's name, or a parameter."""
        parent = self.index.parent_of(name)
        return (
            isinstance(parent, (cst.AssignTarget, cst.Param))
            or isinstance(parent, cst.AugAssign) and parent.target is name
            or isinstance(parent, cst.Attribute) and parent.attr is name
            or isinstance(parent, cst.Arg) and parent.keyword is name
        )

    def _through_return(self, node: cst.Return, depth: int) -> str | None:
        function = self.index.function_of(node)
        if function is None or self.index.class_of(node) is not None:
            return None
        for call in self.facts.index.nodes(cst.Call):
            if isinstance(call.func, cst.Name) and call.func.value == function.name.value:
                found = self.after(call, depth + 1)
                if found is not None:
                    return found
        return None

    def _into_function(self, call: cst.Call, arg: cst.Arg, depth: int) -> str | None:
        """A float16 argument of a function of this module: the arithmetic on its parameter."""
        if not isinstance(call.func, cst.Name) or arg.star:
            return None
        functions = [f for f in self.index.nodes(cst.FunctionDef) if f.name.value == call.func.value]
        if len(functions) != 1:
            return None
        function = functions[0]
        position = [a for a in call.args if a.keyword is None].index(arg) if arg.keyword is None else None
        params = function.params.params
        if arg.keyword is not None:
            matching = [p for p in params if p.name.value == arg.keyword.value]
        else:
            matching = [params[position]] if position is not None and position < len(params) else []
        if not matching:
            return None
        name = matching[0].name.value
        for use in self.index.descendants(function.body):
            if isinstance(use, cst.Name) and use.value == name and not self._is_store(use) \
                    and self.index.function_of(use) is function:
                found = self.after(use, depth + 1)
                if found is not None:
                    return found
        return None


def scales_integers(facts: "ModuleFacts", call: cst.Call) -> bool:
    """`tf.image.convert_image_dtype(image, tf.float16)` multiplies an integer image by
    1/max in the new dtype: float16 arithmetic in the cast itself. A float image is only
    cast (`tf.image.crop_and_resize` returns float32 whatever it is given)."""
    if facts.qualified(call.func) != "tensorflow.image.convert_image_dtype":
        return False
    image = arg_value(call, 0, "image")
    return image is not None and not _known_float(facts, image, 0)


# Image ops whose result is float32 whatever dtype they are given.
_FLOAT_RESULTS = frozenset({
    "tensorflow.image.crop_and_resize", "tensorflow.image.per_image_standardization",
    "tensorflow.image.rgb_to_grayscale_float", "tensorflow.image.rgb_to_hsv", "tensorflow.image.rgb_to_yuv",
})
_FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64", "half", "double"})


def _known_float(facts: "ModuleFacts", expr: cst.BaseExpression, depth: int) -> bool:
    """Whether `expr` is certainly a floating-point tensor: the result of an op that
    returns float32 (`crop_and_resize`, `resize` with an interpolating method), a cast or
    conversion to a float dtype, a true division, or a name whose reaching binding is one."""
    if depth > 4:
        return False
    if isinstance(expr, cst.Name):
        from mplint.facts.model_graph import ModelGraph

        binding = facts.analysis(ModelGraph).reaching(expr)
        return binding is not None and binding.value is not None and _known_float(facts, binding.value, depth + 1)
    if isinstance(expr, cst.BinaryOperation):
        return isinstance(expr.operator, cst.Divide)
    if not isinstance(expr, cst.Call):
        return False
    qualified = facts.qualified(expr.func) or ""
    if qualified in _FLOAT_RESULTS:
        return True
    if qualified == "tensorflow.image.resize":  # float32 unless the method is nearest-neighbour
        method = arg_value(expr, 2, "method")
        return method is None or "nearest" not in facts.module.code_for_node(method).lower()
    if qualified in ("tensorflow.cast", "tensorflow.image.convert_image_dtype", "tensorflow.dtypes.cast"):
        dtype = arg_value(expr, 1, "dtype")
        if dtype is None:
            return False
        text = facts.module.code_for_node(dtype).strip("'\"")
        return text.rsplit(".", 1)[-1] in _FLOAT_DTYPES
    return False
