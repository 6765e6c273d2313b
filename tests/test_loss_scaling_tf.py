"""One training step of every MP2xx loop fixture, before and after `--fix --unsafe-fixes`,
on TensorFlow 2.21: Keras 3, or Keras 2 (tf-keras) for keras2-targeted fixtures.

After the fix, the value `tape.gradient` differentiates must be the loss times the loss
scale, and the optimizer inside the LossScaleOptimizer must receive the gradients
divided by that scale (the true gradients). Before the fix, each fixture shows the
mistake its rule describes.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.fixture_cases import cases
from tests.tf_harness import run_tf

pytestmark = pytest.mark.tensorflow

PROBE = Path(__file__).resolve().parent / "support" / "loop_probe.py"
INITIAL_SCALE = 32768.0

# fixture id -> (how one step is run, what the original code does)
#   no-lso:          no LossScaleOptimizer; the loss is not scaled
#   divided-unscaled: LossScaleOptimizer (Keras 3) divides gradients of an unscaled loss
#   unscaled-loss:    LossScaleOptimizer (Keras 2) gets gradients of an unscaled loss
#   scaled-grads:     the scaled loss's gradients reach the optimizer still scaled
#   scaled-grads-clipped: ... and are clipped (to a global norm of 5) while still scaled
LOOPS = {
    "MP201/tf_function": ("train_step", "no-lso"),
    "MP201/tf_function_keras2": ("train_step", "no-lso"),
    "MP201/module_loop": ("import", "no-lso"),
    "MP201/module_loop_keras2": ("import", "no-lso"),
    "MP201/optimizer_in_other_function": ("train_step", "no-lso"),
    "MP201/self_opt_attribute": ("trainer", "no-lso"),
    "MP201/minimize_keras2": ("train_step", "no-lso"),
    "MP201/clipped_gradients_keras2": ("train_step", "no-lso"),
    "MP201/gradients_in_a_loop": ("train_step", "no-lso"),
    "MP201/gan_two_tapes": ("train_step", "no-lso"),
    "MP201/gan_two_tapes_keras2": ("train_step", "no-lso"),
    "MP202/train_step_keras3": ("fit", "divided-unscaled"),
    "MP202/train_step_keras2": ("fit", "unscaled-loss"),
    "MP202/wrapped_optimizer": ("train_step", "divided-unscaled"),
    "MP202/gradient_inside_tape_keras2": ("train_step", "unscaled-loss"),
    "MP203/missing_unscale": ("train_step", "scaled-grads"),
    "MP203/train_step_self_optimizer": ("fit", "scaled-grads"),
    "MP203/clipped_missing_unscale": ("train_step", "scaled-grads-clipped"),
}
# MP205: loss scaling under mixed_bfloat16, unwrapped by the fix.
BFLOAT16_LOOPS = {
    "MP205/unwrap_keras3": "train_step",
    "MP205/unwrap_rebinding_keras2": "train_step",
}


def _case(case_id: str):
    code, name = case_id.split("/")
    (case,) = [c for c in cases(code) if c.name == name]
    return case


def _keras(case) -> int:
    return 2 if case.options().get("target") == "keras2" else 3


def _jobs(keras: int) -> list[dict]:
    jobs = []
    programs = {**{k: run for k, (run, _) in LOOPS.items()}, **BFLOAT16_LOOPS}
    for case_id, run in programs.items():
        case = _case(case_id)
        if _keras(case) != keras:
            continue
        assert case.fixed_path.exists(), f"{case_id}: no fixed output"
        jobs.append({"id": case_id + ":before", "source": case.source(), "run": run})
        fixed = case.fixed_path.read_text(encoding="utf-8")
        jobs.append({"id": case_id + ":after", "source": fixed, "run": run})
        jobs.append({"id": case_id + ":graph", "source": fixed, "run": run, "eager": False})
    return jobs


def _run(keras: int) -> dict[str, dict]:
    code = PROBE.read_text(encoding="utf-8") + f"\nemit(run_programs({_jobs(keras)!r}))\n"
    (results,) = run_tf(code, keras=keras)
    return {r["id"]: r for r in results}


@pytest.fixture(scope="module")
def steps() -> dict[str, dict]:
    return {**_run(3), **_run(2)}


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=2e-3, abs_tol=1e-6)


def _grads_close(applied: list, expected: list, divisor: float = 1.0) -> bool:
    assert len(applied) == len(expected)
    for got, want in zip(applied, expected):
        if (got is None) != (want is None):
            return False
        if got is None:
            continue
        assert len(got) == len(want)
        scale = max(1e-12, max(abs(w) / divisor for w in want))
        if any(abs(g - w / divisor) > 2e-3 * scale + 1e-9 for g, w in zip(got, want)):
            return False
    return True


def _global_norm(grads: list) -> float:
    return math.sqrt(sum(v * v for g in grads if g for v in g))


def _steps_of(run: dict) -> list[tuple[float, float, list, list]]:
    """(loss, gradient target, tape gradients, applied gradients) per model trained."""
    n = len(run["losses"])
    assert len(run["targets"]) == len(run["tape_grads"]) == len(run["applied"]) == n, run
    return list(zip(run["losses"], run["targets"], run["tape_grads"], run["applied"]))


@pytest.mark.parametrize("case_id", sorted(LOOPS))
def test_fixed_loop_scales_loss_and_unscales_gradients(steps, case_id):
    after = steps[case_id + ":after"]
    trained = _steps_of(after)
    assert after["scales"] == [INITIAL_SCALE] * len(trained), "the fixed loop must apply through a LossScaleOptimizer"
    # Each optimizer that receives gradients is the inner optimizer of a LossScaleOptimizer ...
    assert after["inner_ok"], "gradients were not applied by the LossScaleOptimizer's inner optimizer"
    for (loss, target, tape, applied), scale in zip(trained, after["scales"]):
        # ... the gradient target is the loss times the loss scale ...
        assert _close(target, loss * scale), (target, loss)
        # ... and the gradients it receives are divided by the scale again.
        assert _grads_close(applied, tape, divisor=scale)
        assert any(any(v != 0 for v in g) for g in applied if g), "all gradients are zero"


@pytest.mark.parametrize("case_id", sorted(LOOPS))
def test_original_loop_shows_the_mistake(steps, case_id):
    before = steps[case_id + ":before"]
    _, mistake = LOOPS[case_id]
    trained = _steps_of(before)
    if mistake == "no-lso":
        assert before["scales"] == []
    else:
        assert before["scales"] == [INITIAL_SCALE] * len(trained)
    for i, (loss, target, tape, applied) in enumerate(trained):
        scale = before["scales"][i] if before["scales"] else 1.0
        if mistake == "no-lso":
            assert _close(target, loss)
            assert _grads_close(applied, tape)
        elif mistake == "divided-unscaled":
            assert _close(target, loss)
            assert _grads_close(applied, tape, divisor=scale)  # 32768x too small
        elif mistake == "unscaled-loss":
            assert _close(target, loss)
            assert _grads_close(applied, tape)
        elif mistake == "scaled-grads":
            assert _close(target, loss * scale)
            assert _grads_close(applied, tape)  # 32768x too large
        elif mistake == "scaled-grads-clipped":
            assert _close(target, loss * scale)
            assert _global_norm(tape) > 100 * 5.0 and math.isclose(_global_norm(applied), 5.0, rel_tol=1e-3)
        else:  # pragma: no cover
            raise AssertionError(mistake)


@pytest.mark.parametrize("case_id", sorted(BFLOAT16_LOOPS))
def test_unwrapped_bfloat16_loop_trains_without_loss_scaling(steps, case_id):
    before, after = steps[case_id + ":before"], steps[case_id + ":after"]
    assert before["scales"] == [INITIAL_SCALE]  # the original scaled for nothing
    assert after["scales"] == []
    ((loss, target, tape, applied),) = _steps_of(after)
    assert _close(target, loss)
    assert _grads_close(applied, tape)
    assert any(any(v != 0 for v in g) for g in applied if g)


@pytest.mark.parametrize("case_id", sorted({**LOOPS, **BFLOAT16_LOOPS}))
def test_fixed_loop_also_runs_as_a_graph(steps, case_id):
    """`@tf.function`s and `fit` traced as graphs (not eagerly) run the fixed code too."""
    graph = steps[case_id + ":graph"]
    assert graph["losses"] and all(math.isfinite(v) for v in graph["losses"])
