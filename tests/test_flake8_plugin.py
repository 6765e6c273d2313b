"""The flake8 plugin, through the real flake8 in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MODEL = (
    "import tensorflow as tf\n"
    "\n"
    "tf.keras.mixed_precision.set_global_policy('float16')\n"
    "layer = tf.keras.layers.Dense(64, dtype='float16')  # noqa: MP103\n"
    "other = tf.keras.layers.Dense(64, dtype='bfloat16')\n"
    "other.fit()\n"
)
# MP103, MODEL's finding, is an extended-tier rule: the plugin takes no mplint flags, so
# the tests that use MODEL turn that tier on in mplint's configuration (`extended = true`).
EXTENDED = "extended = true\n"
# With no configuration at all, the default tier: MP101 (a float16 model output).
DEFAULT_TIER_MODEL = (
    "import tensorflow as tf\n"
    "\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    "first = tf.keras.Sequential([tf.keras.layers.Dense(8)])  # noqa: MP101\n"
    "model = tf.keras.Sequential([tf.keras.layers.Dense(8)])\n"
    "head = tf.keras.Sequential([tf.keras.layers.Dense(8, activation='relu')])\n"
    "first.fit()\n"
    "model.fit()\n"
    "head.fit()\n"
)


def flake8(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flake8", "--isolated", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_flake8_reports_mplint_findings_without_configuration(tmp_path):
    (tmp_path / "model.py").write_text(DEFAULT_TIER_MODEL, encoding="utf-8")
    done = flake8("model.py", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        "model.py:5:30: MP101 the output of Sequential model `model` is float16 "
        "(last layer `Dense` under the mixed policy): model outputs must be float32",
        "model.py:6:29: MP101 the output of Sequential model `head` is float16 "
        "(last layer `Dense` under the mixed policy): model outputs must be float32",
    ]
    version = flake8("--version", cwd=tmp_path)
    assert "mplint: " in version.stdout


def test_flake8_select_ignore_and_stdin(tmp_path):
    (tmp_path / "mplint.toml").write_text(EXTENDED, encoding="utf-8")  # stdin: the configuration of the cwd
    done = flake8("--extend-ignore", "MP103", "-", cwd=tmp_path, stdin=MODEL)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    done = flake8("--select", "MP", "-", cwd=tmp_path, stdin=MODEL)
    assert [line.split(": ")[0] for line in done.stdout.splitlines()] == ["stdin:3:1", "stdin:5:9"]
    assert done.stdout.splitlines() == [
        "stdin:3:1: MP103 global policy 'float16' keeps the variables in float16; "
        "use 'mixed_float16' (float32 variables, float16 compute) (extended suite)",
        "stdin:5:9: MP103 layer dtype 'bfloat16' keeps the variables in bfloat16; "
        "use 'mixed_bfloat16' (float32 variables, bfloat16 compute) (extended suite)",
    ]
    done = flake8("--select", "E", "-", cwd=tmp_path, stdin=MODEL)
    assert "MP1" not in done.stdout


def test_flake8_honours_mplint_configuration(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mplint]\nextended = true\nper-file-ignores = { "legacy/*" = ["MP103"] }\n', encoding="utf-8")
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "new.py").write_text(MODEL, encoding="utf-8")
    done = flake8("--select", "MP", ".", cwd=tmp_path)
    files = sorted({line.split(":")[0] for line in done.stdout.splitlines()})
    assert files == ["./new.py"], done.stdout


def test_flake8_clean_file_and_config_error(tmp_path):
    (tmp_path / "ok.py").write_text(MODEL.replace("'float16'", "'mixed_float16'")
                                    .replace("'bfloat16'", "'mixed_bfloat16'"), encoding="utf-8")
    done = flake8("--select", "MP", "ok.py", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == ""
    (tmp_path / "mplint.toml").write_text("target = 'keras4'\n", encoding="utf-8")
    done = flake8("--select", "MP", "ok.py", cwd=tmp_path)
    assert done.stdout.startswith("ok.py:1:1: MP000 mplint configuration error: ")
    assert "target" in done.stdout
