"""Where the sizes of float16 matmuls and convolutions are written (MP301-MP304).

`TensorCoreSites(facts)` (memoised per module with `facts.analysis`) finds:

- *size sites*: a Keras layer's `units`/`filters` (also EinsumDense's output size and
  MultiHeadAttention's `num_heads * key_dim`), an Embedding's `input_dim`/`output_dim`,
  and batch sizes (`fit`/`evaluate`/`predict` on a Keras model, `batch`/`padded_batch`/
  `bucket_by_sequence_length` on a tf.data pipeline, dataset factories with `batch_size`),
  each with its constant value and where that value was written;
- *output layers*: the layers a model ends in (last of a `Sequential`, the layers that
  produce `Model(inputs, outputs)`'s outputs or a subclassed model's `call` result,
  following weightless layers such as `Activation` back), plus layers whose size is named
  like a task size (`NUM_CLASSES`) or that end in softmax/sigmoid. Their size is the
  task's, not a free choice.

Receivers are resolved, not guessed from names: `.batch(...)` counts only on an
expression that is a tf.data pipeline (a `tf.data.Dataset` constructor, a dataset
method chain, a variable bound to one, a parameter annotated `tf.data.Dataset`, or a
function of the module returning one), and `.fit(...)` only on a Keras model (built by
`Model`/`Sequential`/`load_model`/`keras.applications`, a `keras.Model` subclass of the
module, a function returning one, `self` in such a subclass, or a variable `compile`d
with `loss=`/`optimizer=`/`metrics=`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from mplint.analysis.assigned_reads import reads_of_assigned
from mplint.analysis.calls import arg_value, string_value
from mplint.analysis.values import Value
from mplint.facts.model_graph import ModelGraph, is_self
from mplint.facts.policy import scope_of

if TYPE_CHECKING:
    from mplint.facts.module import ModuleFacts

# How a layer's parameter count grows with the rounded size (for the message).
LINEAR = "linear"  # kernel and bias scale with the size: Dense units, Conv filters
RECURRENT = "recurrent"  # the size is both input and output of the recurrent kernel
AT_MOST = "at most"  # only part of the layer scales (SeparableConv's pointwise kernel)
STEP = "step"  # a batch size: more work per step, same work per epoch

MP301, MP302, MP303, MP304 = "MP301", "MP302", "MP303", "MP304"

# Layer -> (code, positional index, keyword, growth) of its size argument.
SIZE_ARGUMENTS: dict[str, tuple[str, int, str, str]] = {
    "Dense": (MP301, 0, "units", LINEAR),
    **{name: (MP301, 0, "units", RECURRENT) for name in (
        "LSTM", "GRU", "SimpleRNN", "LSTMCell", "GRUCell", "SimpleRNNCell", "CuDNNLSTM", "CuDNNGRU",
    )},
    **{name: (MP301, 0, "filters", RECURRENT) for name in ("ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D")},
    **{name: (MP302, 0, "filters", LINEAR) for name in (
        "Conv1D", "Conv2D", "Conv3D", "Convolution1D", "Convolution2D", "Convolution3D",
        "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
        "Convolution1DTranspose", "Convolution2DTranspose", "Convolution3DTranspose",
    )},
    **{name: (MP302, 0, "filters", AT_MOST) for name in (
        "SeparableConv1D", "SeparableConv2D", "SeparableConvolution1D", "SeparableConvolution2D",
    )},
}
WRAPPERS = frozenset({"Bidirectional", "TimeDistributed", "WeightNormalization", "SpectralNormalization"})
# Wrappers of other libraries, by their canonical names (the layer they wrap keeps its role).
_OTHER_WRAPPERS = {
    "tensorflow_addons.layers.WeightNormalization": "WeightNormalization",
    "tensorflow_addons.layers.SpectralNormalization": "SpectralNormalization",
}
# Layers with no size of their own: an output traced back through them is the layer before.
_WEIGHTLESS_PREFIXES = (
    "Activation", "Softmax", "ReLU", "LeakyReLU", "ELU", "PReLU", "ThresholdedReLU", "Dropout",
    "SpatialDropout", "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization",
    "Flatten", "Reshape", "Permute", "Lambda", "Identity", "Masking", "Cropping", "ZeroPadding",
    "BatchNormalization", "LayerNormalization", "GroupNormalization", "UnitNormalization", "Rescaling",
    "GlobalAveragePooling", "GlobalMaxPooling", "GlobalAvgPool", "GlobalMaxPool", "MaxPooling",
    "AveragePooling", "MaxPool", "AvgPool", "UpSampling",
)
# Functions an output passes through unchanged in size.
_PASS_THROUGH = frozenset({
    "tensorflow.nn.softmax", "tensorflow.nn.log_softmax", "tensorflow.nn.sigmoid", "tensorflow.sigmoid",
    "tensorflow.math.sigmoid", "tensorflow.nn.tanh", "tensorflow.tanh", "tensorflow.math.tanh",
    "tensorflow.cast", "tensorflow.identity", "tensorflow.squeeze", "tensorflow.reshape",
    "keras.ops.softmax", "keras.ops.sigmoid", "keras.ops.cast", "keras.ops.squeeze", "keras.ops.reshape",
    "keras.backend.cast", "keras.backend.softmax",
})
_OUTPUT_ACTIVATIONS = frozenset({"softmax", "sigmoid", "log_softmax"})
_OUTPUT_ACTIVATION_NAMES = frozenset({
    "keras.activations.softmax", "keras.activations.sigmoid", "keras.activations.log_softmax",
    "tensorflow.nn.softmax", "tensorflow.nn.log_softmax", "tensorflow.nn.sigmoid",
    "tensorflow.sigmoid", "tensorflow.math.sigmoid",
})
# A size whose name says it is the task's (class count, labels, actions, outputs).
TASK_SIZE_NAME = re.compile(r"class|label|categor|target|action|(^|_)n(um)?_?outputs?($|_)", re.IGNORECASE)
VOCABULARY_NAME = re.compile(r"vocab", re.IGNORECASE)
# A Dataset.batch size named like these cuts a stream into sequences (text generation,
# windows of a time series): a sequence length, not the batch a model trains on.
SEQUENCE_NAME = re.compile(r"seq|window|length|(^|_)len($|_)|timestep|chunk|block_size|context", re.IGNORECASE)

MODEL_CONSTRUCTORS = frozenset({"keras.Model", "keras.models.Model"})
SEQUENTIAL = frozenset({"keras.Sequential", "keras.models.Sequential"})
MODEL_FACTORIES = MODEL_CONSTRUCTORS | SEQUENTIAL | frozenset({
    "keras.models.load_model", "keras.saving.load_model", "keras.models.clone_model",
    "keras.models.model_from_json", "keras.models.model_from_config", "keras.models.model_from_yaml",
})
# Names of data that come in batches (generators, loaders, datasets): `fit` ignores its
# `batch_size` for them.
_BATCHED_DATA_NAME = re.compile(r"(?i)(gen|dataset|(^|_)ds($|_)|loader|iterator|sequence|batches|flow|pipeline)")
# Model method -> positional index of `batch_size`.
MODEL_BATCH_METHODS = {"fit": 2, "evaluate": 2, "predict": 1}
_COMPILE_KEYWORDS = frozenset({"loss", "optimizer", "metrics"})

DATASET_FACTORIES = frozenset({
    "tensorflow.data.TFRecordDataset", "tensorflow.data.TextLineDataset",
    "tensorflow.data.FixedLengthRecordDataset", "tensorflow.data.experimental.CsvDataset",
    "tensorflow.data.experimental.SqlDataset", "tensorflow.data.experimental.make_csv_dataset",
    "tensorflow.data.experimental.make_batched_features_dataset",
    "tensorflow.data.experimental.sample_from_datasets", "tensorflow.data.experimental.choose_from_datasets",
    "tensorflow.data.experimental.load", "tensorflow.data.experimental.Counter",
    "tensorflow.data.experimental.RandomDataset", "tensorflow_datasets.load",
})
DATASET_FACTORY_PREFIXES = ("tensorflow.data.Dataset.",)
_KERAS_DATASET_UTILITY = re.compile(r"^keras\.(utils|preprocessing)\.(\w+\.)?\w+_dataset_from_\w+$")
# Dataset methods that return a dataset.
DATASET_METHODS = frozenset({
    "map", "filter", "shuffle", "repeat", "prefetch", "cache", "take", "skip", "batch", "unbatch",
    "padded_batch", "ragged_batch", "rebatch", "interleave", "flat_map", "apply", "with_options",
    "shard", "enumerate", "concatenate", "bucket_by_sequence_length", "take_while", "scan",
    "unique", "ignore_errors", "snapshot", "group_by_window", "map_with_legacy_function",
    "filter_with_legacy_function", "prefetch_to_device", "assert_cardinality",
})
# Dataset method -> (positional index, keyword) of its batch size(s).
DATASET_BATCH_METHODS = {
    "batch": (0, "batch_size"),
    "padded_batch": (0, "batch_size"),
    "bucket_by_sequence_length": (2, "bucket_batch_sizes"),
}
_SEQUENCE_CUTTERS = frozenset({"batch", "padded_batch"})
# What only looks at a dataset: its methods and the functions that show what they give.
_LOOKS = frozenset({"take", "element_spec", "as_numpy_iterator", "cardinality", "unbatch"})
_SHOWING_FUNCTIONS = frozenset({"list", "print", "next", "iter", "len", "display", "tuple", "repr", "str"})


def _sequence_sized(value: Value) -> bool:
    return any(s.name is not None and SEQUENCE_NAME.search(s.name) for s in value.sources)


# Functions -> (positional index or None, keyword) of a batch size.
BATCH_FUNCTIONS = {
    "tensorflow.data.experimental.bucket_by_sequence_length": (2, "bucket_batch_sizes"),
    "tensorflow.data.experimental.make_csv_dataset": (1, "batch_size"),
    "tensorflow.data.experimental.make_batched_features_dataset": (1, "batch_size"),
}


@dataclass(frozen=True)
class SizeSite:
    """One size that float16 work depends on, and where it is written."""

    code: str  # MP301..MP304
    call: cst.Call  # the call the finding sits on
    label: str  # "units", "filters", "batch_size", "num_heads * key_dim", ...
    value: Value  # the size that must be a multiple
    growth: str  # LINEAR, RECURRENT, AT_MOST or STEP
    edit: Value | None  # the value a fix rounds up (None: no single place to edit)
    edit_label: str = ""  # what `edit` is, when it is not the size itself ("key_dim")
    shown: str = ""  # how the size reads, when it is a product ("3 * 50 = 150")
    note: str = ""  # "the vocabulary size", "a vocabulary-sized output layer"
    layer: cst.Call | None = None  # the layer built by the call (None for batch sizes)
    expr: cst.BaseExpression | None = None  # the argument as written


def _tf(qualified: str | None) -> str | None:
    if qualified is not None and qualified.startswith("tensorflow.compat.v1."):
        return "tensorflow." + qualified[len("tensorflow.compat.v1."):]
    return qualified


class TensorCoreSites:
    """The module's size sites and output layers (computed once, shared by MP301-MP304)."""

    MAX_DEPTH = 16

    def __init__(self, facts: "ModuleFacts") -> None:
        self.facts = facts
        self.index = facts.index
        self._dataset_memo: dict[tuple[int, int], bool] = {}
        self._model_memo: dict[tuple[int, int], bool] = {}

    # -- layers -------------------------------------------------------------------------
    def layer_kind(self, call: cst.BaseExpression) -> str | None:
        """`Dense` for any spelling of a Keras layer constructor call, else None."""
        if not isinstance(call, cst.Call):
            return None
        qualified = self.facts.qualified(call.func)
        if qualified in _OTHER_WRAPPERS:
            return _OTHER_WRAPPERS[qualified]
        if qualified is None or not qualified.startswith("keras.layers."):
            return None
        parts = qualified.split(".")[2:]
        if parts and parts[0] == "experimental":
            parts = parts[1:]
        if len(parts) != 1 or not parts[0][:1].isupper():
            return None
        return parts[0]

    def is_weightless(self, call: cst.Call) -> bool:
        kind = self.layer_kind(call)
        return kind is not None and kind.startswith(_WEIGHTLESS_PREFIXES)

    def unwrap(self, call: cst.Call, depth: int = 0) -> cst.Call:
        """The layer inside `Bidirectional(...)` / `TimeDistributed(...)`, else the call."""
        if depth < 4 and self.layer_kind(call) in WRAPPERS:
            inner = arg_value(call, 0, "layer")
            layer = self.layer_of(inner, call) if inner is not None else None
            if layer is not None:
                return self.unwrap(layer, depth + 1)
        return call

    def layer_of(self, expr: cst.BaseExpression, anchor: cst.CSTNode) -> cst.Call | None:
        """The layer constructor call an expression stands for: the call itself, a
        variable bound to it (last binding before `anchor`), or `self.attr` assigned once
        in the class."""
        if self.layer_kind(expr) is not None:
            return expr  # type: ignore[return-value]
        if isinstance(expr, cst.Name):
            bound = self.binding_before(expr, anchor)
            return bound if bound is not None and self.layer_kind(bound) is not None else None  # type: ignore[return-value]
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            values = self.self_attribute_values(expr)
            if len(values) == 1 and self.layer_kind(values[0]) is not None:
                return values[0]  # type: ignore[return-value]
        return None

    def binding_before(self, name: cst.Name, anchor: cst.CSTNode) -> cst.BaseExpression | None:
        """The value last bound to `name` before `anchor` (the only one if none precede it)."""
        values = self.facts.bindings.values_visible(name, self.index)
        before = [v for v in values if self.index.before(v, anchor)]
        if before:
            return max(before, key=self.index.position_in_order)
        return values[0] if len(values) == 1 else None

    def self_attribute_values(self, expr: cst.Attribute) -> list[cst.BaseExpression]:
        classdef = self.index.enclosing(expr, cst.ClassDef)
        if classdef is None:
            return []
        return self._self_assignments(classdef).get(expr.attr.value, [])

    def _self_assignments(self, classdef: cst.ClassDef) -> dict[str, list[cst.BaseExpression]]:
        cache = self.__dict__.setdefault("_self_assignment_cache", {})
        if id(classdef) not in cache:
            found: dict[str, list[cst.BaseExpression]] = {}
            for node in self.index.descendants(classdef):
                if isinstance(node, cst.Assign):
                    for target in node.targets:
                        t = target.target
                        if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                            found.setdefault(t.attr.value, []).append(node.value)
            cache[id(classdef)] = found
        return cache[id(classdef)]

    # -- output layers ---------------------------------------------------------------------
    @cached_property
    def output_layers(self) -> set[int]:
        """ids of the layer constructor calls that produce a model's outputs: every
        output MP101 sees (the shared model graph), and the sized layer under trailing
        weightless ones (`Dense(10)` before `Activation("softmax")` or `Dropout`)."""
        facts = self.facts
        found: set[int] = {id(c) for c in facts.analysis(ModelGraph).final_output_layers()}
        for call in facts.calls_to(SEQUENTIAL):
            layers = arg_value(call, 0, "layers")
            if isinstance(layers, cst.Name):  # `Sequential(stack)` with `stack = [...]`
                layers = self.binding_before(layers, call)
            if isinstance(layers, (cst.List, cst.Tuple)):
                self._last_sized(reversed([e.value for e in layers.elements]), call, found)
        for receiver_calls in self._sequential_adds().values():
            self._last_sized(reversed([arg_value(c, 0, "layer") for c in receiver_calls]), receiver_calls[-1], found)
        for call in facts.calls_to(MODEL_CONSTRUCTORS):
            outputs = arg_value(call, 1, "outputs")
            if outputs is not None:
                self._trace_output(outputs, call, found, 0)
        for classdef in self.model_classes.values():
            for node in classdef.body.body:
                if isinstance(node, cst.FunctionDef) and node.name.value == "call":
                    for ret in self.index.descendants(node):
                        if isinstance(ret, cst.Return) and ret.value is not None:
                            self._trace_output(ret.value, ret, found, 0)
        return found

    def _last_sized(self, elements: Iterator[cst.BaseExpression | None], anchor: cst.CSTNode, found: set[int]) -> None:
        for element in elements:
            layer = self.layer_of(element, anchor) if element is not None else None
            if layer is None:
                return  # not a layer we know: its size is unknown, stop
            layer = self.unwrap(layer)
            if not self.is_weightless(layer):
                found.add(id(layer))
                return

    def _sequential_adds(self) -> dict[tuple, list[cst.Call]]:
        """`model.add(layer)` calls per Sequential model, in source order: per variable
        and per `Sequential()` it holds (a notebook that builds a second `model =
        Sequential()` starts a new model under the same name)."""
        groups: dict[tuple[int, str], list[cst.Call]] = {}
        for call in self.index.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "add" and isinstance(func.value, cst.Name)):
                continue
            bound = self.facts.bindings.values_visible(func.value, self.index)
            if not any(isinstance(v, cst.Call) and self.facts.qualified(v.func) in SEQUENTIAL for v in bound):
                continue
            scope = self.index.enclosing(call, cst.FunctionDef) or self.index.module
            holder = self.binding_before(func.value, call)
            groups.setdefault((id(scope), func.value.value, id(holder)), []).append(call)
        return groups

    def _trace_output(self, expr: cst.BaseExpression, anchor: cst.CSTNode, found: set[int], depth: int) -> None:
        if depth > self.MAX_DEPTH:
            return
        if isinstance(expr, (cst.List, cst.Tuple)):
            for element in expr.elements:
                self._trace_output(element.value, anchor, found, depth + 1)
        elif isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    self._trace_output(element.value, anchor, found, depth + 1)
        elif isinstance(expr, cst.Name):
            bound = self.binding_before(expr, anchor)
            if bound is not None:
                self._trace_output(bound, bound, found, depth + 1)
        elif isinstance(expr, cst.Call):
            layer = self.layer_of(expr.func, expr)
            if layer is not None:
                layer = self.unwrap(layer)
                if self.is_weightless(layer):
                    inputs = arg_value(expr, 0, "inputs")
                    if inputs is not None:
                        self._trace_output(inputs, expr, found, depth + 1)
                else:
                    found.add(id(layer))
                return
            qualified = _tf(self.facts.qualified(expr.func))
            if qualified in _PASS_THROUGH or (qualified or "").startswith("keras.activations."):
                first = arg_value(expr, 0, "x", "logits", "features", "input", "tensor")
                if first is not None:
                    self._trace_output(first, expr, found, depth + 1)
            elif qualified is None and isinstance(expr.func, cst.Name):
                # `outputs = head(x)`: what the module's function `head` returns.
                for returned in self._returns_of(expr.func.value):
                    self._trace_output(returned, returned, found, depth + 1)

    def is_output_layer(self, layer: cst.Call) -> bool:
        """Whether a layer's size is the task's: a model output, or a probability head."""
        if id(layer) in self.output_layers:
            return True
        activation = arg_value(layer, 1 if self.layer_kind(layer) == "Dense" else None, "activation")
        if activation is not None:
            if string_value(activation) in _OUTPUT_ACTIVATIONS:
                return True
            if _tf(self.facts.qualified(activation)) in _OUTPUT_ACTIVATION_NAMES:
                return True
        return False

    # -- models and datasets -----------------------------------------------------------
    @cached_property
    def model_classes(self) -> dict[str, cst.ClassDef]:
        """Classes of the module that subclass a Keras model (also indirectly)."""
        classes = {c.name.value: c for c in self.index.nodes(cst.ClassDef)}
        found: dict[str, cst.ClassDef] = {}
        changed = True
        while changed:
            changed = False
            for name, classdef in classes.items():
                if name in found:
                    continue
                for base in classdef.bases:
                    value = base.value
                    if self.facts.qualified(value) in MODEL_FACTORIES or (
                        isinstance(value, cst.Name) and value.value in found
                    ):
                        found[name] = classdef
                        changed = True
                        break
        return found

    def is_keras_model(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        key = (id(expr), depth)  # memoised like is_dataset
        known = self._model_memo.get(key)
        if known is None:
            known = self._model_memo[key] = self._is_keras_model(expr, depth)
        return known

    def _is_keras_model(self, expr: cst.BaseExpression, depth: int) -> bool:
        if depth > 6:
            return False
        if isinstance(expr, cst.Call):
            qualified = self.facts.qualified(expr.func)
            if qualified in MODEL_FACTORIES or (qualified or "").startswith("keras.applications."):
                return True
            if isinstance(expr.func, cst.Name):
                if expr.func.value in self.model_classes and qualified is None:
                    return True
                return any(self.is_keras_model(r, depth + 1) for r in self._returns_of(expr.func.value))
            return False
        if isinstance(expr, cst.Name):
            if expr.value == "self":
                classdef = self.index.enclosing(expr, cst.ClassDef)
                return classdef is not None and classdef.name.value in self.model_classes
            if self.facts.qualified(expr) is not None:
                return False  # an imported module or object
            if any(self.is_keras_model(v, depth + 1) for v in self.facts.bindings.values_visible(expr, self.index)):
                return True
            return self._compiled_in_scope(expr)
        return False

    @cached_property
    def _compiled_names(self) -> set[tuple[int, str]]:
        """(function or module id, name) of every `name.compile(loss=..., ...)` call."""
        found: set[tuple[int, str]] = set()
        for call in self.index.nodes(cst.Call):
            func = call.func
            if (
                isinstance(func, cst.Attribute) and func.attr.value == "compile" and isinstance(func.value, cst.Name)
                and any(a.keyword is not None and a.keyword.value in _COMPILE_KEYWORDS for a in call.args)
            ):
                scope = self.index.enclosing(call, cst.FunctionDef) or self.index.module
                found.add((id(scope), func.value.value))
        return found

    def _compiled_in_scope(self, name: cst.Name) -> bool:
        """`name.compile(loss=..., optimizer=...)` in the same function: a Keras model."""
        scope = self.index.enclosing(name, cst.FunctionDef) or self.index.module
        return (id(scope), name.value) in self._compiled_names

    def is_dataset(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        # Memoised per (node, depth): `ds = ds.map(...)` rebound n times would otherwise
        # be followed through every binding at every level (n ** depth calls).
        key = (id(expr), depth)
        known = self._dataset_memo.get(key)
        if known is None:
            known = self._dataset_memo[key] = self._is_dataset(expr, depth)
        return known

    def _is_dataset(self, expr: cst.BaseExpression, depth: int) -> bool:
        if depth > self.MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            func = expr.func
            qualified = _tf(self.facts.qualified(func))
            if qualified is not None:
                return (
                    qualified in DATASET_FACTORIES
                    or qualified.startswith(DATASET_FACTORY_PREFIXES)
                    or _KERAS_DATASET_UTILITY.match(qualified) is not None
                )
            if isinstance(func, cst.Attribute) and func.attr.value in DATASET_METHODS:
                return self.is_dataset(func.value, depth + 1)
            if isinstance(func, cst.Name):
                return any(self.is_dataset(r, depth + 1) for r in self._returns_of(func.value))
            return False
        if isinstance(expr, cst.Name):
            if self.facts.qualified(expr) is not None:
                return False
            bound = self.facts.bindings.values_visible(expr, self.index)
            if any(self.is_dataset(v, depth + 1) for v in bound if not self.index.contains(v, expr)):
                return True
            return self._annotated_dataset(expr)
        return False

    def _annotated_dataset(self, name: cst.Name) -> bool:
        function = self.index.enclosing(name, cst.FunctionDef)
        while function is not None:
            params = function.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                if param.name.value == name.value:
                    annotation = param.annotation.annotation if param.annotation is not None else None
                    return annotation is not None and _tf(self.facts.qualified(annotation)) == "tensorflow.data.Dataset"
            function = self.index.enclosing(function, cst.FunctionDef)
        return False

    @cached_property
    def _function_returns(self) -> dict[str, list[cst.BaseExpression]]:
        """Return values of the module's functions (not methods), by function name."""
        found: dict[str, list[cst.BaseExpression]] = {}
        for ret in self.index.nodes(cst.Return):
            function = self.index.enclosing(ret, cst.FunctionDef)
            if function is None or ret.value is None or self.index.enclosing(function, cst.ClassDef) is not None:
                continue
            found.setdefault(function.name.value, []).append(ret.value)
        return found

    def _returns_of(self, function_name: str) -> list[cst.BaseExpression]:
        return self._function_returns.get(function_name, [])

    # -- the sites ------------------------------------------------------------------------
    @cached_property
    def layer_sites(self) -> list[SizeSite]:
        """Size sites of layers (MP301, MP302, MP304 Embedding), in source order."""
        sites: list[SizeSite] = []
        for call in self.index.nodes(cst.Call):
            kind = self.layer_kind(call)
            if kind is None:
                continue
            if kind in SIZE_ARGUMENTS:
                code, position, keyword, growth = SIZE_ARGUMENTS[kind]
                sites.extend(self._simple(code, call, position, keyword, growth))
            elif kind == "EinsumDense":
                site = self._einsum_dense(call)
                if site is not None:
                    sites.append(site)
            elif kind == "MultiHeadAttention":
                sites.extend(self._multi_head_attention(call))
            elif kind == "Embedding":
                role = self.embedding_role(call)
                if role == "pretrained":
                    continue  # its shape is the checkpoint's: a resize breaks loading
                for position, keyword, note in ((0, "input_dim", "the vocabulary size"), (1, "output_dim", "")):
                    if keyword == "input_dim" and role == "positional":
                        continue  # a table of positions, read by a gather: no matmul is that wide
                    sites.extend(self._simple(MP304, call, position, keyword, LINEAR, note))
        return sites

    def embedding_role(self, call: cst.Call) -> str | None:
        """"pretrained" for an Embedding given its weights (`weights=`, a constant
        initializer, `trainable=False`), "positional" for a table of positions (named
        so, or looked up with a range of ids), else None (a vocabulary)."""
        if arg_value(call, None, "weights") is not None:
            return "pretrained"
        trainable = arg_value(call, None, "trainable")
        if isinstance(trainable, cst.Name) and trainable.value == "False":
            return "pretrained"
        initializer = arg_value(call, None, "embeddings_initializer")
        if initializer is not None and not isinstance(initializer, (cst.SimpleString, cst.ConcatenatedString)):
            qualified = self.facts.qualified(initializer.func if isinstance(initializer, cst.Call) else initializer) or ""
            if qualified.rsplit(".", 1)[-1] in ("Constant", "constant") or not qualified.startswith(("keras.", "tensorflow.")):
                return "pretrained"
        names = [string_value(arg_value(call, None, "name")) or ""]
        parent = self.index.parent_of(call)
        if isinstance(parent, cst.Assign):
            names += [self.facts.module.code_for_node(t.target) for t in parent.targets]
        if any(re.search(r"pos(ition)?(al)?(_|\b|[A-Z])", name, re.I) for name in names if name):
            return "positional"
        if any(self._range_of_ids(argument) for argument in self._lookups(call)):
            return "positional"  # DETR's object queries: `query_embed(tf.range(num_queries))`
        return None

    def _lookups(self, call: cst.Call) -> list[cst.BaseExpression]:
        """What the embedding `call` builds is called on: `emb(ids)` where it is bound to
        a name, or `self.emb(ids)` in its class."""
        parent = self.index.parent_of(call)
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            return []
        target = parent.targets[0].target
        graph = self.facts.analysis(ModelGraph)
        if isinstance(target, cst.Name):
            uses: list[cst.BaseExpression] = list(graph.name_loads(scope_of(self.facts, call), target.value))
        elif isinstance(target, cst.Attribute) and is_self(target.value) and self.index.class_of(call) is not None:
            uses = list(graph.attribute_uses(self.index.class_of(call), target.attr.value))
        else:
            return []
        found = []
        for use in uses:
            lookup = self.index.parent_of(use)
            if isinstance(lookup, cst.Call) and lookup.func is use:
                argument = arg_value(lookup, 0, "inputs")
                if argument is not None:
                    found.append(argument)
        return found

    def _range_of_ids(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """`expr` holds a range of ids (`tf.range(n)`, `ops.arange(n)`), perhaps tiled,
        indexed, reshaped or cast on the way, through names and `self.` attributes bound
        once."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Subscript):
            return self._range_of_ids(expr.value, depth + 1)
        if isinstance(expr, cst.Call):
            last = (self.facts.qualified(expr.func) or "").rsplit(".", 1)[-1]
            if last in ("range", "arange"):
                return True
            if last in _SHAPING and expr.args:
                return self._range_of_ids(expr.args[0].value, depth + 1)
            return False
        if isinstance(expr, cst.Name):
            values = self.facts.bindings.values_visible(expr, self.index)
            return len(values) == 1 and self._range_of_ids(values[0], depth + 1)
        if isinstance(expr, cst.Attribute) and is_self(expr.value):
            classdef = self.index.class_of(expr)
            bound = self.facts.analysis(ModelGraph).attribute_bindings(classdef, expr.attr.value) if classdef else []
            return len(bound) == 1 and self._range_of_ids(bound[0][1], depth + 1)
        return False

    @cached_property
    def batch_sites(self) -> list[SizeSite]:
        """Batch sizes (MP303) of Keras models and tf.data pipelines, in source order."""
        sites: list[SizeSite] = []
        for call in self.index.nodes(cst.Call):
            func = call.func
            qualified = _tf(self.facts.qualified(func))
            if qualified is not None:
                if qualified in BATCH_FUNCTIONS:
                    position, keyword = BATCH_FUNCTIONS[qualified]
                    sites.extend(self._batch(call, position, keyword))
                elif _KERAS_DATASET_UTILITY.match(qualified):
                    sites.extend(self._batch(call, None, "batch_size"))
                continue
            if not isinstance(func, cst.Attribute):
                continue
            method = func.attr.value
            if method in MODEL_BATCH_METHODS and self.is_keras_model(func.value):
                if self._feeds_batched_data(call):
                    continue  # Keras ignores `batch_size` there: the data's own batches decide
                sites.extend(self._batch(call, MODEL_BATCH_METHODS[method], "batch_size"))
            elif method in DATASET_BATCH_METHODS and self.is_dataset(func.value):
                if method in _SEQUENCE_CUTTERS and self._batched_again_in_chain(call):
                    continue  # cuts sequences (or windows) that a later .batch groups
                if self._only_inspected(call):
                    continue  # `ds = ....batch(10)` then only `list(ds.take(1))`: no model sees it
                position, keyword = DATASET_BATCH_METHODS[method]
                found = self._batch(call, position, keyword)
                if method in _SEQUENCE_CUTTERS:
                    found = [site for site in found if not _sequence_sized(site.value)]
                sites.extend(found)
        return sites

    def _feeds_batched_data(self, call: cst.Call) -> bool:
        """`model.fit(ds, batch_size=...)` where the data comes in batches already (a
        tf.data pipeline, a generator, an `ImageDataGenerator.flow*`, a `PyDataset`):
        Keras ignores `batch_size` for them (its docs: do not specify it), so the number
        says nothing about the step's size; the pipeline's own `.batch` is checked."""
        data = arg_value(call, 0, "x")
        if data is None:
            return False
        if self.is_dataset(data):
            return True
        if isinstance(data, cst.Call) and isinstance(data.func, cst.Attribute) \
                and data.func.attr.value.startswith("flow"):
            return True
        name = data.value if isinstance(data, cst.Name) else data.attr.value if isinstance(data, cst.Attribute) else ""
        return bool(_BATCHED_DATA_NAME.search(name))

    def _only_inspected(self, call: cst.Call) -> bool:
        """Whether the dataset a method chain builds (`ds = tf.data....batch(10)`) is
        bound to a name whose every read only shows it: `list(ds.take(1))`,
        `print(ds.element_spec)`, `next(iter(ds))` as a statement of its own, whose value
        goes nowhere. Then no model ever takes its batches (a notebook's look at data)."""
        top = [call, *self._calls_after_in_chain(call)][-1]  # the chain's outermost call
        reads = reads_of_assigned(self.index, top)
        return bool(reads) and all(self._shown_only(read) for read in reads)

    def _shown_only(self, read: cst.Name) -> bool:
        """A read whose value only goes into a look at the data, in a statement of its own."""
        index = self.index
        current: cst.CSTNode = read
        while True:
            parent = index.parent_of(current)
            if isinstance(parent, cst.Attribute) and parent.value is current and parent.attr.value in _LOOKS:
                grand = index.parent_of(parent)
                current = grand if isinstance(grand, cst.Call) and grand.func is parent else parent
            elif isinstance(parent, cst.Arg) and isinstance(call := index.parent_of(parent), cst.Call) \
                    and isinstance(call.func, cst.Name) and call.func.value in _SHOWING_FUNCTIONS:
                current = call
            else:
                return isinstance(parent, cst.Expr)

    def _batched_again_in_chain(self, call: cst.Call) -> bool:
        """`ds.batch(n).map(f).batch(m)`: whether a later method call of the same chain
        batches the result of `call` again."""
        return any(outer.func.attr.value in _SEQUENCE_CUTTERS  # type: ignore[attr-defined]
                   for outer in self._calls_after_in_chain(call))

    def _calls_after_in_chain(self, call: cst.Call) -> Iterator[cst.Call]:
        """The method calls made on the result of `call`, outwards: `.map(f)`, then
        `.batch(m)` for the `.batch(n)` of `ds.batch(n).map(f).batch(m)`."""
        parent_of = self.index.parent_of
        current: cst.CSTNode = call
        while True:
            attribute = parent_of(current)
            if not isinstance(attribute, cst.Attribute) or attribute.value is not current:
                return
            outer = parent_of(attribute)
            if not isinstance(outer, cst.Call) or outer.func is not attribute:
                return
            yield outer
            current = outer

    def _value(self, expr: cst.BaseExpression | None) -> Value | None:
        if expr is None:
            return None
        value = self.facts.values.resolve(expr)
        if value is None or isinstance(value.value, bool) or not isinstance(value.value, int):
            return None
        return value

    def _values(self, expr: cst.BaseExpression | None) -> list[Value]:
        """The size's value, or one per call site when it comes from a parameter the
        module's callers pass (`build_model(hidden=1020)` -> `Dense(hidden)`)."""
        if expr is None:
            return []
        return [
            v for v in self.facts.values.resolve_cases(expr)
            if isinstance(v.value, int) and not isinstance(v.value, bool)
        ]

    def _simple(self, code: str, call: cst.Call, position: int, keyword: str, growth: str, note: str = "") -> list[SizeSite]:
        expr = arg_value(call, position, keyword)
        return [
            SizeSite(code, call, keyword, value, growth, value, note=note, layer=call, expr=expr)
            for value in self._values(expr)
        ]

    def _batch(self, call: cst.Call, position: int | None, keyword: str) -> list[SizeSite]:
        expr = arg_value(call, position, keyword)
        if expr is None:
            return []
        if keyword == "bucket_batch_sizes":
            elements = self.facts.values.resolve_elements(expr) or []
            return [
                SizeSite(MP303, call, f"{keyword}[{i}]", v, STEP, v)
                for i, v in enumerate(elements)
                if v is not None and isinstance(v.value, int) and not isinstance(v.value, bool)
            ]
        return [SizeSite(MP303, call, keyword, value, STEP, value, expr=expr) for value in self._values(expr)]

    def _einsum_dense(self, call: cst.Call) -> SizeSite | None:
        """The product of the output dimensions that come from the kernel."""
        equation = string_value(arg_value(call, 0, "equation"))
        shape = arg_value(call, 1, "output_shape")
        if equation is None or shape is None:
            return None
        dims = _einsum_kernel_output_positions(equation)
        if dims is None:
            return None
        letters, kernel_positions = dims
        if isinstance(shape, (cst.List, cst.Tuple)):
            elements = self.facts.values.resolve_elements(shape)
            if elements is None or len(elements) != letters:
                return None
            labelled = [(f"output_shape[{i}]", elements[i]) for i in kernel_positions]
        else:
            if letters != 1:
                return None
            labelled = [("output_shape", self._value(shape))]
        if not labelled or any(v is None or not isinstance(v.value, int) for _, v in labelled):
            return None
        if len(labelled) == 1:
            label, value = labelled[0]
            return SizeSite(MP301, call, label, value, LINEAR, value, layer=call)  # type: ignore[arg-type]
        product = 1
        sources: tuple = ()
        for _, v in labelled:
            product *= v.value  # type: ignore[union-attr, operator]
            sources += v.sources  # type: ignore[union-attr]
        shown = " * ".join(str(v.value) for _, v in labelled) + f" = {product}"  # type: ignore[union-attr]
        label = " * ".join(l for l, _ in labelled)
        return SizeSite(MP301, call, label, Value(product, sources), LINEAR, None, shown=shown, layer=call)

    def _multi_head_attention(self, call: cst.Call) -> list[SizeSite]:
        heads = self._value(arg_value(call, 0, "num_heads"))
        if heads is None:
            return []
        sites = []
        key = self._value(arg_value(call, 1, "key_dim"))
        value_expr = arg_value(call, 2, "value_dim")
        value_dim = self._value(value_expr)
        for name, dim in (("key_dim", key), ("value_dim", value_dim)):
            if dim is None:
                continue
            product = Value(heads.value * dim.value, heads.sources + dim.sources)  # type: ignore[operator]
            # Without value_dim, key_dim sizes every projection; otherwise only some.
            growth = LINEAR if name == "key_dim" and value_expr is None else AT_MOST
            sites.append(SizeSite(
                MP301, call, f"num_heads * {name}", product, growth, dim, edit_label=name,
                shown=f"{heads.value} * {dim.value} = {product.value}", layer=call,
            ))
        return sites


def _einsum_kernel_output_positions(equation: str) -> tuple[int, list[int]] | None:
    """(number of output_shape entries, indexes of those that come from the kernel) for
    an EinsumDense equation like "abc,cd->abd"; None if it cannot be read."""
    match = re.fullmatch(r"\s*([\w.]+)\s*,\s*([\w.]+)\s*->\s*([\w.]+)\s*", equation)
    if match is None:
        return None
    inputs, kernel, output = match.groups()
    if "..." in output:
        letters = output.replace("...", "")
    else:
        letters = output[1:]  # the batch dimension is not in output_shape
    if not letters.isalpha():
        return None
    positions = [i for i, letter in enumerate(letters) if letter in kernel and letter not in inputs]
    return len(letters), positions


# Ops that keep what a tensor of ids holds (its values), only its shape or dtype changes.
_SHAPING = frozenset({"tile", "expand_dims", "broadcast_to", "repeat", "reshape", "cast", "identity", "squeeze"})
