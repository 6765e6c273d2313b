"""`mplint verify` and `mplint check --fix --verify`.

Tests marked `tensorflow` start one child interpreter each (TensorFlow import included,
~5-10 s here), on the fixtures in tests/verify_fixtures/. The others exercise the parent
side (TARGET parsing, Keras choice, the child's lifecycle through fake interpreters,
rendering, the measured-value analysis) without TensorFlow.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mplint.frontends.cli import main
from mplint.verify.report import render_json, render_text
from mplint.verify.runner import PROBE_DIR, VerifyOptions, VerifyResult, verify
from mplint.verify.target import TargetError, choose_keras, entry_point, parse_target

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "verify_fixtures"
CHECK_NAMES = [
    "output-dtype", "variable-dtype", "finite-forward", "float32-agreement",
    "loss-scaling", "gradient-underflow", "tensor-cores",
]


def run_verify(*args: str, cwd: Path = REPO) -> tuple[int, dict]:
    """`mplint verify ... --output-format json` through the real CLI; (exit code, report)."""
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = runner.invoke(main, ["verify", *args, "--output-format", "json"], catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, json.loads(result.stdout)


def checks_of(report: dict) -> dict:
    return {c["name"]: c for c in report["checks"]}


def statuses(report: dict) -> dict:
    return {c["name"]: c["status"] for c in report["checks"]}


def fixture(name: str) -> str:
    return str((FIXTURES / name).relative_to(REPO))


# -- the guide's model -----------------------------------------------------------------

@pytest.mark.tensorflow
def test_guide_incorrect_model_fails_output_dtype() -> None:
    code, report = run_verify(fixture("guide_incorrect.py"), "--keras", "3")
    assert code == 1
    assert report["ok"] is False and report["error"] is None
    assert report["policy"] == "mixed_float16" and report["keras"] == "3"
    assert report["entry_point"] == "build_model()"
    assert [c["name"] for c in report["checks"]] == CHECK_NAMES
    output = checks_of(report)["output-dtype"]
    assert output["status"] == "fail"
    assert "output 'predictions' is float16" in output["detail"]
    assert "layer 'predictions' (Dense" in output["detail"]
    assert "Activation('softmax', dtype='float32')" in output["detail"]
    assert output["measured"]["outputs"] == {"predictions": "float16"}


@pytest.mark.tensorflow
def test_guide_model_after_the_fix_passes_with_the_policy_the_code_sets() -> None:
    # --policy only applies when the code sets none: this file sets mixed_float16.
    code, report = run_verify(fixture("guide_fixed.py"), "--keras", "2", "--policy", "mixed_bfloat16")
    assert code == 0, report
    assert report["ok"] is True
    assert report["keras"] == "2"
    assert report["policy"] == "mixed_float16" and report["policy_source"] == "set by the code"
    assert statuses(report) == {name: "pass" for name in CHECK_NAMES}
    checks = checks_of(report)
    assert checks["output-dtype"]["measured"]["outputs"] == {"predictions": "float32"}
    assert checks["loss-scaling"]["measured"]["loss_scale"] == pytest.approx(32768.0)
    assert checks["loss-scaling"]["measured"]["gradient_relative_error"] < 0.1
    assert checks["float32-agreement"]["measured"]["outputs"]["predictions"]["relative_l2"] < 0.03
    layers = {entry["layer"]: entry for entry in checks["tensor-cores"]["measured"]["layers"]}
    assert layers["dense_logits"]["sizes"] == {"batch rows": 8, "inputs": 64, "units": 10}
    assert layers["dense_logits"]["flagged"] == []  # the number of classes is the task's


@pytest.mark.tensorflow
def test_multi_output_model_with_one_float16_output_fails() -> None:
    # A module target with an explicit callable.
    code, report = run_verify("tests.verify_fixtures.multi_output:make_model", "--keras", "3")
    assert code == 1
    output = checks_of(report)["output-dtype"]
    assert output["status"] == "fail"
    assert output["measured"]["outputs"] == {"classes": "float32", "score": "float16"}
    assert "output 'score' is float16, computed by layer 'score' (Dense" in output["detail"]
    assert "'classes'" not in output["detail"]
    assert report["entry_point"] == "make_model()"


# -- custom training loops -------------------------------------------------------------

@pytest.mark.tensorflow
def test_unscaled_custom_loop_fails_loss_scaling() -> None:
    code, report = run_verify(fixture("loop_unscaled.py"))
    assert code == 1
    assert report["keras"] == "3"  # the file uses Keras-3-only set_dtype_policy
    assert report["train_step"] == "train_step"
    scaling = checks_of(report)["loss-scaling"]
    assert scaling["status"] == "fail"
    assert scaling["measured"]["loss_scale"] == pytest.approx(1.0)
    assert scaling["measured"]["tape_target"] == pytest.approx(scaling["measured"]["loss"])
    assert "unscaled loss" in scaling["detail"] and "scale_loss" in scaling["detail"]
    assert statuses(report)["output-dtype"] == "pass"


@pytest.mark.tensorflow
def test_custom_loop_after_the_fix_passes_keras3() -> None:
    code, report = run_verify(fixture("loop_scaled.py"))
    assert code == 0, report
    assert report["keras"] == "3"
    assert statuses(report) == {name: "pass" for name in CHECK_NAMES}
    measured = checks_of(report)["loss-scaling"]["measured"]
    assert measured["loss_scale"] == pytest.approx(32768.0)
    assert measured["optimizer_loss_scale"] == pytest.approx(32768.0)
    assert measured["tape_target"] == pytest.approx(measured["loss"] * 32768.0, rel=1e-5)
    assert measured["gradient_ratio"] == pytest.approx(1.0, abs=0.05)


@pytest.mark.tensorflow
def test_correct_keras2_custom_loop_passes() -> None:
    code, report = run_verify(fixture("loop_keras2.py"))
    assert code == 0, report
    assert report["keras"] == "2"  # the file sets TF_USE_LEGACY_KERAS
    assert "TF_USE_LEGACY_KERAS" in report["keras_choice"]
    assert statuses(report) == {name: "pass" for name in CHECK_NAMES}
    measured = checks_of(report)["loss-scaling"]["measured"]
    assert measured["loss_scale"] == pytest.approx(32768.0)
    assert measured["gradient_relative_error"] < 0.1  # dropout is on in train_step


# -- fit-style models and numerics -----------------------------------------------------

@pytest.mark.tensorflow
def test_fit_step_that_unscales_twice_fails_loss_scaling() -> None:
    """Issue #27: a train_step driven by fit that divides the gradients by 32768 before
    `apply` (which unscales them again) fails, with advice that does not tell a
    LossScaleOptimizer to wrap itself in one; the correct step passes."""
    code, report = run_verify(fixture("fit_step_unscaled_twice.py"))
    scaling = checks_of(report)["loss-scaling"]
    assert (code, report["verdict"], scaling["status"]) == (1, "failed", "fail")
    assert "unscaled twice" in scaling["detail"] and scaling["measured"]["gradient_ratio"] < 1e-3
    assert "wrap the optimizer" not in scaling["detail"] and "do not divide them yourself" in scaling["detail"]
    code, report = run_verify(fixture("train_step_unpacks_data.py"))
    assert (code, report["verdict"], checks_of(report)["loss-scaling"]["status"]) == (0, "ok", "pass")
    assert report["summary"]["failed"] == 0 and report["summary"]["not_proved"] == 0



@pytest.mark.tensorflow
def test_fit_model_whose_model_policy_is_float32_fails_loss_scaling() -> None:
    code, report = run_verify(fixture("layer_policy_only.py"), "--keras", "2")
    assert code == 1
    assert report["policy"] == "mixed_float16"
    assert "global policy float32" in report["policy_source"]
    scaling = checks_of(report)["loss-scaling"]
    assert scaling["status"] == "fail"
    assert "not a LossScaleOptimizer" in scaling["detail"]
    assert "own dtype policy is float32" in scaling["detail"]


@pytest.mark.tensorflow
def test_float16_overflow_fails_finite_forward_and_agreement() -> None:
    code, report = run_verify(fixture("overflow.py"), "--keras", "3")
    assert code == 1
    checks = checks_of(report)
    assert checks["finite-forward"]["status"] == "fail"
    assert "layer 'amplify' (Lambda" in checks["finite-forward"]["detail"]
    assert checks["float32-agreement"]["status"] == "fail"
    assert checks["output-dtype"]["status"] == "pass"


@pytest.mark.tensorflow
def test_policy_option_applies_when_the_code_sets_none() -> None:
    code, report = run_verify(fixture("no_policy.py"), "--policy", "mixed_bfloat16", "--keras", "3")
    assert code == 0, report
    assert report["policy"] == "mixed_bfloat16" and report["policy_source"] == "--policy"
    assert report["entry_point"] == "get_model()"
    checks = checks_of(report)
    # A subclassed model: inputs from its build shape, outputs traced through its layers.
    assert checks["finite-forward"]["measured"]["inputs"] == ["input: float32(8, 16) normal(0, 1)"]
    assert checks["output-dtype"]["measured"]["outputs"] == {"output": "float32"}
    assert checks["loss-scaling"]["status"] == "n/a"
    assert "bfloat16" in checks["loss-scaling"]["detail"]
    assert checks["tensor-cores"]["status"] == "n/a"
    assert checks["float32-agreement"]["measured"]["tolerance"] == pytest.approx(0.1)
    assert checks["gradient-underflow"]["status"] == "pass"


# -- targets that cannot be verified ----------------------------------------------------

def test_missing_file_exits_2() -> None:
    code, report = run_verify("tests/verify_fixtures/does_not_exist.py:build_model")
    assert code == 2
    assert report["error"]["kind"] == "target-not-found"
    assert "does_not_exist.py" in report["error"]["message"]
    assert report["checks"] == []


@pytest.mark.tensorflow
def test_module_without_model_exits_2() -> None:
    code, report = run_verify(fixture("no_model.py"))
    assert code == 2
    assert report["error"]["kind"] == "no-model"
    assert "build_model()" in report["error"]["message"] and "TARGET:CALLABLE" in report["error"]["message"]


@pytest.mark.tensorflow
def test_import_error_shows_the_user_traceback() -> None:
    result = CliRunner().invoke(main, ["verify", str(FIXTURES / "import_error.py")])
    assert result.exit_code == 2
    text = result.output
    assert "error (import-error)" in text and "KeyError: 'layers'" in text
    assert 'import_error.py", line 13, in <module>' in text
    assert 'import_error.py", line 10, in read_config' in text
    assert "loading.py" not in text and "_mplint_verify_probe" not in text  # the verifier's own frames


def test_timeout_exits_2() -> None:
    code, report = run_verify(fixture("loops_forever.py"), "--timeout", "1")
    assert code == 2
    assert report["error"]["kind"] == "timeout"
    assert report["error"]["message"].startswith("timed out after 1 s while ")


def test_python_without_tensorflow_exits_2(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    python = tmp_path / "bare" / "bin" / "python"
    code, report = run_verify(fixture("guide_fixed.py"), "--python", str(python))
    assert code == 2
    assert report["error"]["kind"] == "no-tensorflow"
    assert str(python) in report["error"]["message"] and "TensorFlow" in report["error"]["message"]


@pytest.mark.tensorflow
def test_user_code_that_prints_and_exits_leaves_a_clear_report() -> None:
    code, report = run_verify(fixture("exits_early.py"))
    assert code == 2
    error = report["error"]
    assert error["kind"] == "child-died"
    assert "exited with code 3 while importing tests/verify_fixtures/exits_early.py" in error["message"]
    assert '{"event": "done"} line 1999' in report["output_tail"]  # the user's prints, not our channel
    assert "no network: mplint verify: network access is disabled while verifying (connect to ('192.0.2.1', 80))" \
        in report["output_tail"]
    assert "(lookup of 'example.com')" in report["output_tail"]


# -- check --fix --verify ----------------------------------------------------------------

PURE_FLOAT16_MODEL = '''import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("float16")


def build_model():
    inputs = tf.keras.Input(shape=(16,))
    x = tf.keras.layers.Dense(32, activation="relu")(inputs)
    x = tf.keras.layers.Dense(8)(x)
    outputs = tf.keras.layers.Activation("softmax", dtype="float32")(x)
    return tf.keras.Model(inputs, outputs)


def train(model, x, y):
    model.fit(x, y)
'''


@pytest.mark.tensorflow
def test_check_fix_verify_verifies_each_fixed_file_with_an_entry_point(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(PURE_FLOAT16_MODEL)  # MP103 rewrites the policy
    (tmp_path / "policy.py").write_text('import tensorflow as tf\n\ntf.keras.mixed_precision.set_global_policy("float16")\n'
                                        'tf.keras.Model().fit()\n')
    (tmp_path / "clean.py").write_text("import tensorflow as tf\n\n\ndef build_model():\n    return None\n")
    result = subprocess.run(
        # --extended: MP103, the finding fixed in both files, is an extended-tier rule.
        [sys.executable, "-m", "mplint", "check", "--extended", "--fix", "--unsafe-fixes", "--verify", "--no-cache", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'set_global_policy("mixed_float16")' in (tmp_path / "model.py").read_text()
    out = result.stdout
    assert "verify: policy.py: skipped (no model entry point" in out
    assert "mplint verify model.py (build_model())" in out
    assert "policy mixed_float16 (set by the code)" in out
    assert "result: ok (every applicable check passed)" in out
    assert "clean.py" not in out  # not fixed, so not verified


def test_check_verify_needs_fix() -> None:
    result = CliRunner().invoke(main, ["check", "--verify", str(FIXTURES)])
    assert result.exit_code == 2
    assert "--verify needs --fix" in result.output


# -- end to end with the rules that write the fixes -------------------------------------
# These pass once MP101 (float16 model output) and MP201 (unscaled custom loop) are merged.

def _fix_then_verify(tmp_path: Path, name: str) -> tuple[int, dict]:
    target = tmp_path / name
    shutil.copy(FIXTURES / name, target)
    fixed = subprocess.run(
        [sys.executable, "-m", "mplint", "check", "--fix", "--unsafe-fixes", "--no-cache", name],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert fixed.returncode in (0, 1), fixed.stderr
    assert target.read_text() != (FIXTURES / name).read_text(), "mplint --fix changed nothing:\n" + fixed.stdout
    return run_verify(name, cwd=tmp_path)


@pytest.mark.tensorflow
def test_guide_incorrect_model_passes_after_mplint_fix(tmp_path: Path) -> None:  # needs MP101
    code, report = _fix_then_verify(tmp_path, "guide_incorrect.py")
    assert statuses(report)["output-dtype"] == "pass"
    assert code == 0, report


@pytest.mark.tensorflow
def test_unscaled_loop_passes_after_mplint_fix(tmp_path: Path) -> None:  # needs MP201
    code, report = _fix_then_verify(tmp_path, "loop_unscaled.py")
    assert statuses(report)["loss-scaling"] == "pass"
    assert code == 0, report


# -- the parent side, without TensorFlow --------------------------------------------------

def test_parse_target_forms(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "models.py").write_text("")
    assert parse_target("train.py", str(tmp_path)).kind == "file"
    target = parse_target("train.py:make_net", str(tmp_path))
    assert (target.kind, target.path, target.attribute) == ("file", str(tmp_path / "train.py"), "make_net")
    target = parse_target("pkg.models:build", str(tmp_path))
    assert (target.kind, target.module, target.attribute) == ("module", "pkg.models", "build")
    assert target.path == str(tmp_path / "pkg" / "models.py")
    assert parse_target("other.mod:build", str(tmp_path)).path is None  # the child imports it
    with pytest.raises(TargetError) as missing:
        parse_target("nope/train.py", str(tmp_path))
    assert missing.value.kind == "target-not-found"
    with pytest.raises(TargetError):
        parse_target("pkg/", str(tmp_path))
    with pytest.raises(TargetError):
        parse_target("not a target!", str(tmp_path))


def test_entry_point_found_without_running_the_file(tmp_path: Path) -> None:
    cases = {
        "def build_model():\n    pass\n": "build_model",
        "def helper():\n    pass\n\ndef make_model():\n    pass\n": "make_model",
        "model = object()\n": "model",
        "model: object = None\n": "model",
        "def train():\n    model = 1\n": None,  # not module level
        "import os\nos._exit(1)\n": None,
        "def broken(:\n": None,
    }
    for index, (source, expected) in enumerate(cases.items()):
        path = tmp_path / f"case{index}.py"
        path.write_text(source)
        assert entry_point(str(path)) == expected, source


def test_keras_choice(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.py"
    legacy.write_text('import os\nos.environ["TF_USE_LEGACY_KERAS"] = "1"\nimport tensorflow as tf\n')
    keras3 = tmp_path / "k3.py"
    keras3.write_text("import keras\nkeras.config.set_dtype_policy('mixed_float16')\n")
    plain = tmp_path / "plain.py"
    plain.write_text("import tensorflow as tf\n")
    assert choose_keras("2", str(plain), False).legacy is True
    assert choose_keras("3", str(legacy), False).legacy is False
    assert choose_keras("auto", str(legacy), False).legacy is True
    assert choose_keras("auto", str(keras3), True).legacy is False
    assert choose_keras("auto", None, False).legacy is None
    # Nothing in the file or project decides: another interpreter's TensorFlow does.
    if not any((p / n).exists() for p in [tmp_path, *tmp_path.parents] for n in ("pyproject.toml", "setup.py")):
        assert choose_keras("auto", str(plain), True).legacy is None


def _fake_python(tmp_path: Path, script: str) -> str:
    path = tmp_path / "fake_python"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_child_that_hangs_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    python = _fake_python(tmp_path, f'sleep 300 &\necho $! > "{pid_file}"\nwhile true; do sleep 1; done\n')
    started = time.monotonic()
    result = verify(str(FIXTURES / "guide_fixed.py"), VerifyOptions(python=python, timeout=1))
    assert time.monotonic() - started < 15
    assert result.exit_code == 2 and result.error["kind"] == "timeout"
    pid = int(pid_file.read_text())
    for _ in range(50):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                alive = handle.read().split()[2] != "Z"
        except FileNotFoundError:
            alive = False
        if not alive:
            break
        time.sleep(0.1)
    assert not alive, "the child's own child survived the timeout"


def test_child_that_dies_before_reporting(tmp_path: Path) -> None:
    python = _fake_python(tmp_path, "echo something went wrong\nexit 5\n")
    result = verify(str(FIXTURES / "guide_fixed.py"), VerifyOptions(python=python))
    assert result.exit_code == 2
    assert result.error["kind"] == "child-died"
    assert "exited with code 5 before the verifier started" in result.error["message"]
    assert "something went wrong" in render_text(result)


def test_partial_report_is_kept_when_the_child_dies(tmp_path: Path) -> None:
    # argv: -c BOOTSTRAP PROBE_DIR REQUEST EVENTS
    events = [
        {"event": "stage", "stage": "starting"},
        {"event": "check", "name": "output-dtype", "status": "pass", "detail": "fine", "measured": {}},
        {"event": "stage", "stage": "running train_step(x, y) on synthetic batches"},
    ]
    lines = "".join(f"echo '{json.dumps(e)}' >> \"$5\"\n" for e in events)
    result = verify(str(FIXTURES / "guide_fixed.py"), VerifyOptions(python=_fake_python(tmp_path, lines + "kill -9 $$\n")))
    assert result.exit_code == 2
    assert "was killed by SIGKILL while running train_step(x, y)" in result.error["message"]
    assert [c["name"] for c in result.checks] == ["output-dtype"]


def test_request_and_environment_given_to_the_child(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.mplint]\ntensor-core-multiple = 128\n")
    (project / "train.py").write_text("def make_model():\n    pass\n")
    seen = tmp_path / "seen"
    python = _fake_python(tmp_path, f'cp "$4" "{seen}.json"\nenv > "{seen}.env"\nexit 0\n')
    options = VerifyOptions(python=python, keras="2", policy="mixed_bfloat16", steps=5, train_step="step", batch_size=16)
    result = verify("train.py:make_model", options, cwd=str(project))
    assert result.error["kind"] == "child-died"  # the fake never reports
    request = json.loads((tmp_path / "seen.json").read_text())
    assert request == {
        "display": "train.py:make_model", "kind": "file", "path": str(project / "train.py"), "module": None,
        "attribute": "make_model", "policy": "mixed_bfloat16", "steps": 5, "train_step": "step", "batch_size": 16, "inputs_file": None,
        "tensor_core_multiple": 128,
    }
    env = (tmp_path / "seen.env").read_text().splitlines()
    assert "TF_USE_LEGACY_KERAS=1" in env and "PYTHONDONTWRITEBYTECODE=1" in env


def test_interpreter_that_does_not_exist(tmp_path: Path) -> None:
    result = verify(str(FIXTURES / "guide_fixed.py"), VerifyOptions(python=str(tmp_path / "missing-python")))
    assert result.exit_code == 2 and result.error["kind"] == "bad-python"


def _check(name: str, status: str, detail: str = "d") -> dict:
    return {"name": name, "status": status, "detail": detail, "measured": {}}


def test_report_json_shape_and_exit_codes() -> None:
    info = {"policy": "mixed_float16", "keras": "3"}
    passing = VerifyResult("m.py", checks=[_check("output-dtype", "pass"), _check("loss-scaling", "pass"),
                                           _check("tensor-cores", "n/a")], info=info)
    failing = VerifyResult("m.py", checks=passing.checks + [_check("variable-dtype", "fail", "float16 kernel")],
                           info=info)
    broken = VerifyResult("m.py", checks=passing.checks, error={"kind": "timeout", "message": "timed out"})
    unproved = VerifyResult("m.py", checks=[_check("output-dtype", "pass"),
                                            _check("loss-scaling", "skip", "no float32 reference gradient")], info=info)
    assert (passing.exit_code, failing.exit_code, broken.exit_code, unproved.exit_code) == (0, 1, 2, 3)
    assert [r.verdict for r in (passing, failing, broken, unproved)] == ["ok", "failed", "error", "not-proved"]
    data = json.loads(render_json(failing))
    assert {"target", "policy", "keras", "checks", "ok", "verdict", "summary"} <= set(data)
    assert data["ok"] is False and data["policy"] == "mixed_float16" and data["keras"] == "3"
    assert data["summary"] == {"proved": 2, "failed": 1, "not_proved": 0, "skipped": 0, "not_applicable": 1,
                               "key_not_proved": []}
    assert "FAIL  variable-dtype" in render_text(failing)
    assert render_text(failing).endswith("result: 1 of 4 checks failed: variable-dtype (exit 1)\n")
    assert "result: could not verify (exit 2)" in render_text(broken)
    assert "summary: 2 proved, 0 failed, 0 not proved, 1 not applicable" in render_text(passing)
    assert render_text(passing).endswith("result: ok (every applicable check passed)\n")


def test_a_skipped_key_check_is_not_proved_never_ok() -> None:
    """A check that could not be made is a skip, and a skipped key check makes the result
    "not proved" (exit 3): a verifier must never show a check it did not make as passed."""
    info = {"policy": "mixed_float16", "keras": "3"}
    unproved = VerifyResult("m.py", checks=[_check("output-dtype", "pass"),
                                            _check("loss-scaling", "skip", "no float32 reference gradient")], info=info)
    assert not unproved.ok and unproved.verdict == "not-proved" and unproved.exit_code == 3
    text = render_text(unproved)
    assert "  skip  loss-scaling" in text and "no float32 reference gradient" in text
    assert text.endswith("result: not proved: loss-scaling could not be made (see above) (exit 3)\n")
    data = json.loads(render_json(unproved))
    assert data["verdict"] == "not-proved" and data["ok"] is False
    assert data["summary"]["key_not_proved"] == ["loss-scaling"] and data["summary"]["not_proved"] == 1
    # A skip of a check that is not key is reported but does not withhold "ok".
    side = VerifyResult("m.py", checks=[_check("output-dtype", "pass"), _check("gradient-underflow", "skip")],
                        info=info)
    assert side.verdict == "ok" and (side.summary()["not_proved"], side.summary()["skipped"]) == (0, 1)
    assert "summary: 1 proved, 0 failed, 0 not proved, 1 skipped (not key), 0 not applicable" in render_text(side)
    # Not applicable is not a skip: bfloat16 needs no loss scaling.
    bfloat16 = VerifyResult("m.py", checks=[_check("output-dtype", "pass"), _check("loss-scaling", "n/a")], info=info)
    assert bfloat16.verdict == "ok"
    # No check at all proves nothing.
    assert VerifyResult("m.py", checks=[], info=info).verdict == "not-proved"


def test_worst_exit_code_over_several_files() -> None:
    from mplint.verify.runner import worst_exit_code

    assert worst_exit_code([0, 3, 1]) == 1
    assert worst_exit_code([0, 3]) == 3
    assert worst_exit_code([3, 1, 2]) == 2
    assert worst_exit_code([]) == 0


def test_probe_depends_only_on_stdlib_tensorflow_and_numpy() -> None:
    # ... or the Keras 3 backend it runs on (JAX or torch, without TensorFlow)
    allowed = set(sys.stdlib_module_names) | {"tensorflow", "numpy", "keras", "tf_keras", "jax", "torch"}
    for path in Path(PROBE_DIR).glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_probe_runs_as_a_module_too() -> None:
    result = subprocess.run([sys.executable, "-m", "mplint.verify.probe"], capture_output=True, text=True)
    assert result.returncode == 2 and "usage: python -m mplint.verify.probe REQUEST.json EVENTS.jsonl" in result.stderr


def test_cli_and_parent_side_never_import_tensorflow() -> None:
    code = (
        "import sys, mplint.frontends.cli, mplint.verify.runner, mplint.verify.report, mplint.verify.target\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'tensorflow', 'keras', 'tf_keras', 'numpy', 'libcst'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- the measured-value analysis (numpy only) ---------------------------------------------

def _observation(loss, scale_applied, received_factor, optimizer_scale=32768.0, zero_first=False):
    np = pytest.importorskip("numpy")
    from mplint.verify.probe.training import StepObservation

    true = {1: np.array([0.5, -0.25, 1e-3]), 2: np.array([[2.0, 0.0]])}
    received = {k: v * received_factor for k, v in true.items()}
    if zero_first:
        received[1] = received[1].copy()
        received[1][2] = 0.0
    return StepObservation(
        loss=loss, target=loss * scale_applied, tape_grads={k: v * scale_applied for k, v in true.items()},
        applied=received, variables={}, optimizer_scale=optimizer_scale,
    )


def _reference():
    return _observation(2.0, 1.0, 1.0, optimizer_scale=None)


def test_loss_scaling_analysis_from_values() -> None:
    from mplint.verify.probe.scaling import check_gradient_underflow, check_loss_scaling_custom

    def status(observation, policy="mixed_float16"):
        return check_loss_scaling_custom(policy, observation, _reference(), 3, "train_step(x, y)")

    correct = status(_observation(2.0, 32768.0, 1.0))
    assert correct.status == "pass" and correct.measured["loss_scale"] == 32768.0
    never_scaled = status(_observation(2.0, 1.0, 1.0, optimizer_scale=None))
    assert never_scaled.status == "fail" and "unscaled loss" in never_scaled.detail
    still_scaled = status(_observation(2.0, 32768.0, 32768.0))
    assert still_scaled.status == "fail" and "still scaled" in still_scaled.detail
    unscaled_twice = status(_observation(2.0, 32768.0, 1 / 32768.0))
    assert unscaled_twice.status == "fail" and "unscaled twice, or never scaled" in unscaled_twice.detail
    overflow = _observation(2.0, 32768.0, 1.0)
    overflow.target = float("inf")
    assert status(overflow).status == "fail" and "overflows" in status(overflow).detail
    no_loss = _observation(2.0, 32768.0, 1.0)
    no_loss.loss = None
    assert status(no_loss).status == "skip" and "returned no scalar loss" in status(no_loss).detail
    assert status(_observation(2.0, 1.0, 1.0), policy="mixed_bfloat16").status == "n/a"

    lost = check_gradient_underflow("mixed_float16", _observation(2.0, 1.0, 1.0, zero_first=True), _reference())
    assert lost.status == "fail" and lost.measured["underflowed"] == 1 and lost.measured["entries"] == 5
    kept = check_gradient_underflow("mixed_float16", _observation(2.0, 32768.0, 1.0), _reference())
    assert kept.status == "pass" and kept.measured["fraction"] == 0.0
