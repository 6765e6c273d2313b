"""MP101 fixtures, built with TensorFlow: the model outputs are float16/bfloat16 before
the fix and float32 after it, the fix keeps every variable (names and shapes) and a
checkpoint saved before the fix loads into the fixed model.

Each fixture's source (and its `.fixed.py`) is executed in a child process (one per
Keras version, all fixtures batched); the child finds the models it built (the
module-level variables holding a Keras model that is not part of another one) and
reports their output dtypes and variables. Fixtures with `target=keras2` run under
Keras 2 (tf-keras, `TF_USE_LEGACY_KERAS=1`), the others under Keras 3.

Naming: `scope_*` fixtures are run as their code runs by tests/test_policy_flow_tf.py;
`clean_*` fixtures must build float32 outputs only (the rule is right to stay
silent); `quiet_*` fixtures build float16 outputs the rule deliberately does not trace
(precision over recall), which the test confirms so the name stays honest.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from tests.fixture_cases import Case, cases
from tests.tf_harness import run_tf

HALF = ("float16", "bfloat16")

_CHILD = r'''
import json, os, sys, tempfile, types
import numpy as np
import tensorflow as tf
import keras as keras3
import tf_keras

LEGACY = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
FAMILIES = [keras3, tf_keras]
if LEGACY:
    assert tf.keras.Model is tf_keras.Model, "TF_USE_LEGACY_KERAS=1 must give tf_keras"

# TF 2.1-2.3 code: `from tensorflow.keras.mixed_precision import experimental` is gone
# in TF 2.21 (ImportError). A stand-in lets those fixtures build their models.
import tensorflow.keras.mixed_precision as _mp
_experimental = types.ModuleType("tensorflow.keras.mixed_precision.experimental")
_experimental.Policy = lambda name, loss_scale=None: _mp.Policy(name)
_experimental.set_policy = _mp.set_global_policy
_mp.experimental = _experimental
sys.modules[_experimental.__name__] = _experimental
# keras_core (Keras 3's 2023 preview, not installed here) is the same API as Keras 3.
sys.modules.setdefault("keras_core", keras3)
sys.modules.setdefault("keras_core.layers", keras3.layers)

MODEL_CLASSES = tuple(f.Model for f in FAMILIES)
calls = {}  # id(model) -> the first concrete input it was called with


def record_calls(family):
    original = family.Model.__call__
    def __call__(self, *args, **kwargs):
        if args and id(self) not in calls and not any(
            type(t).__name__ == "KerasTensor" or (hasattr(t, "graph") and not tf.executing_eagerly())
            for t in tf.nest.flatten(args[0])
        ):
            calls[id(self)] = args[0]
        return original(self, *args, **kwargs)
    family.Model.__call__ = __call__


for family in FAMILIES:
    record_calls(family)


def reset(assumed):
    for family in FAMILIES:
        family.backend.clear_session()  # (Keras 3 also forgets the global policy here)
        family.mixed_precision.set_global_policy(assumed or "float32")
    calls.clear()


def sublayers(model):
    try:
        return list(model._flatten_layers(include_self=False, recursive=True))
    except Exception:
        return list(model.layers)


def top_level_models(namespace):
    models = {k: v for k, v in namespace.items() if isinstance(v, MODEL_CLASSES) and not k.startswith("_")}
    inner = {id(layer) for m in models.values() for layer in sublayers(m)}
    return {k: v for k, v in models.items() if id(v) not in inner}


def zeros_for(model):
    inputs = getattr(model, "inputs", None)
    try:
        if inputs:
            return [synthetic([2 if d is None else d for d in t.shape], t.dtype) for t in inputs]
    except Exception:
        pass
    if id(model) in calls:
        return calls[id(model)]
    raise RuntimeError(f"cannot tell how to call {model!r}: build it in the fixture")


def synthetic(shape, dtype):
    dtype = tf.as_dtype(dtype)
    if dtype == tf.string:
        return np.full(shape, b"", dtype=object)
    return np.zeros(shape, dtype.as_numpy_dtype)


def output_dtypes(model):
    data = zeros_for(model)
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    return [tf.as_dtype(t.dtype).name for t in tf.nest.flatten(model(data))]


def variables(model):
    return [[getattr(v, "path", None) or v.name, [int(d) for d in v.shape]] for v in model.weights]


def is_keras3(model):
    return isinstance(model, keras3.Model)


folder = tempfile.mkdtemp()
for job in json.load(open(JOBS)):
    result = {"id": job["id"], "phases": {}}
    saved = {}
    for phase in ("before", "after"):
        source = job.get(phase)
        if source is None:
            continue
        reset(job.get("assume"))
        namespace = {"__name__": "__fixture__"}
        exec(compile(source, job["id"] + "/" + phase, "exec"), namespace)
        models = {}
        for name, model in top_level_models(namespace).items():
            entry = {"dtypes": output_dtypes(model), "variables": variables(model)}
            if phase == "before" and model.weights:
                path = os.path.join(folder, job["id"].replace("/", "_") + "_" + name)
                path += ".weights.h5" if is_keras3(model) else "_ckpt"
                model.save_weights(path)
                saved[name] = (path, [np.array(w) for w in model.get_weights()])
            elif phase == "after" and name in saved:
                path, values = saved[name]
                try:
                    model.load_weights(path)
                    entry["checkpoint"] = all(
                        a.shape == b.shape and np.array_equal(a, b) for a, b in zip(values, model.get_weights())
                    ) and len(values) == len(model.get_weights())
                except Exception as exc:
                    entry["checkpoint"] = f"{type(exc).__name__}: {exc}"
            models[name] = entry
        result["phases"][phase] = models
    emit(result)
'''


# `scope_*` fixtures build their models in functions and tests, as their code runs:
# tests/test_policy_flow_tf.py runs them that way.
MP101_CASES = [c for c in cases("MP101") if not c.name.startswith("scope_")]


def _target(case: Case) -> int:
    return 2 if case.options().get("target") == "keras2" else 3


def _jobs(keras: int) -> list[dict]:
    jobs = []
    for case in MP101_CASES:
        if _target(case) != keras:
            continue
        job = {"id": case.id, "before": case.source(), "assume": case.options().get("assume-policy")}
        if case.fixed_path.exists():
            job["after"] = case.fixed_path.read_bytes().decode("utf-8")
        jobs.append(job)
    return jobs


_RESULTS: dict[int, dict[str, dict]] = {}


def _results(keras: int) -> dict[str, dict]:
    """Every fixture of one Keras version, built in one child process."""
    if keras not in _RESULTS:
        jobs = _jobs(keras)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(jobs, handle)
        try:
            emitted = run_tf(f"JOBS = {handle.name!r}\n" + _CHILD, keras=keras, timeout=900)
        finally:
            Path(handle.name).unlink()
        _RESULTS[keras] = {r["id"]: r for r in emitted}
    return _RESULTS[keras]


def _fires(case: Case) -> bool:
    return bool(case.expected_path.read_text(encoding="utf-8").strip())


def _half_outputs(models: dict) -> dict[str, list[str]]:
    return {name: m["dtypes"] for name, m in models.items() if any(d in HALF for d in m["dtypes"])}


@pytest.mark.tensorflow
@pytest.mark.parametrize("case", MP101_CASES, ids=lambda c: f"{c.id}-keras{_target(c)}")
def test_fixture_models_output_dtypes(case: Case) -> None:
    result = _results(_target(case))[case.id]
    before = result["phases"]["before"]
    assert before, f"{case.id}: the fixture builds no model at module level"
    half_before = _half_outputs(before)
    if case.name.startswith("clean_"):
        assert not _fires(case)
        assert not half_before, f"a clean fixture builds float16 outputs: {half_before}"
        return
    if case.name.startswith("quiet_"):
        assert not _fires(case)
        assert half_before, "a quiet_ fixture should build float16 outputs that mplint cannot trace"
        return
    assert _fires(case) and case.fixed_path.exists()
    assert half_before, f"the rule fires but every output is float32 already: {before}"
    after = result["phases"]["after"]
    assert set(after) == set(before), "the fix changed which models are built"
    # `# fixture: parts=G`: models whose float16 output only feeds another model (a GAN's
    # generator feeding its critic) are parts, not outputs, and keep their dtype
    parts = set(filter(None, case.options().get("parts", "").split(",")))
    assert parts <= set(before) and all(before[name]["dtypes"] == after[name]["dtypes"] for name in parts)
    left = {name: dtypes for name, dtypes in _half_outputs(after).items() if name not in parts}
    assert not left, f"outputs still half precision after the fix: {left}"
    for name, model in after.items():
        assert len(model["dtypes"]) == len(before[name]["dtypes"]), f"{name}: number of outputs changed"
        assert model["variables"] == before[name]["variables"], f"{name}: variables changed"
        if before[name]["variables"]:
            assert model.get("checkpoint") is True, f"{name}: checkpoint from before the fix: {model.get('checkpoint')}"


def test_keras2_and_keras3_fixtures_exist() -> None:
    """Both Keras versions are exercised by firing fixtures."""
    firing = [c for c in MP101_CASES if _fires(c)]
    assert {_target(c) for c in firing} == {2, 3}
