"""Checking stdin (`mplint check -`, `--stdin-filename`), through the installed `mplint`."""

from __future__ import annotations

import json

import nbformat
from nbformat import v4

from tests.conftest import write
from tests.test_cli_flags import ALL_FIXED, MODEL, SAFE_FIXED

# MP103 (in MODEL too): an extended-tier rule, reported with --extended.
POLICY_FLOAT16 = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'


def test_dash_reads_stdin_and_reports_it_as_dash(mplint_exe, tmp_path):
    result = mplint_exe(["check", "-n", "--extended", "-"], cwd=tmp_path, stdin=MODEL)
    assert result.exit_code == 1
    assert result.stdout.startswith("-:5:5: MP103 ")
    assert "-:6:5: MP101 [*] " in result.stdout
    assert not list(tmp_path.iterdir())  # nothing written, no cache


def test_default_command_reads_stdin_too(mplint_exe, tmp_path):
    result = mplint_exe(["-n", "--extended", "--output-format", "json", "-"], cwd=tmp_path, stdin=MODEL)
    assert [f["filename"] for f in json.loads(result.stdout)] == ["-", "-"]


def test_stdin_filename_names_the_file_and_uses_its_configuration(mplint_exe, tmp_path):
    write(tmp_path / "pkg" / "mplint.toml", 'ignore = ["MP103"]\n\n[per-file-ignores]\n"tests/**" = ["MP1"]\n')
    (tmp_path / "pkg" / "tests").mkdir()
    named = mplint_exe(["check", "-n", "--extended", "--stdin-filename", "pkg/model.py"], cwd=tmp_path, stdin=MODEL)
    assert named.exit_code == 1
    assert named.stdout.startswith("pkg/model.py:6:5: MP101 [*] ") and "MP103" not in named.stdout
    ignored = mplint_exe(["check", "-n", "--extended", "--stdin-filename", "pkg/tests/test_model.py"], cwd=tmp_path,
                         stdin=MODEL)
    assert ignored.exit_code == 0 and ignored.stdout == "All checks passed!\n"
    # Outside pkg/ that configuration does not apply.
    elsewhere = mplint_exe(["check", "-n", "--extended", "--stdin-filename", "other/model.py"], cwd=tmp_path,
                           stdin=MODEL)
    assert "other/model.py:5:5: MP103" in elsewhere.stdout


def test_stdin_filename_decides_the_keras_target_from_that_project(mplint_exe, tmp_path):
    write(tmp_path / "old" / "requirements.txt", "tensorflow==2.12.0\n")
    write(tmp_path / "new" / "requirements.txt", "tensorflow==2.21.0\n")
    for folder, target in (("old", "keras2"), ("new", "keras3")):
        result = mplint_exe(["check", "-n", "-v", "--stdin-filename", f"{folder}/train.py"], cwd=tmp_path,
                            stdin=MODEL)
        assert f"{folder}/train.py: target {target} (" in result.stderr, result.stderr


def test_fix_writes_the_fixed_text_to_stdout_and_the_report_to_stderr(mplint_exe, tmp_path):
    write(tmp_path / "model.py", "on disk, never read\n")
    result = mplint_exe(["check", "-n", "--extended", "--fix", "--stdin-filename", "model.py"], cwd=tmp_path,
                        stdin=MODEL)
    assert result.exit_code == 1  # MP103 remains
    assert result.stdout == SAFE_FIXED
    assert "model.py:5:5: MP103" in result.stderr and "(1 fixed, 1 remaining)" in result.stderr
    assert (tmp_path / "model.py").read_text() == "on disk, never read\n"
    unsafe = mplint_exe(["check", "-n", "--extended", "--fix", "--unsafe-fixes", "-"], cwd=tmp_path, stdin=MODEL)
    assert unsafe.exit_code == 0 and unsafe.stdout == ALL_FIXED


def test_fix_with_nothing_to_fix_echoes_the_input(mplint_exe, tmp_path):
    text = "import os\nprint(os.sep)\n"
    result = mplint_exe(["check", "-n", "--fix", "-"], cwd=tmp_path, stdin=text)
    assert result.exit_code == 0 and result.stdout == text
    # MP103 (extended tier, --extended) has only an unsafe fix: --fix-only leaves the text alone.
    fix_only = mplint_exe(["check", "-n", "--extended", "--fix-only", "-"], cwd=tmp_path, stdin=POLICY_FLOAT16)
    assert fix_only.exit_code == 0 and fix_only.stdout == POLICY_FLOAT16


def test_fix_keeps_crlf_from_stdin(mplint_exe, tmp_path):
    crlf = SAFE_FIXED.replace("\n", "\r\n")
    import subprocess

    from tests.conftest import MPLINT_EXE

    proc = subprocess.run([str(MPLINT_EXE), "check", "-n", "--extended", "--fix", "--unsafe-fixes", "-"], cwd=tmp_path,
                          input=crlf.encode(), capture_output=True)
    assert proc.stdout == ALL_FIXED.replace("\n", "\r\n").encode()


def test_diff_of_stdin(mplint_exe, tmp_path):
    result = mplint_exe(["check", "-n", "--diff", "--stdin-filename", "src/model.py"], cwd=tmp_path, stdin=MODEL)
    assert result.exit_code == 1
    assert result.stdout.startswith("--- src/model.py\n+++ src/model.py\n")
    assert '+    tf.keras.layers.Activation("softmax", dtype="float32"),\n' in result.stdout


def test_force_exclude_applies_to_the_stdin_filename(mplint_exe, tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.mplint]\nexclude = ["generated/"]\n')
    result = mplint_exe(["check", "-n", "--force-exclude", "--stdin-filename", "generated/model.py"], cwd=tmp_path,
                        stdin=MODEL)
    assert result.exit_code == 0 and "MP101" not in result.stdout
    fixed = mplint_exe(["check", "-n", "--fix", "--force-exclude", "--stdin-filename", "generated/model.py"],
                       cwd=tmp_path, stdin=MODEL)
    assert fixed.exit_code == 0 and fixed.stdout == MODEL  # passed through unchanged
    without = mplint_exe(["check", "-n", "--stdin-filename", "generated/model.py"], cwd=tmp_path, stdin=MODEL)
    assert without.exit_code == 1  # like ruff: excludes apply to a named file only with --force-exclude


def test_stdin_filename_ignores_other_paths_with_a_warning(mplint_exe, tmp_path):
    write(tmp_path / "other.py", POLICY_FLOAT16)
    result = mplint_exe(["check", "-n", "--extended", "--stdin-filename", "model.py", "other.py"], cwd=tmp_path,
                        stdin=MODEL)
    assert "warning: Ignoring file other.py in favor of standard input." in result.stderr
    assert "other.py:" not in result.stdout and "model.py:6:5: MP101" in result.stdout


def test_notebook_from_stdin(mplint_exe, tmp_path):
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_markdown_cell("# Train"), v4.new_code_cell("%matplotlib inline\n" + MODEL)]
    text = nbformat.writes(notebook)
    result = mplint_exe(["check", "-n", "--stdin-filename", "train.ipynb"], cwd=tmp_path, stdin=text)
    assert "train.ipynb:cell 2:7:5: MP101 [*]" in result.stdout
    fixed = mplint_exe(["check", "-n", "--fix", "--stdin-filename", "train.ipynb"], cwd=tmp_path, stdin=text)
    cells = nbformat.reads(fixed.stdout, as_version=4).cells
    assert cells[1].source == "%matplotlib inline\n" + SAFE_FIXED


def test_syntax_error_on_stdin_is_a_finding(mplint_exe, tmp_path):
    broken = POLICY_FLOAT16 + "if x:\nprint(1)\n"
    result = mplint_exe(["check", "-n", "-"], cwd=tmp_path, stdin=broken)
    assert result.exit_code == 1 and "-:5:1: MP000 error: SyntaxError" in result.stdout
