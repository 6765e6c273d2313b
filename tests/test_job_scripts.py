"""The TensorFlow of the cluster jobs that run a file (mplint.facts.job_scripts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mplint.facts.job_scripts import forget_job_scripts, job_tensorflow


def _project(tmp_path: Path, scripts: dict[str, str]) -> str:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "train.py").write_text("import tensorflow as tf\n")
    for name, text in scripts.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    forget_job_scripts()
    return str(tmp_path)


@pytest.mark.parametrize("scripts, versions", [
    ({"jobs/a.sh": "module load TensorFlow/2.6.0-foss-2021a\npython pipelines/train.py --lr 1\n"}, [(2, 6)]),
    ({"run.slurm": "ml tensorflow/2.4.1\nsrun python3 $HOME/sr/pipelines/train.py\n"}, [(2, 4)]),
    ({"jobs/a.sh": "module load TensorFlow/2.6.0\npython \\\n  pipelines/train.py\n",  # a continuation line
      "jobs/b.sh": "module add tensorflow/2.8\npython pipelines/train.py\n"}, [(2, 6), (2, 8)]),
    ({"jobs/a.sh": "# module load TensorFlow/2.6.0\npython pipelines/train.py\n"}, None),  # a comment
    ({"jobs/a.sh": "module load TensorFlow/2.6.0\npython pipelines/train.py\n",
      "jobs/b.sh": "source venv/bin/activate\npython pipelines/train.py\n"}, None),  # one job's TF is its venv's
    ({"jobs/a.sh": "module load TensorFlow/2.6.0\npython pipelines/train.py.bak\n"}, None),  # another file
    ({"jobs/a.sh": "module load TensorFlow/2.6.0\ncat pipelines/train.py\n"}, None),  # not run with Python
    ({"notes/a.sh": "module load TensorFlow/2.6.0\npython pipelines/train.py\n"}, None),  # not a job folder
])
def test_the_jobs_that_run_a_file_say_its_tensorflow(tmp_path: Path, scripts, versions) -> None:
    root = _project(tmp_path, scripts)
    found = job_tensorflow(root, str(tmp_path / "pipelines" / "train.py"))
    assert (found[0] if found else None) == versions
    if found:
        assert "runs it on TensorFlow" in found[1]


def test_a_run_by_a_relative_path_and_by_one_ending_in_it(tmp_path: Path) -> None:
    root = _project(tmp_path, {"jobs/a.sh": "module load TensorFlow/2.5.0\ncd $WORK && python ./pipelines/train.py\n",
                               "jobs/b.sbatch": "module load TensorFlow/2.5.0\nsrun python -u /home/me/sr/pipelines/train.py\n"})
    assert job_tensorflow(root, str(tmp_path / "pipelines" / "train.py"))[0] == [(2, 5), (2, 5)]
