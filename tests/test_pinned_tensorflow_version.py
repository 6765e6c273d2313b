"""A finding is true where the code runs: the TensorFlow a project pins (or builds its image
on) decides whether an old mixed-precision API is removed there or only deprecated."""

from __future__ import annotations

import json

import pytest

from mplint.facts.target import forget_project_files
from tests.conftest import write

EXPERIMENTAL = (
    "import tensorflow as tf\n"
    "from tensorflow.keras.mixed_precision import experimental as mixed_precision\n"
    "mixed_precision.set_policy('mixed_float16')\n"
)
COMPAT_REWRITE = (
    "import tensorflow as tf\n"
    "optimizer = make_optimizer()\n"
    "optimizer = tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(optimizer)\n"
    "model.compile(optimizer=optimizer, loss='mse')\n"
)


def _findings(cli, project, code: str, *extra: str) -> list[dict]:
    result = cli(["--no-cache", "--output-format", "json", "--select", code, *extra, "train.py"], cwd=project)
    return json.loads(result.stdout)


@pytest.mark.parametrize("declared", [
    ("requirements.txt", "tensorflow==2.7.0\n", "2.7"),
    ("requirements.txt", "tensorflow-gpu>=2.4,<2.9\n", "2.8"),
    ("Dockerfile", "FROM tensorflow/tensorflow:2.4.1-gpu\n", "2.4"),
    # NVIDIA's images by month: 21.02-21.05 ship TF 2.4, 21.06-21.08 TF 2.5, 22.03-22.05 TF 2.8
    ("Dockerfile", "FROM nvcr.io/nvidia/tensorflow:21.02-tf2-py3\n", "2.4"),
    ("Dockerfile", "FROM nvcr.io/nvidia/tensorflow:21.07-tf2-py3\n", "2.5"),
    ("Dockerfile", "FROM nvcr.io/nvidia/tensorflow:22.05-tf2-py3\n", "2.8"),
])
def test_the_experimental_api_is_an_info_with_its_fix_where_the_project_runs_tf_2_4_to_2_8(cli, tmp_path, declared):
    (tmp_path / ".git").mkdir()
    name, text, version = declared
    write(tmp_path / name, text)
    write(tmp_path / "train.py", EXPERIMENTAL)
    findings = _findings(cli, tmp_path, "MP401")
    assert findings and {f["severity"] for f in findings} == {"info"}
    assert all(f"this project's TensorFlow {version}" in f["message"] for f in findings)
    assert any(f["fix"] is not None for f in findings)  # the stable API exists there too


@pytest.mark.parametrize("pin", ["tensorflow>=2.6\n", "tensorflow==2.10.0\n"])
def test_the_experimental_api_is_an_error_where_the_project_admits_tf_2_9_or_newer(cli, tmp_path, pin):
    (tmp_path / ".git").mkdir()
    write(tmp_path / "requirements.txt", pin)
    write(tmp_path / "train.py", EXPERIMENTAL)
    findings = _findings(cli, tmp_path, "MP401")
    assert findings and {f["severity"] for f in findings} == {"error"}
    assert not any("still has it" in f["message"] for f in findings)


@pytest.mark.parametrize("pin, spelling, severity, words", [
    # `tf-nightly==2.8.0.dev...` stands for TensorFlow 2.8, whose compat rewrite still takes
    # Keras optimizers (TF 2.11 made the new ones the default)
    ("tf-nightly==2.8.0.dev20211104\n", "tf.compat.v1.mixed_precision.", "info",
     "this project's TensorFlow 2.8 still takes Keras optimizers, TF 2.11+ reject them"),
    ("tensorflow>=2.8,<2.16\n", "tf.compat.v1.mixed_precision.", "warning",
     "accepts only TF 1.x and Keras 2 legacy optimizers"),
    ("tensorflow==2.5.0\n", "tf.train.experimental.", "info",
     "is deprecated since TF 2.4 (this project's TensorFlow 2.5 still has it)"),
])
def test_the_graph_rewrite_says_what_the_projects_tensorflow_still_takes(cli, tmp_path, pin, spelling, severity, words):
    (tmp_path / ".git").mkdir()
    write(tmp_path / "requirements.txt", pin)
    write(tmp_path / "train.py", COMPAT_REWRITE.replace("tf.compat.v1.mixed_precision.", spelling))
    (finding,) = _findings(cli, tmp_path, "MP403")
    assert finding["severity"] == severity
    assert words in finding["message"]


def _notebook(source: str, outputs: list[dict]) -> str:
    cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": source, "outputs": outputs}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 4})


def _mp401_beside(cli, tmp_path, notebooks: dict[str, str]) -> tuple[set[str], str]:
    """The severities of MP401 on a script that uses the experimental API, beside these
    notebooks, and what `--verbose` says of its target."""
    (tmp_path / ".git").mkdir()
    for name, text in notebooks.items():
        write(tmp_path / name, text)
    write(tmp_path / "train.py", EXPERIMENTAL)
    result = cli(["--no-cache", "--output-format", "json", "--verbose", "--select", "MP401", "train.py"], cwd=tmp_path)
    return {f["severity"] for f in json.loads(result.stdout)}, result.stderr


@pytest.mark.parametrize("source, words", [
    ("!pip install tensorflow-gpu==2.1.0\nimport tensorflow as tf", "installs tensorflow-gpu==2.1.0"),
    ("!pip install -q 'tensorflow<2.4'\nimport tensorflow as tf", "installs tensorflow<2.4"),
    ("%tensorflow_version 1.x\nimport tensorflow as tf", "selects TensorFlow 1.x"),
])
def test_the_folders_notebooks_declare_which_tensorflow_the_project_runs_on(cli, tmp_path, source, words):
    severities, said = _mp401_beside(cli, tmp_path, {"experiments.ipynb": _notebook(source, [])})
    assert severities == {"info"}  # the only API of TF < 2.4
    assert "the folder's notebooks declare it" in said and words in said


@pytest.mark.parametrize("outputs", [
    [{"output_type": "stream", "name": "stdout", "text": ["2.3.1\n"]}],  # a printed version
    [{"output_type": "error", "ename": "ValueError", "evalue": "bad shape",  # a TF 1.15-2.1 traceback
      "traceback": ["~/env/lib/python3.6/site-packages/tensorflow_core/python/keras/engine/training.py in fit()"]}],
])
def test_what_a_notebook_records_of_a_run_does_not_date_the_scripts_beside_it(cli, tmp_path, outputs):
    # A notebook run once on TF 2.1 does not say the tutorial script beside it targets TF 2.1:
    # the experimental API stays an error there (it is gone from TF 2.9 on).
    notebook = _notebook("import tensorflow as tf\nprint(tf.__version__)", outputs)
    severities, said = _mp401_beside(cli, tmp_path, {"experiments.ipynb": notebook})
    assert severities == {"error"} and "notebooks" not in said


def test_notebooks_that_disagree_on_the_keras_decide_nothing(cli, tmp_path):
    severities, said = _mp401_beside(cli, tmp_path, {"old.ipynb": _notebook("!pip install tensorflow==2.3.0", []),
                                                     "new.ipynb": _notebook("!pip install tensorflow==2.17.0", [])})
    assert severities == {"error"} and "notebooks" not in said


def test_a_migration_that_cannot_be_whole_is_not_fixed_on_tf_2_4_to_2_8_either(cli, tmp_path):
    # On TF 2.6 the findings are infos; the file ran there, and moving the import while
    # `Policy(..., loss_scale=1024)` keeps its loss scale would make it raise TypeError.
    from tests.fixture_cases import FIXTURES

    (tmp_path / ".git").mkdir()
    write(tmp_path / "requirements.txt", "tensorflow-gpu==2.6.0\n")
    source = (FIXTURES / "MP401" / "migration_whole_or_not_at_all.py").read_text()
    write(tmp_path / "train.py", source.replace("# fixture: target=keras2\n", ""))
    findings = _findings(cli, tmp_path, "MP401", "--unsafe-fixes")
    assert len(findings) == 4 and {f["severity"] for f in findings} == {"info"}
    assert all(f["fix"] is None for f in findings)


@pytest.mark.parametrize("name", ["infer_float32_vars", "infer_with_float32_vars"])
def test_a_policy_name_of_tf_1_14_to_2_0_dates_the_file_before_the_stable_api(cli, tmp_path, name):
    # The first experimental policies: code that names one runs where the experimental
    # API is the only one, so its import is no error there and has no fix.
    (tmp_path / ".git").mkdir()
    write(tmp_path / "train.py", (
        "import tensorflow as tf\n"
        "from tensorflow.keras.mixed_precision.experimental import Policy\n"
        f"policy = Policy({name!r})\n"
    ))
    findings = _findings(cli, tmp_path, "MP401", "--unsafe-fixes")
    assert findings and {f["severity"] for f in findings} == {"info"}
    assert all(f["fix"] is None for f in findings)
    assert all("this project's TensorFlow (< 2.4)" in f["message"] for f in findings)


@pytest.mark.parametrize("script, words", [
    ("tools/run_tpu.sh", "ctpu up --project=p \\\n --zone=us-central1-b \\\n --tf-version=2.2 \\\n --name=tpu\n"),
    ("create_tpu.sh", "gcloud compute tpus create tpu --zone=z --accelerator-type=v3-8 --version=2.3.1\n"),
])
def test_the_tensorflow_of_the_cloud_tpu_a_script_creates_is_the_projects(cli, tmp_path, script, words):
    # The code runs on the TPU's TensorFlow: before 2.4 the experimental API is the only one,
    # so there is nothing to rewrite it to (an info, no fix).
    (tmp_path / ".git").mkdir()
    write(tmp_path / script, words)
    write(tmp_path / "train.py", EXPERIMENTAL)
    findings = _findings(cli, tmp_path, "MP401")
    assert findings and {f["severity"] for f in findings} == {"info"}
    assert all(f["fix"] is None for f in findings)
    write(tmp_path / script, "# " + words.replace("\n", "\n# "))  # a commented-out command declares nothing
    forget_project_files()  # one process runs both checks: read the project's files again
    assert {f["severity"] for f in _findings(cli, tmp_path, "MP401")} == {"error"}


STABLE_SET_POLICY = (
    "import tensorflow as tf\n"
    "from tensorflow.keras import mixed_precision\n"
    "mixed_precision.set_policy(mixed_precision.Policy('mixed_float16'))\n"
)


@pytest.mark.parametrize("pin, fixed", [("tensorflow==2.4.1\n", True), ("tensorflow==2.3.0\n", False)])
def test_set_policy_of_the_stable_module_fails_on_every_tensorflow(cli, tmp_path, pin, fixed):
    """The stable `mixed_precision` module never had `set_policy`: an AttributeError on the
    project's own TensorFlow too, so no "still has it" and no info. Before TF 2.4 there is no
    `set_global_policy` for the fix to write."""
    (tmp_path / ".git").mkdir()
    write(tmp_path / "requirements.txt", pin)
    write(tmp_path / "train.py", STABLE_SET_POLICY)
    findings = _findings(cli, tmp_path, "MP401")
    assert [f["severity"] for f in findings] == ["error"]
    assert "never had `set_policy`: AttributeError" in findings[0]["message"]
    assert "still has it" not in findings[0]["message"] and "moves to TF 2.4" not in findings[0]["message"]
    assert (findings[0]["fix"] is not None) == fixed
