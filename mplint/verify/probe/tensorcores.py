"""tensor-cores: the runtime sizes of every Dense, convolution and RNN, batch included.

float16 matmuls and convolutions use Tensor Cores only when their sizes are multiples of
8. The sizes come from the recorded forward pass. Two widths are the task's, not the
model author's, and are not flagged: the units of a layer whose output is a model output
(through weightless layers: an Activation, a cast), and the input width of a layer fed
by the model's inputs (through Flatten, pooling, casts).
"""

from __future__ import annotations

import numpy as np

from .checks import ForwardPass, Result

TENSOR_CORE_MULTIPLE = 8


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
            "n/a",
            f"Tensor Core sizing applies to float16 on NVIDIA GPUs; under {run.policy} (usually TPUs) "
            "multiples of 128 matter instead",
        )
    if run.compute_dtype != "float16":
        return Result("n/a", f"the model computes in {run.compute_dtype}: Tensor Cores need float16")
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
