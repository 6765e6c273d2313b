"""Proof at run time: one training step of each fixed MP2xx/MP4xx fixture under its mixed
policy updates the weights as a float32 step of the same model on the same data would,
with the clipping the original code meant (TensorFlow 2.21; Keras 3, and Keras 2 through
tf-keras for keras2-targeted fixtures).

The tolerance (10% of the update) is far below what a gradient off by the loss scale
(2**15, either way) does to an SGD step: the mistakes below, the fixes' old failure
modes, must miss it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fixture_cases import cases
from tests.tf_harness import run_tf

pytestmark = pytest.mark.tensorflow

PROBE = Path(__file__).resolve().parent / "support" / "update_probe.py"
TOLERANCE = 0.1

SPARSE = {"loss": "compiled"}
# fixture id -> the step it is run with and what the original code meant: learning rate,
# clipping of the true gradients, loss, data.
UPDATES = {
    # MP201: wrap the optimizer, scale (and for Keras 2 unscale) in the loop
    "MP201/tf_function": {"run": "train_step", "lr": 0.1},
    "MP201/tf_function_keras2": {"run": "train_step", "lr": 0.1},
    "MP201/minimize_keras2": {"run": "train_step", "lr": 0.1},
    "MP201/clipped_gradients": {"run": "train_step", "lr": 0.1, "clip": ["global_norm", 5.0]},
    "MP201/clipped_gradients_keras2": {"run": "train_step", "lr": 0.1, "clip": ["global_norm", 5.0]},
    # MP202: scale the loss of a LossScaleOptimizer's loop
    "MP202/wrapped_optimizer": {"run": "train_step", "lr": 0.1},
    "MP202/gradient_inside_tape_keras2": {"run": "train_step", "lr": 0.1},
    "MP202/clipped_keras3": {"run": "train_step", "lr": 0.1, "clip": ["global_norm", 0.5]},
    "MP202/train_step_keras3": {"run": "fit", "lr": 0.1, **SPARSE},
    "MP202/train_step_keras2": {"run": "fit", "lr": 0.1, **SPARSE},
    # MP203: unscale the gradients (Keras 2)
    "MP203/missing_unscale": {"run": "train_step", "lr": 0.1, "loss": "loss_object"},
    "MP203/clipped_missing_unscale": {"run": "train_step", "lr": 0.1, "loss": "loss_object", "clip": ["global_norm", 5.0]},
    # MP205: unwrap under mixed_bfloat16
    "MP205/unwrap_guarded": {"run": "train_step", "lr": 0.1},
    "MP205/unwrap_rebinding_keras2": {"run": "train_step", "lr": 0.1, "loss": "sparse_logits"},
    # MP401: the TF 2.1 API's loss scales on current LossScaleOptimizers
    "MP401/imported_names_fixed_scale": {"run": "optimizer", "optimizer": "opt", "lr": 0.01},
    "MP401/fixed_scale_keras3": {"run": "train_step", "lr": 0.01},
    "MP401/policy_loss_scale_fit": {"run": "fit", "lr": 0.01, "loss": "compiled", "labels": "dense"},
    # MP403: the graph rewrite becomes the Keras API (also under its condition)
    "MP403/api_page_tf115": {"run": "fit", "lr": 0.01, "loss": "compiled", "labels": "onehot", "features": 20, "classes": 4},
    "MP403/api_page_tf115_keras3": {"run": "fit", "lr": 0.01, "loss": "compiled", "labels": "onehot", "features": 20,
                                    "classes": 4},
    "MP403/rewrite_under_flag": {"run": "fit", "lr": 0.1, **SPARSE},
    "MP403/rewrite_under_module_flag": {"run": "fit", "lr": 0.1, **SPARSE},
    "MP403/env_var_conditional_value": {"run": "fit", "lr": 0.01, **SPARSE},
    # MP404: the other Keras generation's LossScaleOptimizer API
    "MP404/keras2_api_under_keras3": {"run": "train_step", "lr": 0.1},
    "MP404/unscale_only_statement_of_if": {"run": "train_step", "lr": 0.1},
    "MP404/unscale_under_call_test": {"run": "train_step", "lr": 0.1},
    "MP404/clip_global_norm_keras3": {"run": "train_step", "lr": 0.1, "clip": ["global_norm", 0.5]},
    "MP404/clip_by_norm_keras3": {"run": "train_step", "lr": 0.1, "clip": ["norm", 0.25]},
    "MP404/keras3_api_under_keras2": {"run": "fit", "lr": 0.01, **SPARSE},
    "MP404/dynamic_false_keras3": {"run": "fit", "lr": 0.1, "loss": "compiled", "labels": "dense"},
    # fixes of several rules in turn
    "combined/graph_rewrite_loop_to_keras3": {"run": "train_step", "lr": 0.1},
    "combined/env_var_loop_to_keras2": {"run": "train_step", "lr": 0.1},
}


def _case(case_id: str):
    code, name = case_id.split("/")
    (case,) = [c for c in cases(code) if c.name == name]
    return case


def _fixed(case_id: str) -> str:
    return _case(case_id).fixed_path.read_text(encoding="utf-8")


def _clip_left_on_scaled_gradients(text: str) -> str:
    """What the Keras 3 fixes did before gradient consumers were traced: the unscale
    dropped, the clip left where it was (now on gradients times the loss scale)."""
    text = re.sub(r", global_clipnorm=([\d.]+)\)", r")", text)
    return text.replace("    optimizer.apply_gradients(", "    grads, _ = tf.clip_by_global_norm(grads, 0.5)\n    optimizer.apply_gradients(", 1)


# Code whose update is off by the loss scale: the tolerance must catch each.
MISTAKES = {
    "MP404/clip_global_norm_keras3": ("clip left on scaled gradients", _clip_left_on_scaled_gradients),
    "MP202/clipped_keras3": ("clip left on scaled gradients", _clip_left_on_scaled_gradients),
    "MP202/wrapped_optimizer": ("the original: gradients of the unscaled loss divided by the scale", None),
    "MP203/missing_unscale": ("the original: scaled gradients applied as they are", None),
}


def _keras(case_id: str) -> int:
    return 2 if _case(case_id).options().get("target") == "keras2" else 3


def _jobs(keras: int) -> list[dict]:
    jobs = []
    for case_id, spec in UPDATES.items():
        if _keras(case_id) == keras:
            jobs.append({"id": case_id, "source": _fixed(case_id), **spec})
    for case_id, (what, mistake) in MISTAKES.items():
        if _keras(case_id) == keras:
            source = mistake(_fixed(case_id)) if mistake else _case(case_id).source()
            jobs.append({**UPDATES[case_id], "id": f"{case_id}:{what}", "source": source})
    return jobs


def _run(keras: int) -> dict[str, dict]:
    code = PROBE.read_text(encoding="utf-8") + f"\nemit(compare_updates({_jobs(keras)!r}))\n"
    (results,) = run_tf(code, keras=keras)
    return {r["id"]: r for r in results}


@pytest.fixture(scope="module")
def updates() -> dict[str, dict]:
    return {**_run(3), **_run(2)}


@pytest.mark.parametrize("case_id", sorted(UPDATES))
def test_fixed_step_updates_the_weights_as_float32_would(updates, case_id):
    result = updates[case_id]
    assert result["policy"].startswith("mixed_"), result
    assert result["reference_norm"] > 0
    assert result["relative_error"] < TOLERANCE, result


@pytest.mark.parametrize("case_id", sorted(MISTAKES))
def test_an_update_off_by_the_loss_scale_misses_the_tolerance(updates, case_id):
    what, _ = MISTAKES[case_id]
    result = updates[f"{case_id}:{what}"]
    assert result["relative_error"] > 5 * TOLERANCE, result


def test_every_fix_kind_of_the_mp2_and_mp4_rules_is_run():
    """Each rule with a fix in these families has fixed fixtures here, on both Kerases
    where it fixes for both, and with and without clipping where it moves one."""
    covered = {case_id.split("/")[0] for case_id in UPDATES}
    assert {"MP201", "MP202", "MP203", "MP205", "MP401", "MP403", "MP404"} <= covered
    clipped = {(c.split("/")[0], _keras(c)) for c, spec in UPDATES.items() if spec.get("clip")}
    assert {("MP201", 2), ("MP201", 3), ("MP202", 3), ("MP203", 2), ("MP404", 3)} <= clipped
    for code in ("MP201", "MP202", "MP205", "MP403", "MP404"):
        assert {_keras(c) for c in UPDATES if c.startswith(code)} == {2, 3}, code
