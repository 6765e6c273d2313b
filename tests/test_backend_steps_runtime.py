"""MP206's fixes, run: each JAX (and, where torch is installed, torch) fixture trains one
step on its own backend under mixed_float16, as written and after `mplint --fix`, and
the weight update is compared with the same step in float32 without loss scaling.

As written, the LossScaleOptimizer divides never-scaled gradients by 32768: with SGD the
update is ~32768x too small, with Adam it shrinks (epsilon dominates). After the fix
the update is float32's, and the loss the step logs is the unscaled one.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from tests.tf_harness import run_tf

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "MP206"

# fixture -> the optimizer it trains with
JAX_CASES = {
    "jax_guide": "sgd",
    "jax_loss_fn_no_aux": "sgd",
    "jax_grad_fn_attribute": "sgd",
    "jax_module_loop": "sgd",
    "jax_grad_only": "adam",
}
TORCH_CASES = {"torch_guide": "adam", "torch_loss_fn_apply_gradients": "sgd", "torch_autograd_grad": "sgd"}


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _measure(backend: str, names) -> dict:
    paths = [str(FIXTURES / f"{name}{suffix}.py") for name in names for suffix in ("", ".fixed")]
    results = run_tf(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from tests.support.backend_step_probe import measure
        for path in {json.dumps(paths)}:
            emit({{"path": path, **measure(path)}})
    """, backend=backend, timeout=900)
    return {Path(r["path"]).name: r for r in results}


def _compare(result: dict) -> tuple[float, float]:
    """(|mixed update| / |float32 update|, relative L2 error of the mixed update)."""
    mixed, reference = np.array(result["mixed"]["update"]), np.array(result["float32"]["update"])
    base = float(np.linalg.norm(reference))
    assert base > 0, "the float32 step did not train"
    return float(np.linalg.norm(mixed)) / base, float(np.linalg.norm(mixed - reference)) / base


def _check(results: dict, cases: dict) -> None:
    for name, optimizer in cases.items():
        broken, fixed = results[f"{name}.py"], results[f"{name}.fixed.py"]
        assert broken["optimizer"] == fixed["optimizer"] == "LossScaleOptimizer", name
        assert broken["mixed"]["policy"] == "mixed_float16" and broken["float32"]["policy"] == "float32"
        ratio, error = _compare(broken)
        if optimizer == "sgd":
            assert ratio == pytest.approx(1 / 32768, rel=0.05), (name, ratio)  # every update 32768x too small
        else:
            assert ratio < 0.95 and error > 0.2, (name, ratio, error)  # Adam: epsilon dominates
        ratio, error = _compare(fixed)
        assert ratio == pytest.approx(1.0, abs=0.02) and error < 0.02, (name, ratio, error)


@pytest.mark.slow
@pytest.mark.skipif(not _installed("jax"), reason="needs jax (installed by the dev extra)")
def test_jax_fixes_make_the_mixed_float16_update_match_float32() -> None:
    results = _measure("jax", JAX_CASES)
    _check(results, JAX_CASES)
    # The guide's step logs its loss through the compiled loss metric: unscaled after the fix.
    logged = results["jax_guide.fixed.py"]
    assert logged["mixed"]["loss"] == pytest.approx(logged["float32"]["loss"], rel=0.01)


@pytest.mark.slow
@pytest.mark.skipif(not _installed("torch"), reason="torch is optional (not installed in CI)")
def test_torch_fixes_make_the_mixed_float16_update_match_float32() -> None:
    results = _measure("torch", TORCH_CASES)
    _check(results, TORCH_CASES)
    logged = results["torch_guide.fixed.py"]
    assert logged["mixed"]["loss"] == pytest.approx(logged["float32"]["loss"], rel=0.01)
