"""Synthetic inputs and targets, made from the model's own specs (no real data, ever).

Inputs follow the model's `Input`s: shape (a `None` sequence length becomes
SEQUENCE_LENGTH), dtype, and for inputs that feed an `Embedding`, integer ids within
its `input_dim`. Mask inputs (`padding_mask`, `attention_mask`, any `*_mask`) mark
padded positions: each row keeps a shorter valid prefix, and the last row is fully
padded, because a mask fill that overflows float16 (`-1e9`) turns into NaN exactly
there, and synthetic data without padding would never show it. Targets follow the
outputs of a forward pass and the kind of loss.
"""

from __future__ import annotations

import numpy as np

from .errors import ProbeError
from .tensors import flatten, map_structure, pack_as
from .tensors import tensor as as_tensor

DEFAULT_BATCH = 8
SEQUENCE_LENGTH = 16


def _dtype_name(dtype) -> str:
    return str(getattr(dtype, "name", dtype))


def _shape(tensor) -> list:
    shape = tensor.shape
    dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    return [None if d is None else int(d) for d in dims]


def model_inputs(model):
    """The nested structure of the model's symbolic inputs, or None if it has none."""
    try:
        structure = model.input
    except (AttributeError, ValueError, TypeError):
        structure = None
    if structure is None:
        inputs = getattr(model, "inputs", None)
        if inputs:
            structure = inputs[0] if len(inputs) == 1 else list(inputs)
    return structure


def fixed_batch_size(model) -> int | None:
    structure = model_inputs(model)
    if structure is None:
        return None
    for tensor in flatten(structure):
        shape = _shape(tensor)
        if shape and shape[0] is not None:
            return shape[0]
    return None


def _embedding_bound(model, api, tensor) -> int | None:
    """The smallest input_dim of the Embeddings this input feeds directly."""
    bounds = []
    for layer in api.layers(model):
        if "Embedding" not in [c.__name__ for c in type(layer).__mro__]:
            continue
        try:
            layer_input = layer.input
        except (AttributeError, ValueError, RuntimeError):
            continue
        if any(t is tensor for t in flatten(layer_input)):
            bounds.append(int(layer.input_dim))
    return min(bounds) if bounds else None


def _all_embedding_bound(model, api) -> int | None:
    dims = [int(l.input_dim) for l in api.layers(model) if "Embedding" in [c.__name__ for c in type(l).__mro__]]
    return min(dims) if dims else None


class _BuiltInput:
    """Stands for the one input of a subclassed model that was built or called: its shape
    is known, its dtype is taken to be float32."""

    name = "input"
    dtype = "float32"

    def __init__(self, shape) -> None:
        self.shape = [None if d is None else int(d) for d in shape]


def _signature_inputs(model):
    """A library model's declared input specs: Hugging Face TF models' `input_signature`
    (a dict of `tf.TensorSpec` with shape, dtype and name), as a dict the model accepts."""
    signature = getattr(model, "input_signature", None)
    if isinstance(signature, dict) and signature and all(
            hasattr(spec, "shape") and hasattr(spec, "dtype") for spec in signature.values()):
        return dict(signature)
    return None


def _built_input(model):
    """A subclassed model's input from the shape it was built with (one input only)."""
    shape = getattr(model, "_build_input_shape", None)  # Keras 2
    shapes = getattr(model, "_build_shapes_dict", None)  # Keras 3
    if shape is None and isinstance(shapes, dict) and len(shapes) == 1:
        shape = next(iter(shapes.values()))
    if hasattr(shape, "as_list"):
        try:
            shape = shape.as_list()
        except ValueError:
            return None
    if isinstance(shape, (list, tuple)) and shape and all(d is None or isinstance(d, int) for d in shape):
        return _BuiltInput(shape)
    return None


def is_mask_input(name: str) -> bool:
    """`padding_mask`, `attention_mask`, `encoder_padding_mask`, `mask`, ... (Keras adds
    `_1`-style suffixes to repeated names)."""
    base = name.lower().rsplit(":", 1)[0].rstrip("0123456789_")
    return base.endswith("mask")


def padding_mask(shape: list) -> np.ndarray:
    """1 for valid positions, 0 for padded ones, over (batch, sequence, ...): row i keeps
    a valid prefix that shrinks with i (at least one position), the last row none."""
    batch, length = shape[0], shape[1]
    mask = np.zeros(shape, dtype=np.int64)
    step = max(length // max(batch, 1), 1)
    for row in range(batch):
        fully_padded = row == batch - 1 and batch > 1
        valid = 0 if fully_padded else max(1, length - row * step)
        mask[row, :valid, ...] = 1
    return mask


def _input_structure(model):
    """The model's inputs: its `Input`s, else a library model's `input_signature`, else
    the one shape a subclassed model was built with (None: unknown)."""
    for find in (model_inputs, _signature_inputs, _built_input):
        structure = find(model)
        if structure is not None:
            return structure
    return None


def inputs_from_file(model, path: str):
    """(inputs with the structure of the model's inputs, descriptions) from `--inputs
    FILE.npz`: one array per input, named like the input (a model with one input takes
    the file's only array, whatever its name)."""
    structure = _input_structure(model)
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    specs = flatten(structure) if structure is not None else []
    if len(specs) <= 1 and len(arrays) == 1:
        (name, array), = arrays.items()
        value = as_tensor(array, _dtype_name(specs[0].dtype) if specs else None)
        return (pack_as(structure, [value]) if specs else value), [f"{name}: {array.dtype}{array.shape} from {path}"]
    descriptions: list[str] = []

    def pick(spec):
        name = str(getattr(spec, "name", "")).rsplit(":", 1)[0]
        if name not in arrays:
            raise ProbeError("bad-inputs", f"--inputs {path} has no array named {name!r} (it has {', '.join(sorted(arrays))})")
        descriptions.append(f"{name}: {arrays[name].dtype}{arrays[name].shape} from {path}")
        return as_tensor(arrays[name], _dtype_name(spec.dtype))

    return map_structure(pick, structure), descriptions


def synthetic_inputs(model, api, batch: int, rng: np.random.Generator):
    """(inputs with the structure of model.input, a description per input)."""
    structure = _input_structure(model)
    if structure is None:
        raise ProbeError(
            "no-input-spec",
            "the model has no known inputs (no keras.Input, and it was never built or called on one "
            "tensor): start it with keras.Input(shape=...) or call model.build(shape) in the entry point",
        )
    descriptions: list[str] = []

    def make(tensor):
        shape = _shape(tensor)
        concrete = [batch] + [SEQUENCE_LENGTH if d is None else d for d in shape[1:]]
        dtype = _dtype_name(tensor.dtype)
        name = getattr(tensor, "name", "input")
        bound = _embedding_bound(model, api, tensor)
        if is_mask_input(name) and len(concrete) >= 2 and dtype in ("bool", "int32", "int64", "float16", "float32",
                                                                     "bfloat16", "uint8", "int8"):
            mask = padding_mask(concrete)
            value = as_tensor(mask.astype(bool) if dtype == "bool" else mask.astype(
                "float32" if dtype.startswith(("float", "bfloat")) else dtype), None if dtype == "bool" else dtype)
            descriptions.append(f"{name}: {dtype}{tuple(concrete)} padding mask (shorter valid prefixes, the last "
                                "row fully padded)")
        elif dtype.startswith(("int", "uint")) or bound is not None:
            high = bound or _all_embedding_bound(model, api) or 2
            value = as_tensor(rng.integers(0, high, size=concrete), dtype)
            descriptions.append(f"{name}: {dtype}{tuple(concrete)} ids in [0, {high})")
        elif dtype == "bool":
            value = as_tensor(rng.integers(0, 2, size=concrete).astype(bool))
            descriptions.append(f"{name}: bool{tuple(concrete)}")
        elif dtype in ("float16", "float32", "float64", "bfloat16"):
            value = as_tensor(rng.standard_normal(size=concrete).astype("float32"), dtype)
            descriptions.append(f"{name}: {dtype}{tuple(concrete)} normal(0, 1)")
        else:
            raise ProbeError("no-input-spec", f"cannot make synthetic data for input {name!r} of dtype {dtype}")
        return value

    return map_structure(make, structure), descriptions


# -- targets -------------------------------------------------------------------------

def loss_kind(loss) -> str:
    """"sparse", "categorical", "binary" or "dense" (any target shaped like the output)."""
    if loss is None:
        return "dense"
    name = loss if isinstance(loss, str) else (
        getattr(loss, "name", None) or getattr(loss, "__name__", None) or type(loss).__name__
    )
    name = str(name).lower().replace("_", "")
    if "sparse" in name:
        return "sparse"
    if "categorical" in name:
        return "categorical"
    if "binary" in name:
        return "binary"
    return "dense"


def synthetic_target(output, kind: str, rng: np.random.Generator):
    shape = [int(d) for d in output.shape]
    if kind == "sparse" and shape:
        classes = max(shape[-1], 1)
        return as_tensor(rng.integers(0, classes, size=shape[:-1]).astype("int32"))
    if kind == "categorical" and shape:
        classes = max(shape[-1], 1)
        return as_tensor(np.eye(classes, dtype="float32")[rng.integers(0, classes, size=shape[:-1])])
    if kind == "binary":
        return as_tensor(rng.integers(0, 2, size=shape).astype("float32"))
    return as_tensor(rng.uniform(0.0, 1.0, size=shape).astype("float32"))


def synthetic_targets(outputs, kinds, rng: np.random.Generator):
    """Targets with the structure of `outputs`; `kinds` is one kind or one per flat output."""
    flat = flatten(outputs)
    if isinstance(kinds, str):
        kinds = [kinds] * len(flat)
    targets = [synthetic_target(o, k, rng) for o, k in zip(flat, kinds)]
    return pack_as(outputs, targets)
