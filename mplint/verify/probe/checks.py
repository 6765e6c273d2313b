"""The checks that need one forward pass: output-dtype, variable-dtype, finite-forward,
float32-agreement and tensor-cores. Each returns a `Result` (status, detail, measured)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .kerasapi import KerasAPI, float32_policies, variable_name
from .tracing import CallRecorder

# Relative L2 distance allowed between mixed and float32 outputs (unit roundoff is
# 4.9e-4 for float16 and 3.9e-3 for bfloat16; a few dozen roundings of headroom).
AGREEMENT_TOLERANCE = {"float16": 0.03, "bfloat16": 0.1}
TENSOR_CORE_MULTIPLE = 8


@dataclass
class Result:
    status: str  # "pass", "fail" or "skip"
    detail: str
    measured: dict = field(default_factory=dict)


@dataclass
class ForwardPass:
    """The model's forward pass on the synthetic inputs, under its mixed policy."""

    model: object
    api: KerasAPI
    policy: str
    inputs: object
    outputs: object
    recorder: CallRecorder
    names: list  # one name per flat output

    @property
    def compute_dtype(self) -> str:
        return self.policy.split("_", 1)[1] if self.policy.startswith("mixed_") else self.policy

    def flat_outputs(self) -> list:
        import tensorflow as tf

        return tf.nest.flatten(self.outputs)


def run_forward(model, api: KerasAPI, policy: str, inputs) -> ForwardPass:
    recorder = CallRecorder(api.layers(model))
    with recorder:
        outputs = model(inputs, training=False)
    return ForwardPass(model, api, policy, inputs, outputs, recorder, output_names(model, outputs))


def output_names(model, outputs) -> list:
    import tensorflow as tf

    flat = tf.nest.flatten(outputs)
    if isinstance(outputs, dict):
        return [str(k) for k in sorted(outputs)]  # tf.nest orders dicts by key
    names = list(getattr(model, "output_names", None) or [])
    if len(names) == len(flat):
        return [str(n) for n in names]
    return ["output" if len(flat) == 1 else f"output[{i}]" for i in range(len(flat))]


def _layer_label(layer) -> str:
    return f"layer {layer.name!r} ({type(layer).__name__}, policy {KerasAPI.policy_name(layer)})"


def _dtype(tensor) -> str:
    return str(getattr(tensor.dtype, "name", tensor.dtype))


def _producer(run: ForwardPass, index: int, tensor):
    call = run.recorder.producer_of(tensor)
    if call is not None:
        return call.layer
    outputs = getattr(run.model, "outputs", None) or []
    if index < len(outputs):
        history = getattr(outputs[index], "_keras_history", None)
        if history:
            return history[0]
    return None


def _output_advice(layer) -> str:
    if layer is None:
        return "cast it: end the model with keras.layers.Activation('linear', dtype='float32')"
    activation = getattr(getattr(layer, "activation", None), "__name__", "")
    kind = type(layer).__name__
    if kind in ("Activation", "Softmax", "ReLU", "LeakyReLU"):
        return f"give {layer.name!r} dtype='float32'"
    if activation in ("softmax", "sigmoid", "log_softmax"):
        return (
            f"split it: {kind}(..., activation=None) followed by "
            f"Activation('{activation}', dtype='float32')"
        )
    return f"pass dtype='float32' to {layer.name!r}, or add Activation('linear', dtype='float32') after it"


def check_output_dtype(run: ForwardPass) -> Result:
    bad, seen = [], []
    for index, (name, tensor) in enumerate(zip(run.names, run.flat_outputs())):
        dtype = _dtype(tensor)
        seen.append(f"{name}: {dtype}")
        if dtype in ("float16", "bfloat16"):
            layer = _producer(run, index, tensor)
            where = _layer_label(layer) if layer is not None else "an unknown layer"
            bad.append(f"output {name!r} is {dtype}, computed by {where}: {_output_advice(layer)}")
    measured = {"outputs": dict(zip(run.names, [_dtype(t) for t in run.flat_outputs()]))}
    if bad:
        return Result("fail", "; ".join(bad), measured)
    return Result("pass", f"every output is float32 or not a float ({', '.join(seen)})", measured)


def check_variable_dtype(run: ForwardPass) -> Result:
    owner = {}  # variable id -> the innermost layer that lists it (layers come parents first)
    for layer in run.api.layers(run.model):
        for variable in getattr(layer, "trainable_weights", []):
            owner[id(variable)] = layer
    offenders: dict[str, list[str]] = {}
    labels: dict[str, str] = {}
    variables = list(getattr(run.model, "trainable_weights", []))
    total = len(variables)
    for variable in variables:
        dtype = str(getattr(variable.dtype, "name", variable.dtype))
        if dtype != "float32":
            layer = owner.get(id(variable), run.model)
            offenders.setdefault(layer.name, []).append(f"{variable_name(variable)} ({dtype})")
            labels[layer.name] = _layer_label(layer)
    if offenders:
        parts = [f"{labels[name]} has {', '.join(vs)}" for name, vs in offenders.items()]
        return Result(
            "fail",
            "; ".join(parts) + ": give these layers a mixed policy (dtype='mixed_float16' or "
            "'mixed_bfloat16') so their variables stay float32",
            {"non_float32": offenders},
        )
    return Result("pass", f"all {total} trainable variables are float32", {"variables": total})


def _finite(tensor) -> bool:
    try:
        values = np.asarray(tensor.numpy() if hasattr(tensor, "numpy") else tensor)
    except Exception:
        return True
    if values.dtype.kind != "f" and str(values.dtype) != "bfloat16":
        return True
    return bool(np.all(np.isfinite(values.astype(np.float32))))


def check_finite_forward(run: ForwardPass, input_descriptions: list) -> Result:
    import tensorflow as tf

    bad = [name for name, t in zip(run.names, run.flat_outputs()) if not _finite(t)]
    inputs = "; ".join(input_descriptions)
    if not bad:
        return Result("pass", f"all outputs finite on synthetic inputs ({inputs})", {"inputs": input_descriptions})
    first = next(
        (c for c in run.recorder.calls if not all(_finite(t) for t in tf.nest.flatten(c.output))), None
    )
    where = f"; the first non-finite values come out of {_layer_label(first.layer)}" if first else ""
    return Result(
        "fail",
        f"output {', '.join(repr(b) for b in bad)} has NaN/inf on synthetic inputs ({inputs}){where}: look for "
        "constants outside float16's range (1e-9 masks, 1e-8 epsilons, values over 65504) in that layer",
        {"non_finite_outputs": bad},
    )


def check_float32_agreement(run: ForwardPass) -> Result:
    tolerance = AGREEMENT_TOLERANCE.get(run.compute_dtype)
    if tolerance is None:
        return Result("skip", f"the model computes in {run.compute_dtype}: nothing to compare with float32")
    try:
        with float32_policies(run.api, [run.model]):
            reference = run.model(run.inputs, training=False)
    except Exception as exc:
        return Result("skip", f"could not run the same weights under the float32 policy: {type(exc).__name__}: {exc}")
    import tensorflow as tf

    errors, problems = {}, []
    for name, mixed, ref in zip(run.names, run.flat_outputs(), tf.nest.flatten(reference)):
        if _dtype(ref) in ("float16", "bfloat16"):
            return Result("skip", f"output {name!r} stays {_dtype(ref)} with every layer set to float32: cannot compare")
        if not mixed.dtype.is_floating:
            continue
        a = np.asarray(tf.cast(mixed, tf.float32).numpy(), dtype=np.float64)
        b = np.asarray(tf.cast(ref, tf.float32).numpy(), dtype=np.float64)
        if not np.all(np.isfinite(b)):
            return Result("skip", f"output {name!r} is not finite even in float32: the model itself is broken")
        if not np.all(np.isfinite(a)):
            problems.append(f"output {name!r} is not finite under {run.policy} but finite in float32")
            errors[name] = None
            continue
        scale = max(float(np.linalg.norm(b)), 1e-30)
        relative = float(np.linalg.norm(a - b)) / scale
        errors[name] = {"relative_l2": relative, "max_abs": float(np.max(np.abs(a - b))) if a.size else 0.0}
        if relative > tolerance:
            problems.append(
                f"output {name!r} differs from float32 by {relative:.2%} (relative L2, tolerance {tolerance:.0%})"
            )
    measured = {"tolerance": tolerance, "outputs": errors}
    if problems:
        advice = (
            f"some value overflows {run.compute_dtype} (see finite-forward)" if any(e is None for e in errors.values())
            else f"some layer loses precision in {run.compute_dtype}"
        )
        return Result(
            "fail",
            "; ".join(problems) + f": {advice}; compute that layer in float32 (dtype='float32') or rescale its values",
            measured,
        )
    summary = ", ".join(f"{n}: {e['relative_l2']:.1e}" for n, e in errors.items() if e)
    return Result(
        "pass",
        f"same weights under the float32 policy agree within {tolerance:.0%} (relative L2 {summary or 'n/a'})",
        measured,
    )


# -- tensor cores ----------------------------------------------------------------------

def _kind(layer) -> str | None:
    names = [c.__name__ for c in type(layer).__mro__]
    if any("Depthwise" in n for n in names):
        return None  # depthwise convolutions do not run as Tensor Core GEMMs
    if "Dense" in names or "EinsumDense" in names:
        return "dense"
    if any(n in ("Conv", "BaseConv", "BaseConvTranspose", "Conv1D", "Conv2D", "Conv3D") for n in names):
        return "conv"
    if any(n in ("LSTM", "GRU", "SimpleRNN", "CuDNNLSTM", "CuDNNGRU") for n in names):
        return "rnn"
    return None


def _output_bound(run: ForwardPass) -> set:
    """Indexes of the calls whose output is a model output or reaches one only through
    weightless layers (an Activation, a cast): their width is the task's (classes, targets)."""
    bound: set[int] = set()
    for tensor in run.flat_outputs():
        call = run.recorder.producer_of(tensor)
        if call is not None:
            bound.add(run.recorder.calls.index(call))
    for index in range(len(run.recorder.calls) - 1, -1, -1):
        call = run.recorder.calls[index]
        if index in bound and not getattr(call.layer, "weights", []) and len(call.inputs) == 1:
            producer = run.recorder.producer_of(call.inputs[0], before=index)
            if producer is not None:
                bound.add(run.recorder.calls.index(producer))
    return bound


def _input_bound(run: ForwardPass) -> set:
    """Indexes of the calls whose input no layer with weights computed: it is the model's
    input (through weightless layers: Flatten, pooling, casts), so its width is the data's."""
    bound: set[int] = set()
    calls = run.recorder.calls
    for index, call in enumerate(calls):
        if call.first_input is None:
            continue
        producer = run.recorder.producer_of(call.first_input, before=index)
        while producer is not None and not getattr(producer.layer, "weights", []) and producer.first_input is not None:
            position = calls.index(producer)
            producer = run.recorder.producer_of(producer.first_input, before=position)
        if producer is None:
            bound.add(index)
    return bound


def _sizes(layer, kind: str, call) -> list:
    """[(label, size, exempt_reason_or_None)] for one call."""
    shape = [int(d) if d is not None else None for d in (call.first_input.shape if call.first_input is not None else [])]
    if not shape:
        return []
    if kind == "dense":
        rows = int(np.prod([d for d in shape[:-1] if d is not None])) if len(shape) > 1 else 1
        units = getattr(layer, "units", None)
        if units is None:  # EinsumDense
            units = int(call.output.shape[-1])
        return [("batch rows", rows), ("inputs", shape[-1]), ("units", int(units))]
    if kind == "conv":
        channels_first = getattr(layer, "data_format", "channels_last") == "channels_first"
        channels = shape[1] if channels_first else shape[-1]
        return [("batch", shape[0]), ("input channels", channels), ("filters", int(layer.filters))]
    units = getattr(layer, "units", None) or getattr(getattr(layer, "cell", None), "units", None)
    return [("batch", shape[0]), ("input features", shape[-1]), ("units", int(units))]


def check_tensor_cores(run: ForwardPass, multiple: int, batch_note: str) -> Result:
    if run.compute_dtype == "bfloat16":
        return Result(
            "skip",
            f"Tensor Core sizing applies to float16 on NVIDIA GPUs; under {run.policy} (usually TPUs) "
            "multiples of 128 matter instead",
        )
    if run.compute_dtype != "float16":
        return Result("skip", f"the model computes in {run.compute_dtype}: Tensor Cores need float16")
    bound = _output_bound(run)
    from_data = _input_bound(run)
    flagged, lines, measured, seen = [], [], [], set()
    for index, call in enumerate(run.recorder.calls):
        kind = _kind(call.layer)
        if kind is None or call.first_input is None:
            continue
        sizes = _sizes(call.layer, kind, call)
        key = (id(call.layer), tuple(s for _, s in sizes))
        if key in seen or not sizes:
            continue
        seen.add(key)
        is_output = index in bound
        entry = {"layer": call.layer.name, "kind": type(call.layer).__name__, "sizes": dict(sizes), "flagged": []}
        parts = []
        for label, size in sizes:
            exempt = (is_output and label in ("units", "filters")) or (
                index in from_data and label in ("inputs", "input channels", "input features")
            )
            if size is not None and size % multiple and not exempt:
                entry["flagged"].append(label)
                parts.append(f"{label} {size}")
        measured.append(entry)
        summary = ", ".join(f"{label} {size}" for label, size in sizes)
        if parts:
            flagged.append(f"{call.layer.name} ({type(call.layer).__name__}: {', '.join(parts)})")
        notes = [note for note, applies in (
            ("its output width is the model's output", is_output),
            ("its input width is the data's", index in from_data),
        ) if applies]
        lines.append(f"{call.layer.name} {summary}" + (f" (exempt: {'; '.join(notes)})" if notes else ""))
    if not measured:
        return Result("skip", "no Dense, convolution or RNN layer ran", {"layers": []})
    if flagged:
        return Result(
            "fail",
            f"not a multiple of {multiple}, so these matmuls cannot use Tensor Cores: {'; '.join(flagged)} "
            f"[{batch_note}]: round these sizes up to a multiple of {multiple}",
            {"multiple": multiple, "layers": measured},
        )
    return Result(
        "pass",
        f"all sizes are multiples of {multiple} ({'; '.join(lines)}) [{batch_note}]",
        {"multiple": multiple, "layers": measured},
    )
