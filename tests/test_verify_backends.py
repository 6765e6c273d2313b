"""`mplint verify` on Keras 3's JAX backend (and torch where installed), training the way
users do (`fit`, or a script's own step with the arguments it takes), and
`check --fix --verify` on a JAX train step.

Each test starts one child interpreter (Keras with JAX: ~5-15 s on CPU here).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mplint.verify.runner import VerifyOptions, verify
from mplint.verify.target import choose_backend, entry_point
from tests.test_verify import REPO, checks_of, fixture, run_verify, statuses

MP206 = REPO / "fixtures" / "MP206"
needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax (the dev extra installs it)")
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is optional")
JAX_CHECKS = ["output-dtype", "variable-dtype", "finite-forward", "float32-agreement", "loss-scaling",
              "gradient-underflow", "training-update", "tensor-cores"]


def mp206(name: str) -> str:
    return str((MP206 / name).relative_to(REPO))


# -- JAX ---------------------------------------------------------------------------------

@needs_jax
def test_the_jax_guide_step_fails_on_jax_with_updates_32768x_too_small() -> None:
    code, report = run_verify(mp206("jax_guide.py"))
    assert code == 1
    assert report["backend"] == "jax" and report["keras"] == "3"
    assert report["backend_choice"] == "auto: the file sets KERAS_BACKEND=jax with os.environ[...] ="
    assert [c["name"] for c in report["checks"]] == JAX_CHECKS
    checks = checks_of(report)
    assert checks["output-dtype"]["status"] == "pass"  # float32 outputs, checked on JAX
    assert checks["loss-scaling"]["status"] == "fail"
    assert "never calls its `scale_loss`" in checks["loss-scaling"]["detail"]
    update = checks["training-update"]
    assert update["status"] == "fail"
    assert update["measured"]["update_ratio"] == pytest.approx(1 / 32768, rel=0.05)
    assert "MP206" in update["detail"]
    assert checks["gradient-underflow"]["status"] == "skip"


@needs_jax
def test_the_fixed_jax_guide_step_matches_float32_on_jax() -> None:
    code, report = run_verify(mp206("jax_guide.fixed.py"))
    assert code == 0, report
    assert report["backend"] == "jax"
    checks = checks_of(report)
    assert checks["loss-scaling"]["status"] == "pass" and checks["loss-scaling"]["measured"]["scale_loss_calls"] >= 1
    update = checks["training-update"]["measured"]
    assert update["update_ratio"] == pytest.approx(1.0, abs=0.02) and update["update_relative_error"] < 0.02
    assert update["loss"] == pytest.approx(update["float32_loss"], rel=0.01)  # the logged loss is unscaled


@needs_jax
def test_check_fix_verify_fixes_a_jax_step_and_proves_it_on_jax(tmp_path: Path) -> None:
    shutil.copy(MP206 / "jax_guide.py", tmp_path / "train.py")
    result = subprocess.run(
        [sys.executable, "-m", "mplint", "check", "--fix", "--verify", "--no-cache", "train.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "keras.StatelessScope(state_mapping=" in (tmp_path / "train.py").read_text()
    assert "backend jax" in result.stdout
    assert "pass  training-update" in result.stdout and "result: ok (every applicable check passed)" in result.stdout


@needs_jax
def test_backend_option_runs_backend_neutral_code_on_jax() -> None:
    code, report = run_verify(fixture("keras3_plain.py"), "--backend", "jax")
    assert code == 0, report
    assert (report["backend"], report["backend_choice"]) == ("jax", "--backend jax")
    assert statuses(report)["training-update"] == "pass"
    code, report = run_verify(fixture("keras3_plain.py"), "--backend", "jax", "--keras", "2")
    assert code == 2 and report["error"]["kind"] == "bad-options"


def test_auto_backend_follows_the_file_and_defaults_to_tensorflow(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras-home"))
    (tmp_path / ".git").mkdir()
    assert choose_backend("auto", str(MP206 / "torch_guide.py")).name == "torch"
    plain = tmp_path / "plain.py"
    plain.write_text("import keras\n")
    assert choose_backend("auto", str(plain)) == choose_backend("auto", str(plain))
    assert choose_backend("auto", str(plain)).name == "tensorflow"
    assert choose_backend("jax", str(plain)).reason == "--backend jax"


def test_a_missing_backend_is_a_clear_error(tmp_path: Path) -> None:
    """A --python without Keras (or without the backend) says what to install."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    result = verify(str(MP206 / "jax_guide.py"), VerifyOptions(python=str(tmp_path / "bare" / "bin" / "python")))
    assert result.exit_code == 2
    assert result.error["kind"] == "no-keras" and "mplint[jax]" in result.error["message"]


# -- training the way users do ----------------------------------------------------------------

@pytest.mark.tensorflow
def test_a_train_step_that_unpacks_x_y_verifies_through_fit() -> None:
    """`x, y = data` failed under train_on_batch ("too many values to unpack"); fit passes (x, y)."""
    code, report = run_verify(fixture("train_step_unpacks_data.py"))
    assert code == 0, report
    assert checks_of(report)["loss-scaling"]["measured"]["loss_scale"] == pytest.approx(32768.0)


@pytest.mark.tensorflow
def test_unpack_x_y_sample_weight_step_runs_and_its_missing_scaling_is_measured() -> None:
    code, report = run_verify(fixture("train_step_sample_weight.py"))
    assert code == 1 and report["error"] is None
    scaling = checks_of(report)["loss-scaling"]
    assert scaling["status"] == "fail" and scaling["measured"]["loss_scale"] == pytest.approx(1.0)


# -- training scripts --------------------------------------------------------------------------

@pytest.mark.tensorflow
def test_a_script_with_an_imported_builder_runs_its_own_loop() -> None:
    code, report = run_verify(fixture("script/train.py"))
    assert code == 0, report
    assert report["entry_point"] == "create_classifier() from model_lib"
    assert report["train_step"] == "train_step"
    assert checks_of(report)["loss-scaling"]["detail"].startswith("train_step(model, images=x, labels=y): loss scale 32768")


@pytest.mark.tensorflow
def test_a_named_step_gets_the_model_the_optimizer_and_the_batch() -> None:
    code, report = run_verify(fixture("script/train_unscaled.py"), "--train-step", "fit_batch")
    assert code == 1 and report["error"] is None
    scaling = checks_of(report)["loss-scaling"]
    assert scaling["status"] == "fail"
    assert scaling["detail"].startswith("fit_batch(model, opt, data=(x, y)): the tape differentiates the unscaled loss")


def test_entry_points_of_scripts_are_found_without_running_them(tmp_path: Path) -> None:
    cases = {
        "from models import build_model\n": "build_model",
        "from models import create_classifier\n\ndef train_step(model, x, y):\n    pass\n": "train_step",
        "from models import create_classifier\n": None,
    }
    for index, (source, expected) in enumerate(cases.items()):
        path = tmp_path / f"script{index}.py"
        path.write_text(source)
        assert entry_point(str(path)) == expected, source


# -- torch (optional) -----------------------------------------------------------------------------

@needs_torch
def test_torch_guide_and_script_on_torch() -> None:
    code, report = run_verify(mp206("torch_guide.py"))
    assert code == 1 and report["backend"] == "torch"
    assert statuses(report)["training-update"] == "fail"
    code, report = run_verify(mp206("torch_guide.fixed.py"))
    assert code == 0, report
    code, report = run_verify(fixture("torch_script.py"))
    assert code == 1
    update = checks_of(report)["training-update"]
    assert update["measured"]["update_ratio"] == pytest.approx(1 / 32768, rel=0.05)
    assert update["detail"].startswith("one train_step(x, y) step's update")


# -- numerical parity on padded inputs (issue #27) -----------------------------------------

@pytest.mark.tensorflow
@pytest.mark.parametrize("backend", [pytest.param("jax", marks=needs_jax), "tensorflow"])
def test_a_mask_fill_that_overflows_float16_fails_parity_and_names_the_layer(backend: str) -> None:
    """keras-hub's T5 shape: a -1e9 mask fill gives NaN for a fully padded sequence under
    mixed_float16. Verify's inputs carry padding (the last row fully padded), so parity
    fails and names the attention layer; with MP501's advice applied (-65504.0) it passes."""
    code, report = run_verify(fixture("masked_attention.py"), "--backend", backend)
    checks = checks_of(report)
    assert code == 1 and report["backend"] == backend
    assert "padding mask" in " ".join(checks["finite-forward"]["measured"].get("inputs", [])) or \
        "padding mask" in checks["finite-forward"]["detail"]
    assert checks["finite-forward"]["status"] == "fail" and "'attention' (MaskedSelfAttention" in checks["finite-forward"]["detail"]
    agreement = checks["float32-agreement"]
    assert agreement["status"] == "fail"
    assert agreement["measured"]["first_divergent_layer"]["class"] == "MaskedSelfAttention"
    assert "non-finite under mixed_float16, finite in float32" in agreement["detail"]
    code, report = run_verify(fixture("masked_attention_fixed.py"), "--backend", backend)
    fixed = checks_of(report)
    assert (fixed["finite-forward"]["status"], fixed["float32-agreement"]["status"]) == ("pass", "pass"), report
    assert code == 0 and report["verdict"] == "ok"


def test_mask_inputs_get_padded_rows_and_one_fully_padded_row() -> None:
    from mplint.verify.probe.data import is_mask_input, padding_mask

    assert [is_mask_input(n) for n in ("padding_mask", "encoder_padding_mask_1", "attention_mask", "token_ids",
                                       "decoder_token_ids")] == [True, True, True, False, False]
    mask = padding_mask([4, 6])
    assert mask[0].all() and 0 < mask[1].sum() < 6 and mask[-1].sum() == 0
    assert all(mask[i].sum() >= mask[i + 1].sum() for i in range(3))


@pytest.mark.tensorflow
def test_inputs_file_replaces_the_synthetic_batch(tmp_path: Path) -> None:
    """--inputs FILE.npz: a real batch. Without a fully padded row the -1e9 fill stays
    finite (softmax subtracts the row's max); with one it is NaN; a missing name exits 2."""
    import numpy as np

    ids = np.random.default_rng(0).integers(1, 64, (4, 10)).astype("int32")
    mask = np.ones((4, 10), "int32")
    mask[1, 7:] = 0
    np.savez(tmp_path / "real.npz", token_ids=ids, padding_mask=mask)
    mask[3, :] = 0
    np.savez(tmp_path / "padded.npz", token_ids=ids, padding_mask=mask)
    np.savez(tmp_path / "wrong.npz", ids=ids)
    _, report = run_verify(fixture("masked_attention.py"), "--backend", "tensorflow", "--inputs", str(tmp_path / "real.npz"))
    finite = checks_of(report)["finite-forward"]
    assert finite["status"] == "pass" and "the --inputs batch" in finite["detail"]
    assert finite["measured"]["inputs"][0].startswith("padding_mask: int32(4, 10) from ")
    _, report = run_verify(fixture("masked_attention.py"), "--backend", "tensorflow", "--inputs", str(tmp_path / "padded.npz"))
    assert checks_of(report)["finite-forward"]["status"] == "fail"
    code, report = run_verify(fixture("masked_attention.py"), "--backend", "tensorflow", "--inputs", str(tmp_path / "wrong.npz"))
    assert code == 2 and report["error"]["kind"] == "bad-inputs" and "no array named" in report["error"]["message"]
