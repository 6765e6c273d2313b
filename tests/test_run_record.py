"""The run record (mplint.inputs.run_record): a plain check whose inputs are all unchanged
answers from the last run's record, and any change to an input it read (a checked file,
a module of its project, a folder's files, a pins file, a config file above the tree, an
environment variable) makes it check again.

Each run is a process of its own (a record is only written by a process that read every
input itself). Files are dated in the past: a record is never written while an input is
younger than the filesystem's time resolution.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.conftest import write

POLICY = "import keras\n\nkeras.mixed_precision.set_global_policy('mixed_float16')\n"
MODEL = """import keras

from train import POLICY_SET


def build():
    inputs = keras.Input((8,))
    return keras.Model(inputs, keras.layers.Dense(10)(inputs))


build().compile(loss="mse")
"""
MARKER = "RECORDED ANSWER"


def _age(root: Path) -> None:
    """Date every file and folder an hour back."""
    past = time.time() - 3600
    for folder, names, files in os.walk(root):
        for name in files + names:
            os.utime(os.path.join(folder, name), (past, past))
    os.utime(root, (past, past))


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root / "pyproject.toml", "[project]\nname = 'p'\nversion = '0'\n")
    write(root / "train.py", POLICY + "POLICY_SET = True\n")
    write(root / "model.py", MODEL)
    write(root / "setup_notes.md", "nothing here\n")
    return root


def _records(root: Path) -> list[Path]:
    return list((root / ".mplint_cache").glob("*/runs/*.json"))


def _mark_record(root: Path) -> None:
    """Change the recorded messages, so an answer from the record shows."""
    (path,) = _records(root)
    record = json.loads(path.read_text())
    for _, finding in record["findings"]:
        finding["message"] = MARKER
    path.write_text(json.dumps(record))


def _check(mplint_process, root: Path, *args: str, env: dict | None = None) -> list[str]:
    result = mplint_process(["check", "--output-format", "json", *args, "."], root,
                            env={"MPLINT_NO_SERVER": "1", **(env or {})})
    assert result.exit_code in (0, 1), result.stderr
    return [f"{f['filename']} {f['code']} {f['message']}" for f in json.loads(result.stdout)]


@pytest.fixture
def recorded(mplint_process, tmp_path):
    """A project checked once with every input old enough: its run record holds the
    answer, marked so that a later answer from it shows."""
    root = _project(tmp_path)
    _age(root)
    first = _check(mplint_process, root)
    assert any(" MP101 " in line for line in first), first
    assert len(_records(root)) == 1
    _mark_record(root)
    return root, first


def test_nothing_changed_answers_from_the_record(mplint_process, recorded):
    root, first = recorded
    again = _check(mplint_process, root)
    assert again and all(line.endswith(MARKER) for line in again)
    assert [l.split(" ")[:2] for l in again] == [l.split(" ")[:2] for l in first]


@pytest.mark.parametrize("change", [
    "edit the checked file",
    "edit a module the file imports",
    "add a file to a folder",
    "pin the Keras of the project",
    "add a config file above the project",
])
def test_a_changed_input_checks_again(mplint_process, recorded, change):
    root, first = recorded
    if change == "edit the checked file":
        (root / "model.py").write_text(MODEL + "\nEXTRA = 1\n")
    elif change == "edit a module the file imports":
        (root / "train.py").write_text("POLICY_SET = False\n")
    elif change == "add a file to a folder":
        write(root / "extra.py", POLICY + "\nimport keras\nkeras.Model(keras.Input((4,)), keras.layers.Dense(3)(keras.Input((4,))))\n")
    elif change == "pin the Keras of the project":
        write(root / "requirements.txt", "tensorflow==2.15.0\n")
    else:
        write(root.parent / "mplint.toml", "select = ['MP3']\n")
    again = _check(mplint_process, root)
    assert not any(line.endswith(MARKER) for line in again), change
    if change == "edit a module the file imports":
        assert not any(" MP101 " in line for line in again), "train.py no longer sets the policy"


def test_an_environment_variable_mplint_reads_checks_again(mplint_process, recorded):
    root, _ = recorded
    again = _check(mplint_process, root, env={"KERAS_BACKEND": "jax"})
    assert not any(line.endswith(MARKER) for line in again)


def test_other_options_check_again(mplint_process, recorded):
    root, _ = recorded
    again = _check(mplint_process, root, "--select", "MP1")
    assert again and not any(line.endswith(MARKER) for line in again)


def test_no_record_while_an_input_is_recent(mplint_process, tmp_path):
    root = _project(tmp_path)  # just written: within the time resolution of the run
    _check(mplint_process, root)
    assert not _records(root)


@pytest.mark.parametrize("args", [["--no-cache"], ["--diff"], ["--verbose"], ["--fix"]])
def test_only_a_plain_check_uses_or_writes_records(mplint_process, recorded, args):
    root, _ = recorded
    result = mplint_process(["check", "--output-format", "concise", *args, "."], root, env={"MPLINT_NO_SERVER": "1"})
    assert result.exit_code in (0, 1), result.stderr
    assert MARKER not in result.stdout + result.stderr, args
    if args != ["--diff"]:
        assert "MP101" in result.stdout + result.stderr, args


def test_a_process_that_checked_before_writes_no_record(tmp_path, monkeypatch):
    """In one process, a second run finds what the first memoised (project roots, pins)
    without reading it: it may not write a record, which would lack those inputs."""
    from mplint.engine.runner import RunOptions, run
    from mplint.inputs import run_record
    from mplint.inputs.config import ConfigResolver

    root = _project(tmp_path)
    _age(root)
    monkeypatch.chdir(root)
    monkeypatch.setattr(run_record, "_clean", False)
    run(["."], ConfigResolver(), RunOptions())
    assert not _records(root)


def test_the_folder_keeps_the_most_recent_records(tmp_path, monkeypatch):
    from mplint.inputs import run_record

    monkeypatch.setattr(run_record, "_clean", True)
    for n in range(run_record.RECORDS_KEPT + 3):
        assert run_record.save(str(tmp_path), f"key {n}", run_record.Inputs(), {"files": n}) is None
    kept = _records(tmp_path)
    assert len(kept) == run_record.RECORDS_KEPT
    assert run_record.load(str(tmp_path), f"key {run_record.RECORDS_KEPT + 2}")["files"] == run_record.RECORDS_KEPT + 2
    assert run_record.load(str(tmp_path), "another key") is None
