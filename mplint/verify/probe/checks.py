"""The checks that need one forward pass: output-dtype, variable-dtype, finite-forward and
float32-agreement (tensor-cores is in tensorcores.py). Each returns a `Result` (status,
detail, measured)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .kerasapi import KerasAPI, float32_policies, variable_name
from .tensors import dtype_name, flatten, is_float, to_numpy
from .tracing import CallRecorder

# Relative L2 distance allowed between mixed and float32 outputs (unit roundoff is
# 4.9e-4 for float16 and 3.9e-3 for bfloat16; a few dozen roundings of headroom).
AGREEMENT_TOLERANCE = {"float16": 0.03, "bfloat16": 0.1}


@dataclass
class Result:
    # "pass": made and met; "fail": made and not met; "skip": applicable but could not be
    # made (the detail says why); "n/a": does not apply here (a policy without float16).
    status: str
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
        return flatten(self.outputs)


def run_forward(model, api: KerasAPI, policy: str, inputs) -> ForwardPass:
    recorder = CallRecorder(api.layers(model))
    with recorder:
        outputs = model(inputs, training=False)
    return ForwardPass(model, api, policy, inputs, outputs, recorder, output_names(model, outputs))


def output_names(model, outputs) -> list:
    flat = flatten(outputs)
    if isinstance(outputs, dict):
        return [str(k) for k in sorted(outputs)]  # tf.nest orders dicts by key
    names = list(getattr(model, "output_names", None) or [])
    if len(names) == len(flat):
        return [str(n) for n in names]
    return ["output" if len(flat) == 1 else f"output[{i}]" for i in range(len(flat))]


def _layer_label(layer) -> str:
    path = getattr(layer, "path", None)  # Keras 3: "t5_backbone/transformer_layer_0/attention"
    where = f" at {path!r}" if isinstance(path, str) and path and path != layer.name else ""
    return f"layer {layer.name!r}{where} ({type(layer).__name__}, policy {KerasAPI.policy_name(layer)})"


def culprit(call):
    """The layer whose code made the first non-finite values: the call's own, unless its
    inputs were already non-finite, which only the code of the layer around it (between
    its sub-layers: a mask fill, a softmax written with ops) can have made."""
    inputs_finite = all(_finite(t) for t in call.inputs if is_float(t))
    return call.layer if inputs_finite or call.parent is None else call.parent


def first_divergent_call(run: "ForwardPass", tolerance: float):
    """Layer by layer: the first call (innermost first, in the order they returned) whose
    output under the mixed policy is non-finite where float32's is finite, or differs
    from float32's by more than `tolerance` (relative L2). Returns (layer, why) or None.
    The float32 run is recorded through the same layers on the same inputs."""
    recorder = CallRecorder(run.api.layers(run.model))
    try:
        with float32_policies(run.api, [run.model]), recorder:
            run.model(run.inputs, training=False)
    except Exception:
        return None
    if len(recorder.calls) != len(run.recorder.calls):
        return None  # not the same sequence of calls: no pairing
    for mixed, ref in zip(run.recorder.calls, recorder.calls):
        if mixed.layer is not ref.layer:
            return None
        for a, b in zip(flatten(mixed.output), flatten(ref.output)):
            if not (is_float(a) and is_float(b)):
                continue
            x = to_numpy(a, np.float32).astype(np.float64)
            y = to_numpy(b, np.float32).astype(np.float64)
            if x.shape != y.shape or not np.all(np.isfinite(y)):
                continue
            if not np.all(np.isfinite(x)):
                return culprit(mixed), f"non-finite under {run.policy}, finite in float32"
            relative = float(np.linalg.norm(x - y)) / max(float(np.linalg.norm(y)), 1e-30)
            if relative > tolerance:
                return mixed.layer, f"{relative:.2%} from float32 (relative L2)"
    return None


def _dtype(tensor) -> str:
    return dtype_name(tensor)


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
        dtype = dtype_name(variable)
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
    if not is_float(tensor):
        return True
    try:
        values = to_numpy(tensor, np.float32)
    except Exception:
        return True
    return bool(np.all(np.isfinite(values)))


def _kind_of(descriptions: list) -> str:
    return "the --inputs batch" if any(" from " in d for d in descriptions) else "synthetic inputs"


def check_finite_forward(run: ForwardPass, input_descriptions: list) -> Result:
    bad = [name for name, t in zip(run.names, run.flat_outputs()) if not _finite(t)]
    inputs = "; ".join(input_descriptions)
    if not bad:
        return Result("pass", f"all outputs finite on {_kind_of(input_descriptions)} ({inputs})", {"inputs": input_descriptions})
    first = next(
        (c for c in run.recorder.calls if not all(_finite(t) for t in flatten(c.output))), None
    )
    where = f"; the first non-finite values come out of {_layer_label(culprit(first))}" if first else ""
    return Result(
        "fail",
        f"output {', '.join(repr(b) for b in bad)} has NaN/inf on {_kind_of(input_descriptions)} ({inputs}){where}: look for "
        "constants outside float16's range (-1e9 mask fills, 1e-8 epsilons, values over 65504) in that layer",
        {"non_finite_outputs": bad},
    )


def check_float32_agreement(run: ForwardPass) -> Result:
    tolerance = AGREEMENT_TOLERANCE.get(run.compute_dtype)
    if tolerance is None:
        return Result("n/a", f"the model computes in {run.compute_dtype}: nothing to compare with float32")
    try:
        with float32_policies(run.api, [run.model]):
            reference = run.model(run.inputs, training=False)
    except Exception as exc:
        return Result("skip", f"could not run the same weights under the float32 policy: {type(exc).__name__}: {exc}")
    errors, problems = {}, []
    for name, mixed, ref in zip(run.names, run.flat_outputs(), flatten(reference)):
        if _dtype(ref) in ("float16", "bfloat16"):
            return Result("skip", f"output {name!r} stays {_dtype(ref)} with every layer set to float32: cannot compare")
        if not is_float(mixed):
            continue
        a = to_numpy(mixed, np.float32).astype(np.float64)
        b = to_numpy(ref, np.float32).astype(np.float64)
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
        found = first_divergent_call(run, tolerance)
        if found is not None:
            layer, why = found
            advice = f"the first layer to go wrong is {_layer_label(layer)}: {why}"
            measured["first_divergent_layer"] = {"name": layer.name, "class": type(layer).__name__,
                                                 "path": getattr(layer, "path", layer.name), "why": why}
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
