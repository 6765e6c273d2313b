"""A Keras 2 file whose project names no TensorFlow ran on the TensorFlow of the day its
repository's code last changed (git; documentation edits do not count): the experimental mixed-precision API is the only one of a
project last committed in July 2020, and only deprecated in one from 2021; a project
still maintained runs its old files on today's TensorFlow."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from mplint.facts.file_history import last_change, newest_tensorflow_on
from mplint.facts.target import forget_project_files
from tests.conftest import write

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

EXPERIMENTAL = (
    "import tensorflow as tf\n"
    "from tensorflow.keras.mixed_precision import experimental as mixed_precision\n"
    "mixed_precision.set_policy('mixed_float16')\n"
)


def _git(folder, *arguments: str, day: str | None = None) -> None:
    environment = dict(os.environ, GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@example.com", GIT_COMMITTER_NAME="a",
                       GIT_COMMITTER_EMAIL="a@example.com")
    if day is not None:
        environment.update(GIT_AUTHOR_DATE=f"{day}T12:00:00+0000", GIT_COMMITTER_DATE=f"{day}T12:00:00+0000")
    subprocess.run(["git", *arguments], cwd=folder, env=environment, check=True, capture_output=True)


def _committed(folder, files: dict[str, str], day: str) -> None:
    if not (folder / ".git").exists():
        _git(folder, "init", "-q")
    for name, text in files.items():
        write(folder / name, text)
        _git(folder, "add", name)
    _git(folder, "commit", "-q", "-m", "change", day=day)


def _mp401(cli, folder, *extra: str) -> list[dict]:
    result = cli(["--no-cache", "--output-format", "json", "--select", "MP401", *extra, "train.py"], cwd=folder)
    return json.loads(result.stdout)


@pytest.mark.parametrize("day, newest", [
    ("2019-09-29", None), ("2019-09-30", (2, 0)), ("2020-07-26", (2, 2)), ("2020-07-27", (2, 3)),
    ("2021-03-01", (2, 4)), ("2024-03-08", (2, 16)), ("2026-01-01", (2, 16)),
])
def test_a_day_gives_the_newest_tensorflow_released_by_then(day, newest):
    assert newest_tensorflow_on(day) == newest


def test_a_project_last_committed_before_tf_2_4_gets_infos_without_a_fix(cli, tmp_path):
    _committed(tmp_path, {"train.py": EXPERIMENTAL}, "2020-07-18")
    findings = _mp401(cli, tmp_path)
    assert findings and {f["severity"] for f in findings} == {"info"}
    assert all(f["fix"] is None for f in findings)
    assert any("the only mixed-precision API of this project's TensorFlow (< 2.4)" in f["message"] for f in findings)
    target = [p for f in findings for p in f["premises"] if p["fact"] == "keras-target"]
    assert target and all(p["status"] == "inferred" and "2020-07-18" in p["evidence"] for p in target)
    assert all(f["tier"] == "default" for f in findings)


def test_a_project_last_committed_in_the_tf_2_4_to_2_8_years_gets_infos_naming_the_bound_with_an_unsafe_fix(
        cli, tmp_path):
    """The date bounds the TensorFlow from above only: the code may have been written for
    TF 2.2, where the experimental API is the only one and the stable API the fix writes
    does not exist. The message names the bound, not a version, nor a deprecation; the fix
    is unsafe and says what it needs."""
    _committed(tmp_path, {"train.py": EXPERIMENTAL}, "2021-03-01")
    findings = _mp401(cli, tmp_path)
    assert findings and {f["severity"] for f in findings} == {"info"}
    assert all("this project's TensorFlow, 2.4 or older by its last commit, still has it" in f["message"]
               for f in findings)
    assert not any("deprecated" in f["message"] for f in findings)
    fixed = [f for f in findings if f["fix"] is not None]
    assert fixed and all(f["fix"]["applicability"] == "unsafe" and "needs TF 2.4" in f["detail"] for f in fixed)
    pinned = _mp401(cli, tmp_path, "--target", "keras2")  # the user says it runs now: migrate it
    assert {f["severity"] for f in pinned} == {"error"} and any(f["fix"] for f in pinned)


def test_an_old_file_of_a_project_maintained_since_runs_on_its_newer_tensorflow(cli, tmp_path):
    _committed(tmp_path, {"train.py": EXPERIMENTAL}, "2020-07-18")
    _committed(tmp_path, {"utils.py": "x = 1\n"}, "2021-06-01")  # maintained on TF 2.5
    findings = _mp401(cli, tmp_path)
    assert {f["severity"] for f in findings} == {"info"}
    assert all("this project's TensorFlow, 2.5 or older by its last commit," in f["message"] for f in findings)
    _committed(tmp_path, {"requirements.txt": "numpy\n"}, "2024-05-01")  # and on Keras 3's
    assert {f["severity"] for f in _mp401(cli, tmp_path)} == {"error"}


def test_documentation_edited_later_does_not_date_the_code(cli, tmp_path):
    _committed(tmp_path, {"train.py": EXPERIMENTAL}, "2020-07-18")
    _committed(tmp_path, {"README.md": "notes\n", "docs/usage.rst": "usage\n", "figure.png": "png"}, "2022-07-11")
    findings = _mp401(cli, tmp_path)
    assert findings and {f["severity"] for f in findings} == {"info"}
    assert any("the only mixed-precision API of this project's TensorFlow (< 2.4)" in f["message"] for f in findings)


def test_a_merge_dates_the_code_by_the_commits_it_brings(cli, tmp_path):
    _committed(tmp_path, {"utils.py": "x = 1\n"}, "2020-06-01")
    _git(tmp_path, "checkout", "-q", "-b", "feature")
    _committed(tmp_path, {"train.py": EXPERIMENTAL}, "2020-07-18")
    _git(tmp_path, "checkout", "-q", "-")
    _git(tmp_path, "merge", "-q", "--no-ff", "-m", "merge", "feature", day="2021-01-05")  # TF 2.4 was out
    assert last_change(str(tmp_path / "train.py")).day == "2020-07-18"
    assert {f["severity"] for f in _mp401(cli, tmp_path)} == {"info"}


def test_a_recent_project_an_edited_file_and_an_untracked_file_are_not_dated(cli, tmp_path):
    _committed(tmp_path, {"train.py": EXPERIMENTAL, "other.py": "x = 1\n"}, "2023-01-10")
    assert {f["severity"] for f in _mp401(cli, tmp_path)} == {"error"}  # TF 2.11: removed there
    _committed(tmp_path, {"train.py": EXPERIMENTAL + "# old\n"}, "2020-07-18")
    assert {f["severity"] for f in _mp401(cli, tmp_path)} == {"info"}
    write(tmp_path / "train.py", EXPERIMENTAL + "# edited now\n")  # uncommitted: written today
    assert {f["severity"] for f in _mp401(cli, tmp_path)} == {"error"}
    write(tmp_path / "new.py", EXPERIMENTAL)
    result = cli(["--no-cache", "--output-format", "json", "--select", "MP401", "new.py"], cwd=tmp_path)
    assert {f["severity"] for f in json.loads(result.stdout)} == {"error"}
    assert last_change(str(tmp_path / "new.py")) is None


def test_a_pin_or_the_configured_target_decides_before_the_files_age(cli, tmp_path):
    _committed(tmp_path, {"train.py": EXPERIMENTAL, "requirements.txt": "tensorflow==2.10.0\n"}, "2020-07-18")
    assert {f["severity"] for f in _mp401(cli, tmp_path)} == {"error"}  # the pin says TF 2.10
    os.remove(tmp_path / "requirements.txt")
    forget_project_files()  # the pins are kept for the life of the process
    assert {f["severity"] for f in _mp401(cli, tmp_path)} == {"info"}
    findings = _mp401(cli, tmp_path, "--target", "keras2")  # the user says it runs now: migrate it
    assert {f["severity"] for f in findings} == {"error"} and any(f["fix"] for f in findings)


def test_the_infos_say_how_to_migrate_a_dated_file(cli, tmp_path):
    _committed(tmp_path, {"train.py": EXPERIMENTAL}, "2020-07-18")
    result = cli(["--no-cache", "-v", "--select", "MP401", "train.py"], cwd=tmp_path)
    assert "dated by the repository's last commit (2020-07-18)" in result.stderr
    assert "set `target = \"keras2\"`" in result.stderr


def test_a_folder_outside_git_gives_no_date(tmp_path):
    write(tmp_path / "train.py", EXPERIMENTAL)
    assert last_change(str(tmp_path / "train.py")) is None
    assert last_change(str(tmp_path / "missing.py")) is None


def test_the_findings_cache_sees_a_commit_that_changes_the_projects_tensorflow(mplint_process, tmp_path):
    _committed(tmp_path, {"train.py": EXPERIMENTAL}, "2020-07-18")
    args = ["--output-format", "json", "--select", "MP401", "--exit-zero", "train.py"]
    for _ in range(2):  # the second run answers from the cache (or the whole-run record)
        assert {f["severity"] for f in json.loads(mplint_process(args, cwd=tmp_path).stdout)} == {"info"}
    _committed(tmp_path, {"setup.py": "# maintained\n"}, "2024-05-01")
    assert {f["severity"] for f in json.loads(mplint_process(args, cwd=tmp_path).stdout)} == {"error"}


def _notebook(*cells: tuple[str, str]) -> str:
    """A notebook's JSON: code cells given as (source, recorded output)."""
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source,
         "outputs": [{"output_type": "stream", "name": "stdout", "text": output}] if output else []}
        for source, output in cells]})


def test_a_notebook_is_dated_by_the_runs_its_checkouts_notebooks_recorded(cli, tmp_path):
    """Committed in 2021 (TF 2.4 by the date), beside a notebook that printed 2.1.0: the
    author's notebooks ran on TF 2.1, where the experimental API is the only one."""
    printed = _notebook(("import tensorflow as tf\nprint(tf.__version__)", "2.1.0\n"))
    mixed = _notebook((EXPERIMENTAL, ""))
    _committed(tmp_path, {"examples/version.ipynb": printed, "mixed.ipynb": mixed}, "2021-02-09")
    result = cli(["--no-cache", "--output-format", "json", "--select", "MP401", "mixed.ipynb"], cwd=tmp_path)
    findings = json.loads(result.stdout)
    assert findings and all(f["fix"] is None for f in findings)
    assert any("the only mixed-precision API of this project's TensorFlow (< 2.4)" in f["message"] for f in findings)
    target = [p for f in findings for p in f["premises"] if p["fact"] == "keras-target"]
    assert target and all("recorded runs on TensorFlow 2.1" in p["evidence"] for p in target)
    # without that notebook, the date decides (TF 2.4 or older: a bound, no fix)
    forget_project_files()
    _git(tmp_path, "rm", "-q", "examples/version.ipynb")
    _git(tmp_path, "commit", "-q", "-m", "drop", day="2021-02-09")
    result = cli(["--no-cache", "--output-format", "json", "--select", "MP401", "mixed.ipynb"], cwd=tmp_path)
    assert all("this project's TensorFlow, 2.4 or older by its last commit," in f["message"]
               for f in json.loads(result.stdout))
