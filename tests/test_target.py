"""The Keras target of a file: each step of the decision order, project pins, installed
versions, and `mplint check --verbose` showing it."""

from __future__ import annotations

import json

import libcst as cst
import pytest

from mplint.facts import target as target_module
from mplint.facts.module import ModuleFacts
from mplint.facts.target import installed_target, project_pins, project_root
from tests.conftest import write

TF_ONLY = "import tensorflow as tf\nmodel = tf.keras.Sequential()\n"


@pytest.fixture
def installed(monkeypatch):
    """Pretend these distributions are installed: installed({"tensorflow": "2.15.0"})."""

    def pretend(versions: dict[str, str]) -> None:
        monkeypatch.setattr(target_module, "installed_versions", lambda: dict(versions))
        installed_target.cache_clear()

    yield pretend
    installed_target.cache_clear()


@pytest.fixture
def project(tmp_path):
    """An empty project (a git root: the search for pins stops here)."""
    (tmp_path / ".git").mkdir()
    return tmp_path


def target_of(path, text: str, configured: str = "auto"):
    write(path, text)
    module = cst.parse_module(text)
    return ModuleFacts(module, text, str(path), configured_target=configured).target


# -- 1. --target / config ---------------------------------------------------------------

@pytest.mark.parametrize("configured", ["keras2", "keras3"])
def test_configured_target_wins_over_everything(project, installed, configured):
    installed({"tensorflow": "2.15.0"})
    write(project / "requirements.txt", "tensorflow>=2.16\n")
    target = target_of(project / "m.py", "import tf_keras\nimport keras\nkeras.ops.mean(1)\n", configured)
    assert target.keras == configured
    assert target.reason == "set by --target/config"


# -- 2. TF_USE_LEGACY_KERAS or tf_keras -> keras2 ---------------------------------------------

@pytest.mark.parametrize(
    "line",
    [
        'os.environ["TF_USE_LEGACY_KERAS"] = "1"',
        "os.environ['TF_USE_LEGACY_KERAS']='True'",
        'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")',
    ],
)
def test_legacy_keras_environment_variable_means_keras2(project, installed, line):
    installed({"tensorflow": "2.21.0"})
    write(project / "requirements.txt", "tensorflow==2.21.0\n")
    target = target_of(project / "m.py", f"import os\n{line}\nimport tensorflow as tf\n")
    assert target.keras == "keras2"
    assert "TF_USE_LEGACY_KERAS" in target.reason


def test_legacy_keras_set_to_zero_is_not_keras2(project, installed):
    installed({"tensorflow": "2.21.0"})
    target = target_of(project / "m.py", 'import os\nos.environ["TF_USE_LEGACY_KERAS"] = "0"\nimport tensorflow as tf\n')
    assert target.keras == "keras3"


@pytest.mark.parametrize("text", ["import tf_keras\n", "from tf_keras import layers\n", "import tf_keras as keras\n"])
def test_importing_tf_keras_means_keras2(project, installed, text):
    installed({"tensorflow": "2.21.0"})
    write(project / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["tensorflow>=2.16"]\n')
    target = target_of(project / "m.py", text)
    assert (target.keras, target.reason) == ("keras2", "the file imports tf_keras")


# -- 3. import keras with Keras-3-only names -> keras3 ------------------------------------------

@pytest.mark.parametrize(
    "text",
    [
        "import keras\nx = keras.ops.mean(y)\n",
        "import keras\nkeras.config.set_dtype_policy('mixed_float16')\n",
        "from keras import ops\nops.sum(x)\n",
        "import keras\nkeras.mixed_precision.set_dtype_policy('mixed_float16')\n",
        # keras.src modules only the keras 3 wheel has (not 2.13-2.15's keras/src)
        "import keras\nfrom keras.src.backend.common import global_state\n",
        "import keras\nfrom keras.src.layers.layer import Layer\n",
    ],
)
def test_standalone_keras_with_keras3_names_means_keras3(project, installed, text):
    installed({"tensorflow": "2.15.0"})
    write(project / "requirements.txt", "tensorflow==2.15.0\n")
    target = target_of(project / "m.py", text)
    assert target.keras == "keras3"
    assert target.reason.startswith("the file imports keras and uses Keras-3-only")


@pytest.mark.parametrize("text", [
    # Keras 2.13-2.15 keep their code under keras.src too (keras/src/backend.py has dtype())
    "from keras.src.backend import dtype\nimport tensorflow as tf\n",
    "import keras\nfrom keras.src.engine import base_layer\n",
    "import keras\nfrom keras.src.legacy_tf_layers import core\n",
])
def test_keras_src_modules_keras_2_13_also_has_are_no_keras3_evidence(project, installed, text):
    installed({"tensorflow": "2.21.0"})
    write(project / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["tensorflow[and-cuda] >= 2.14.0, < 2.15"]\n')
    target = target_of(project / "m.py", text)
    assert target.keras == "keras2"
    assert "pyproject.toml" in target.reason


def test_standalone_keras_without_keras3_names_falls_through_to_pins(project, installed):
    installed({"tensorflow": "2.21.0"})
    write(project / "requirements.txt", "tensorflow==2.15.0\n")
    target = target_of(project / "m.py", "import keras\nkeras.layers.Dense(4)\n")
    assert target.keras == "keras2"
    assert "requirements.txt" in target.reason


# -- 4. project pins ---------------------------------------------------------------------

@pytest.mark.parametrize(
    "filename, content, expected",
    [
        ("requirements.txt", "numpy\ntensorflow<2.16\n", "keras2"),
        ("requirements.txt", "tensorflow==2.15.0  # last Keras 2 release\n", "keras2"),
        ("requirements.txt", "tensorflow-gpu==2.4.1\n", "keras2"),
        ("requirements.txt", "tensorflow>=2.16\n", "keras3"),
        ("requirements.txt", "tensorflow-cpu==2.21.0\n", "keras3"),
        ("requirements.txt", "keras<3\n", "keras2"),
        ("setup.py", "setup(install_requires=['keras<=2.3.1'])\n", "keras2"),  # multi-backend Keras
        ("requirements.txt", "keras>=3.0\n", "keras3"),
        ("requirements.txt", "tensorflow==2.21.0\ntf-keras==2.21.0\n", "keras2"),
        ("requirements-dev.txt", "tensorflow~=2.13.0\n", "keras2"),
        ("requirments.txt", "tensorflow==2.2.0\nlibrosa>=0.7.0\n", "keras2"),  # misspelled, as projects do
        ("reqs.txt", "tensorflow>=2.17\n", "keras3"),
        ("requirements/base.txt", "tensorflow>=2.17\n", "keras3"),
        ("pyproject.toml", '[project]\nname = "p"\ndependencies = ["tensorflow>=2.4,<2.16"]\n', "keras2"),
        ("pyproject.toml", '[project]\nname = "p"\ndependencies = ["tensorflow>=2.16"]\n', "keras3"),
        ("pyproject.toml", '[project]\nname = "p"\n[project.optional-dependencies]\ngpu = ["tensorflow[and-cuda]==2.15.1"]\n', "keras2"),
        ("pyproject.toml", '[project]\nname = "p"\ndependencies = ["tensorflow>=2.16"]\n[project.optional-dependencies]\nold = ["tensorflow==2.15.1"]\n', "keras3"),
        ("pyproject.toml", '[project]\nname = "p"\n[project.optional-dependencies]\nverify = ["tensorflow-cpu==2.21.0", "tf-keras==2.21.0"]\n', "keras3"),
        ("setup.cfg", "[options]\ninstall_requires =\n    numpy\n    tensorflow>=2.4,<2.16\n", "keras2"),
        ("setup.cfg", "[options]\ninstall_requires =\n    tensorflow>=2.16\n", "keras3"),
        ("setup.py", "from setuptools import setup\nsetup(install_requires=['tensorflow==2.10.0'])\n", "keras2"),
        ("pyproject.toml", '[tool.poetry]\nname = "p"\n[tool.poetry.dependencies]\ntensorflow = "^2.16"\n', "keras3"),
        ("pyproject.toml", '[tool.poetry]\nname = "p"\n[tool.poetry.dependencies]\ntensorflow = "~2.12"\n', "keras2"),
        ("poetry.lock", '[[package]]\nname = "tensorflow"\nversion = "2.12.0"\n', "keras2"),
        ("uv.lock", '[[package]]\nname = "keras"\nversion = "3.5.0"\n', "keras3"),
        ("Pipfile.lock", '{"default": {"tensorflow": {"version": "==2.3.0"}}}', "keras2"),
        ("environment.yml", "name: p\ndependencies:\n  - python=3.8\n  - pip:\n    - tensorflow==2.12.0\n", "keras2"),
        # a conda environment file of any name (`conda env create -f project.yml`)
        ("project.yml", "name: p\ndependencies:\n  - pip:\n      - keras==2.12.0\n      - tensorflow==2.12.0\n", "keras2"),
        ("env.yaml", "dependencies:\n  - tensorflow=2.17\n", "keras3"),
    ],
)
def test_project_pins(project, installed, filename, content, expected):
    # The installed version says the opposite: pins come first.
    installed({"tensorflow": "2.21.0" if expected == "keras2" else "2.15.0"})
    write(project / filename, content)
    target = target_of(project / "src" / "m.py", TF_ONLY)
    assert target.keras == expected, target.reason
    assert filename.rsplit("/", 1)[-1] in target.reason


@pytest.mark.parametrize("pin, before_stable_api", [("keras<=2.3.1", True), ("keras==2.2.4", True),
                                                     ("keras>=2.4,<3", False)])
def test_multi_backend_keras_pins_a_tensorflow_before_the_stable_api(project, installed, pin, before_stable_api):
    installed({"tensorflow": "2.21.0"})
    write(project / "requirements.txt", pin + "\n")
    target = target_of(project / "m.py", TF_ONLY)
    assert (target.keras, target.before_stable_api) == ("keras2", before_stable_api)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig"])
def test_requirements_with_a_byte_order_mark_are_read(project, installed, encoding):
    """`pip freeze > requirements.txt` in PowerShell writes UTF-16 with a byte-order mark."""
    installed({"tensorflow": "2.21.0"})
    (project / "requirements.txt").write_bytes("keras==2.11.0\r\ntensorflow==2.11.0\r\n".encode(encoding))
    target = target_of(project / "m.py", TF_ONLY)
    assert (target.keras, target.assumed) == ("keras2", False)
    assert "requirements.txt" in target.reason


def test_a_file_the_readme_pip_installs_with_r_is_a_requirements_file(project, installed):
    """`pip install -r library.txt` in the README: that file pins the project's TensorFlow,
    whatever its name; a `.txt` file no install line names pins nothing."""
    installed({"tensorflow": "2.21.0"})
    write(project / "library.txt", "tensorflow==2.6.2\ntensorflow-probability==0.14.1\n")
    assert target_of(project / "m.py", TF_ONLY).keras == "keras3"  # not a requirements file yet
    target_module.forget_project_files()
    write(project / "README.md", "## Setup\n```\nconda create -n ce2 python=3.8\npip install -r library.txt\n```\n")
    target = target_of(project / "m.py", TF_ONLY)
    assert (target.keras, target.newest_tensorflow) == ("keras2", (2, 6)) and "library.txt" in target.reason


def test_a_file_pinning_two_tensorflows_no_version_satisfies_makes_the_target_conflicting(project, installed):
    """`tensorflow==2.12.0` beside `tensorflow_gpu==2.1.0`: which one runs depends on pip's
    install order. The Keras (2 for both) stands; the version does not, so the premise is
    conflicting and a finding that rests on it leaves the default tier."""
    from mplint.core.diagnostics import Status
    from mplint.facts.premises import target_premise

    installed({"tensorflow": "2.21.0"})
    write(project / "requirements.txt", "numpy==1.19.5\ntensorflow==2.12.0\ntensorflow_gpu==2.1.0\n")
    target = target_of(project / "m.py", TF_ONLY)
    assert (target.keras, target.newest_tensorflow) == ("keras2", None)
    assert "tensorflow_gpu==2.1.0" in target.conflict
    module = cst.parse_module(TF_ONLY)
    facts = ModuleFacts(module, TF_ONLY, str(project / "m.py"))
    assert target_premise(facts).status == Status.CONFLICTING


@pytest.mark.parametrize("script, newest", [
    # a Singularity image built from NGC, named after its tag
    ("CONTAINER=/home/me/tensorflow-20.08-tf2-py3.simg\nsingularity exec --nv $CONTAINER python main.py\n", (2, 3)),
    ("docker run --gpus all nvcr.io/nvidia/tensorflow:21.07-tf2-py3 python main.py\n", (2, 5)),
    ("singularity exec docker://tensorflow/tensorflow:2.6.0-gpu python main.py\n", (2, 6)),
])
def test_the_image_a_job_script_runs_the_code_in_names_its_tensorflow(project, installed, script, newest):
    installed({"tensorflow": "2.21.0"})
    write(project / "setup.cfg", "[metadata]\nname = skeleton\n")
    write(project / "submit_scripts" / "gpu_job.sh", "#!/bin/bash\n#CONTAINER=/x/tensorflow-23.03-tf2-py3.sif\n" + script)
    target = target_of(project / "main.py", TF_ONLY)
    assert (target.keras, target.newest_tensorflow) == ("keras2", newest)
    assert "submit_scripts/gpu_job.sh runs in" in target.reason


def test_a_commented_out_image_in_a_job_script_says_nothing(project, installed):
    installed({"tensorflow": "2.21.0"})
    write(project / "scripts" / "job.sh", "# docker run nvcr.io/nvidia/tensorflow:20.08-tf2-py3 python main.py\n")
    assert target_of(project / "main.py", TF_ONLY).reason.startswith("installed tensorflow 2.21.0")


def test_a_tensorflow_pin_decides_before_a_keras_pin_listed_above_it(project, installed):
    """A conda file listing `keras==2.6.0` above `tensorflow==2.6.1` (alphabetical): the Keras
    pin says Keras 2, only the TensorFlow pin says which TensorFlow (2.6, where the
    experimental API is deprecated, not removed)."""
    installed({"tensorflow": "2.21.0"})
    write(project / "env.yml", "name: lamp\ndependencies:\n  - python=3.8\n  - pip:\n    - keras==2.6.0\n"
                               "    - tensorflow==2.6.1\n")
    target = target_of(project / "m.py", TF_ONLY)
    assert (target.keras, target.newest_tensorflow) == ("keras2", (2, 6)) and "tensorflow==2.6.1" in target.reason


@pytest.mark.parametrize("pins", [
    "tensorflow>=2.4\ntensorflow-gpu==2.4.1\n",  # one version satisfies both
    'tensorflow==2.12.0; sys_platform != "darwin"\ntensorflow-macos==2.9.0; sys_platform == "darwin"\n',
])
def test_pins_that_agree_or_are_for_other_platforms_conflict_in_nothing(project, installed, pins):
    installed({"tensorflow": "2.21.0"})
    write(project / "requirements.txt", pins)
    target = target_of(project / "m.py", TF_ONLY)
    assert target.keras == "keras2" and target.conflict is None


def test_a_root_yaml_file_that_is_no_conda_environment_pins_nothing(project, installed):
    installed({"tensorflow": "2.15.0"})
    write(project / "config.yml", "model:\n  - tensorflow==2.21.0\n")
    target = target_of(project / "m.py", TF_ONLY)
    assert target.keras == "keras2" and target.reason.startswith("installed tensorflow 2.15.0")


def test_a_lock_file_decides_before_the_range_it_locks(project, installed):
    """Poetry's `^2.8` admits Keras 2 and Keras 3 TensorFlows; the lock says which one an
    install of the project gets."""
    installed({"tensorflow": "2.21.0"})
    write(project / "pyproject.toml", '[tool.poetry]\nname = "p"\n[tool.poetry.dependencies]\ntensorflow = "^2.2"\n')
    write(project / "poetry.lock", '[[package]]\nname = "numpy"\nversion = "1.18.0"\n\n'
                                   '[[package]]\nname = "tensorflow"\nversion = "2.3.0"\n')
    target = target_of(project / "src" / "m.py", TF_ONLY)
    assert target.keras == "keras2" and target.before_stable_api and "poetry.lock" in target.reason


def test_tf_keras_in_a_lock_file_is_a_dependency_of_a_dependency_not_the_target(project, installed):
    """A lock file lists tf-keras where tensorflow-hub needs it; the code still runs on the
    Keras 3 of the TensorFlow 2.18 it locks. tf-keras required by the project itself (its
    metadata) does say Keras 2."""
    installed({"tensorflow": "2.15.0"})
    write(project / "pyproject.toml", '[tool.poetry]\nname = "p"\n[tool.poetry.dependencies]\ntensorflow = "2.18.0"\n')
    write(project / "poetry.lock", '[[package]]\nname = "tensorflow"\nversion = "2.18.0"\n\n'
                                   '[[package]]\nname = "tf-keras"\nversion = "2.18.0"\n')
    target = target_of(project / "src" / "m.py", TF_ONLY)
    assert target.keras == "keras3" and "tensorflow==2.18.0" in target.reason
    target_module.forget_project_files()
    write(project / "requirements.txt", "tf-keras==2.18.0\n")
    assert target_of(project / "src" / "m.py", TF_ONLY).keras == "keras2"


def test_a_readme_requirements_list_names_the_tensorflow(project, installed):
    installed({"tensorflow": "2.21.0"})
    write(project / "src" / "readme.md", "## Requirements\n\nkeras==2.1.0\n\ntensorflow==1.8.0\n")
    target = target_of(project / "src" / "m.py", TF_ONLY)
    assert target.keras == "keras2" and target.before_stable_api and "tensorflow==1.8.0" in target.reason


def test_unconstrained_pin_decides_nothing(project, installed):
    installed({"tensorflow": "2.15.0"})
    write(project / "requirements.txt", "tensorflow\n")
    target = target_of(project / "m.py", TF_ONLY)
    assert target.keras == "keras2" and target.reason.startswith("installed tensorflow 2.15.0")


def test_pins_are_found_from_a_nested_package(project):
    write(project / "setup.cfg", "[options]\ninstall_requires = tensorflow<2.16\n")
    nested = project / "src" / "pkg" / "models"
    nested.mkdir(parents=True)
    assert project_root(str(nested)) == str(project)
    assert project_pins(str(project)).keras == "keras2"


def test_search_for_pins_stops_at_the_repository_root(tmp_path):
    write(tmp_path / "requirements.txt", "tensorflow<2.16\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    assert project_root(str(repo)) == str(repo)  # its own root: pins above it are not its own
    assert project_pins(str(repo)) is None


# -- 5. installed versions, 6. default --------------------------------------------------------

@pytest.mark.parametrize(
    "versions, expected",
    [
        ({"tensorflow": "2.15.0"}, "keras2"),
        ({"tensorflow-cpu": "2.21.0"}, "keras3"),
        ({"tensorflow": "2.16.1", "keras": "3.3.3"}, "keras3"),
        ({"keras": "2.15.0"}, "keras2"),
        ({"keras": "3.15.1"}, "keras3"),
    ],
)
def test_installed_versions(project, installed, versions, expected):
    installed(versions)
    target = target_of(project / "m.py", TF_ONLY)
    assert target.keras == expected
    assert target.reason.startswith("installed ")


def test_default_is_keras3(project, installed):
    installed({})
    target = target_of(project / "m.py", TF_ONLY)
    assert (target.keras, target.reason) == ("keras3", "default (no pins, no TensorFlow/Keras installed)")


def test_installed_versions_are_read_from_metadata_without_importing_tensorflow():
    import subprocess
    import sys

    code = (
        "import sys\nfrom mplint.facts.target import installed_versions, installed_target\n"
        "versions = installed_versions(); installed_target()\n"
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules, sorted(sys.modules)\n"
        "print(sorted(versions))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "tensorflow" in out or "tensorflow-cpu" in out  # the test environment has TensorFlow


def test_installed_versions_agree_with_importlib_metadata():
    from importlib import metadata

    from mplint.facts.target import installed_versions

    found = installed_versions()
    for dist in ("tensorflow-cpu", "keras", "tf-keras"):
        assert found.get(dist) == metadata.version(dist)


# -- the CLI shows the target it used ------------------------------------------------------------

LOOP = (
    "import tensorflow as tf\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    "optimizer = tf.keras.optimizers.Adam()\n"
)


def test_verbose_shows_the_target_decided_from_pins(cli, project, installed):
    installed({"tensorflow": "2.21.0"})
    write(project / "requirements.txt", "tensorflow==2.15.0\n")
    write(project / "pkg" / "train.py", LOOP)
    result = cli(["--no-cache", "--verbose", "pkg"], cwd=project)
    assert "pkg/train.py: target keras2 (requirements.txt pins tensorflow==2.15.0 (Keras 2 era)); policy mixed_float16 (set in the file)" in result.stderr
    # Another module of the project that imports tf_keras says more than the pins.
    write(project / "pkg" / "legacy.py", "import tf_keras\n" + LOOP)
    result = cli(["--no-cache", "--verbose", "pkg"], cwd=project)
    assert "pkg/legacy.py: target keras2 (the file imports tf_keras)" in result.stderr
    # ... about the Keras; the pins still say which TensorFlow.
    assert ("pkg/train.py: target keras2 (the project: pkg/legacy.py imports tf_keras; requirements.txt pins "
            "tensorflow==2.15.0 (Keras 2 era))") in result.stderr


def test_verbose_shows_the_installed_and_default_targets(cli, project, installed):
    write(project / "pkg" / "train.py", LOOP)
    installed({"tensorflow": "2.21.0"})
    result = cli(["--no-cache", "--verbose", "pkg"], cwd=project)
    assert "pkg/train.py: target keras3 (installed tensorflow 2.21.0 (Keras 3))" in result.stderr
    installed({})
    result = cli(["--no-cache", "--verbose", "pkg"], cwd=project)
    assert "pkg/train.py: target keras3 (default (no pins, no TensorFlow/Keras installed))" in result.stderr


def test_target_changes_the_fix(cli, project, installed):
    """The same loop is fixed with get_scaled_loss for Keras 2 and scale_loss for Keras 3."""
    loop = LOOP + (
        "def train_step(model, x, y):\n"
        "    with tf.GradientTape() as tape:\n"
        "        loss = tf.reduce_mean(model(x))\n"
        "    grads = tape.gradient(loss, model.trainable_variables)\n"
        "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n"
    )
    installed({"tensorflow": "2.21.0"})
    write(project / "pkg" / "train.py", loop)
    keras3 = cli(["--no-cache", "--diff", "--unsafe-fixes", "pkg"], cwd=project)
    assert "optimizer.scale_loss(loss)" in keras3.stdout and "get_unscaled_gradients" not in keras3.stdout
    write(project / "requirements.txt", "tensorflow<2.16\n")
    project_root.cache_clear()  # pins are cached per process (one CLI run); this test runs two
    project_pins.cache_clear()
    keras2 = cli(["--no-cache", "--diff", "--unsafe-fixes", "pkg"], cwd=project)
    assert "optimizer.get_scaled_loss(loss)" in keras2.stdout and "optimizer.get_unscaled_gradients(" in keras2.stdout


# -- 6. container images, and packages that pin TensorFlow indirectly ---------------------------

def test_a_dockerfile_elsewhere_that_copies_the_folder_decides(project, installed):
    """job-template/tf_keras_train/Dockerfile ships `job/pkgs` into its image: the code of
    job-template/job/pkgs runs on the TensorFlow that image installs. An image that copies
    other folders, or the whole build context, says nothing of it."""
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "job-template" / "job" / "tf_keras_train" / "Dockerfile",
          "FROM ubuntu:20.04\nRUN pip3 install requests tensorflow==2.3.0 nni\n"
          "COPY job/pkgs /app/job/pkgs\nCOPY job/tf_keras_train/*.py /app/job/tf_keras_train/\n")
    write(project / "other" / "Dockerfile", "FROM tensorflow/tensorflow:2.17.0-gpu\nCOPY . /app\n")
    target = target_of(project / "job-template" / "job" / "pkgs" / "tf" / "runner.py", TF_ONLY)
    assert (target.keras, target.assumed, target.newest_tensorflow) == ("keras2", False, (2, 3)), target.reason
    assert "job-template/job/tf_keras_train/Dockerfile installs tensorflow 2.3" in target.reason
    target_module.forget_project_files()
    alone = target_of(project / "job-template" / "job" / "elsewhere" / "runner.py", TF_ONLY)
    assert alone.assumed  # nothing copies that folder


@pytest.mark.parametrize(
    "dockerfile, keras",
    [
        ("ARG FROM_IMAGE_NAME=nvcr.io/nvidia/tensorflow:21.02-tf2-py3\nFROM ${FROM_IMAGE_NAME}\n", "keras2"),
        ("FROM nvcr.io/nvidia/tensorflow:23.10-tf2-py3\n", "keras2"),
        ("FROM nvcr.io/nvidia/tensorflow:20.12-tf1-py3\n", "keras2"),
        ("FROM tensorflow/tensorflow:2.12.0-gpu\n", "keras2"),
        ("FROM tensorflow/tensorflow:2.17.0-gpu\n", "keras3"),
    ],
)
def test_the_container_image_decides_after_the_pins(project, installed, dockerfile, keras):
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "Dockerfile", dockerfile)
    target = target_of(project / "train.py", TF_ONLY)
    assert (target.keras, target.assumed) == (keras, False)
    assert target.reason.startswith("Dockerfile builds on ")


@pytest.mark.parametrize("dockerfile, keras", [
    # a CUDA image, then pip: the packages on the continuation lines after `install \`
    ("FROM nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04\nRUN python3 -m pip --no-cache-dir install \\\n"
     "    tensorflow==2.13.* \\\n    jupyter\n", "keras2"),
    ("FROM nvidia/cuda:12.3.0-runtime-ubuntu22.04\nRUN pip install -U \\\n    tensorflow==2.17.0\n", "keras3"),
])
def test_a_dockerfile_that_pip_installs_tensorflow_on_a_continuation_line_decides(project, installed, dockerfile, keras):
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "Dockerfile", dockerfile)
    target = target_of(project / "train.py", TF_ONLY)
    assert (target.keras, target.assumed) == (keras, False)
    assert target.reason == f"Dockerfile installs tensorflow {'2.13' if keras == 'keras2' else '2.17'}"


@pytest.mark.parametrize(
    "dockerfile, before_stable_api",
    [
        ("FROM nvcr.io/nvidia/tensorflow:20.07-tf2-py3\n", True),  # TF 2.2
        ("FROM nvcr.io/nvidia/tensorflow:21.02-tf2-py3\n", False),  # TF 2.4
        ("FROM tensorflow/tensorflow:2.3.0-gpu\n", True),
        ("FROM tensorflow/tensorflow:2.4.1\n", False),
        # Docker Hub's `-py3` tags ended with TF 2.1: `latest-gpu-py3` is TF 2.1.0
        ("FROM tensorflow/tensorflow:latest-gpu-py3\n", True),
    ],
)
def test_the_image_says_whether_tensorflow_predates_the_stable_api(project, installed, dockerfile, before_stable_api):
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "Dockerfile", dockerfile)
    assert target_of(project / "train.py", TF_ONLY).before_stable_api is before_stable_api


@pytest.mark.parametrize("pin, before_stable_api", [("tensorflow==2.3.1", True), ("tensorflow-gpu>=2.2,<2.4", True),
                                                    ("tensorflow>=2.3,<2.16", False)])
def test_pins_say_whether_tensorflow_predates_the_stable_api(project, installed, pin, before_stable_api):
    installed({"tensorflow": "2.21.0"})
    project_pins.cache_clear()
    project_root.cache_clear()
    write(project / "requirements.txt", pin + "\n")
    assert target_of(project / "train.py", TF_ONLY).before_stable_api is before_stable_api


def test_the_nearest_dockerfile_decides_for_its_folder(project, installed):
    """A repository of projects, each with its own image: a file takes the Dockerfile of
    its own folder or the nearest one above it, up to the project root."""
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "Dockerfile", "FROM tensorflow/tensorflow:2.17.0\n")
    write(project / "old" / "Dockerfile", "FROM tensorflow/tensorflow:2.3.0\n")
    old = target_of(project / "old" / "nested" / "train.py", TF_ONLY)
    new = target_of(project / "new" / "train.py", TF_ONLY)
    assert (old.keras, old.before_stable_api) == ("keras2", True)
    assert (new.keras, new.before_stable_api) == ("keras3", False)


def test_a_newer_nvidia_image_says_nothing(project, installed):
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "Dockerfile", "FROM nvcr.io/nvidia/tensorflow:24.10-tf2-py3\n")
    assert target_of(project / "train.py", TF_ONLY).assumed


@pytest.mark.parametrize(
    "requirement, keras",
    [
        ("tensorflow-probability==0.22.1", "keras2"),
        ("tf-models-official==2.13.1", "keras2"),
        ("tf-models-official>=2.17", "keras3"),
        ("tensorflow-text==2.15.0", "keras2"),
        ("tensorflow-addons==0.21.0", "keras2"),
        ("keras_hub", "keras3"),  # every KerasHub release calls Keras-3-only APIs, pinned or not
    ],
)
def test_packages_released_with_tensorflow_pin_it(project, installed, requirement, keras):
    installed({"tensorflow": "2.21.0"})
    project_pins.cache_clear()
    project_root.cache_clear()
    write(project / "requirements.txt", requirement + "\n")
    target = target_of(project / "train.py", TF_ONLY)
    assert (target.keras, target.assumed) == (keras, False)
    assert requirement in target.reason


def test_only_the_environment_means_an_assumed_target(project, installed):
    installed({"tensorflow": "2.21.0"})
    project_pins.cache_clear()
    project_root.cache_clear()
    target = target_of(project / "train.py", TF_ONLY)
    assert (target.keras, target.assumed) == ("keras3", True)
    assert 'set `target = "keras2"` or `"keras3"` in [tool.mplint]' in target.assumption


ASSUMED_LOOP = (
    "import tensorflow as tf\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    "opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())\n"
    "model = tf.keras.Sequential([tf.keras.layers.Dense(1, dtype='float32')])\n"
    "def step(x, y):\n"
    "    with tf.GradientTape() as tape:\n"
    "        loss = tf.reduce_mean((model(x) - y) ** 2)\n"
    "        scaled = opt.get_scaled_loss(loss)\n"
    "    grads = opt.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))\n"
    "    opt.apply_gradients(zip(grads, model.trainable_variables))\n"
)


def test_an_assumed_target_makes_its_fixes_unsafe_and_says_so(cli, project, installed):
    import json

    installed({"tensorflow": "2.21.0"})
    project_pins.cache_clear()
    project_root.cache_clear()
    write(project / "train.py", ASSUMED_LOOP)
    assert json.loads(cli(["--no-cache", "--output-format", "json", "train.py"], cwd=project).stdout) == [], \
        "an assumed target: the extended tier only"
    findings = json.loads(cli(["--no-cache", "--extended", "--output-format", "json", "train.py"], cwd=project).stdout)
    assert {f["code"] for f in findings} == {"MP404"}
    for finding in findings:
        assert "keras-target assumed: installed tensorflow 2.21.0 (Keras 3)" in finding["detail"] and "(keras-target assumed)" in finding["message"]
        assert finding["fix"] is None or finding["fix"]["applicability"] == "unsafe"
    write(project / "requirements.txt", "tensorflow==2.21.0\n")
    project_pins.cache_clear()
    findings = json.loads(cli(["--no-cache", "--output-format", "json", "train.py"], cwd=project).stdout)
    assert findings and all("assumed" not in f["message"] and f["tier"] == "default" for f in findings)
    # pins infer the target: the findings are in the default tier, their fixes unsafe until it is proved
    assert all(f["fix"] is None or f["fix"]["applicability"] == "unsafe" for f in findings)
    write(project / "mplint.toml", 'target = "keras3"\n')
    findings = json.loads(cli(["--no-cache", "--output-format", "json", "train.py"], cwd=project).stdout)
    assert any(f["fix"] and f["fix"]["applicability"] == "safe" for f in findings)


# -- what a file, a notebook's record and a README say about the TensorFlow it runs on -----

def test_a_file_using_tf1_only_apis_runs_on_tf1(project, installed):
    installed({"tensorflow": "2.21.0"})
    target = target_of(project / "train.py", "import tensorflow as tf\nsession = tf.Session()\n")
    assert (target.keras, target.before_stable_api, target.assumed) == ("keras2", True, False)
    assert "tensorflow.Session" in target.reason
    # tf.compat.v1 is how TF 2 runs TF 1.x code: no evidence of TF 1.x
    assert target_of(project / "t2.py", "import tensorflow as tf\nsession = tf.compat.v1.Session()\n").assumed


def _notebook(path, cells) -> None:
    import json

    write(path, json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": outputs, "source": source}
                                      for source, outputs in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}))


@pytest.mark.parametrize(
    "cells, keras, before_stable_api",
    [
        ([("import tensorflow as tf\nprint(tf.__version__)", [{"output_type": "stream", "name": "stdout", "text": ["2.0.0\n"]}])],
         "keras2", True),
        ([("tf.__version__", [{"output_type": "execute_result", "data": {"text/plain": ["'2.17.1'"]}, "metadata": {}}])],
         "keras3", False),
        ([("%tensorflow_version 1.x", [])], "keras2", True),
        ([("!pip install -q tensorflow-gpu==2.11.0", [])], "keras2", False),
        # numpy's version printed beside TensorFlow's: not read
        ([("print(np.__version__, tf.__version__)", [{"output_type": "stream", "name": "stdout", "text": ["1.26.4 2.0.0\n"]}])],
         None, None),
    ],
)
def test_a_notebook_says_what_it_ran_on(project, installed, cells, keras, before_stable_api):
    installed({"tensorflow": "2.21.0"})
    path = project / "demo.ipynb"
    _notebook(path, cells)
    found = target_module.notebook_target(json.loads(path.read_text()))
    if keras is None:
        assert found is None
    else:
        assert (found.keras, found.before_stable_api, found.assumed) == (keras, before_stable_api, False)


@pytest.mark.parametrize(
    "readme, keras, before_stable_api",
    [
        ("Notebooks for mixed precision in tf.keras (TensorFlow 2.0).\n", "keras2", True),
        ("- docker image tensorflow/tensorflow:2.4.0-gpu\n", "keras2", False),
        ("```\npip install tensorflow==2.17.0\n```\n", "keras3", False),
        # any specifier bounded from above: the newest TensorFlow it admits
        ('```\nconda install cudnn=8.1.0\npip install "tensorflow<2.11"\n```\n', "keras2", False),
        ("pip install 'tensorflow-gpu>=2.1,<2.4'\n", "keras2", True),
        ("pip install tensorflow~=2.17.0\n", "keras3", False),
        ("pip install tensorflow>=2.4\n", None, None),  # a lower bound says nothing
        ("Tested with TensorFlow 1.15 and TF 2.3.\n", "keras2", True),
        ("Requires TensorFlow 2.4+.\n", None, None),  # a lower bound says nothing
        # a pairing, not a lower bound
        ("Activate the TensorFlow2.1.0+Python3.6.8 Singularity image.\n", "keras2", True),
        ("Works with TensorFlow 2.0 or later.\n", None, None),
        ("Runs on TensorFlow 2.3 and TensorFlow 2.17.\n", None, None),  # they disagree
        ("A TensorFlow2 model (TF 2.x).\n", None, None),
        # a cited work's title names its own TensorFlow, not this code's
        ("Runs on tensorflow 2.3.\n\n1. [Transformers: NLP for TensorFlow 2.17 and PyTorch](https://github.com/x/y)\n",
         "keras2", True),
        ("- 像pytorch一样使用tensorflow1.14，具体使用下边会介绍。\n", "keras2", True),  # ideographs around it
        # a badge, or a link whose text is the version, declares it
        ("[![TensorFlow 2.3](https://img.shields.io/badge/TensorFlow-2.3-FF6F00)](https://example.org)\n", "keras2", True),
        ("Requires [TensorFlow v2.17.0](https://github.com/tensorflow/tensorflow/releases/tag/v2.17.0).\n", "keras3",
         False),
        # a major version alone: TF 1.x (a model zoo's "TensorFlow1" tree, an image name)
        ("**ResNet50 (TensorFlow1)**\n本仓库是在MLU上基于TensorFlow1框架实现的网络\n", "keras2", True),
        ("# IMAGE_NAME=tensorflow1-1.15.0-x86_64-ubuntu18.04\ncd ../../tensorflow2/tools/record_time/\n", "keras2", True),
        ("Written for TensorFlow 1.x.\n", "keras2", True),
        ("Ports of TensorFlow 1.x code to TensorFlow 2.\n", None, None),  # both majors: nothing
        ("Converts TF1 checkpoints.\n", None, None),  # "TF1" names checkpoints and code styles too
        ("- TensorFlow 1.x Compatibility: adapted for TF1-style execution in TF2 environments\n", None, None),
    ],
)
def test_a_readme_next_to_the_code_names_its_tensorflow(project, installed, readme, keras, before_stable_api):
    installed({"tensorflow": "2.21.0"})
    target_module.readme_target.cache_clear()
    target_module.forget_project_files()
    write(project / "bench" / "README.md", readme)
    target = target_of(project / "bench" / "code" / "train.py", TF_ONLY)
    if keras is None:
        assert target.assumed
    else:
        assert (target.keras, target.before_stable_api, target.assumed) == (keras, before_stable_api, False)
        assert target.reason.startswith("README.md names ")


def test_the_readme_of_a_sub_project_speaks_for_the_code_below_it(project, installed):
    """A model zoo: each model's folder has its own requirements file and README, far
    above its code; the checkout's front-page README says nothing of it."""
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "README.md", "Models for TensorFlow 2.17.\n")
    write(project / "zoo" / "nlp" / "transformer" / "requirements.txt", "requests\n")
    write(project / "zoo" / "nlp" / "transformer" / "README.md", "Built on the tensorflow1-1.15.0 image.\n")
    target = target_of(project / "zoo" / "nlp" / "transformer" / "models" / "nlp" / "modeling" / "x.py", TF_ONLY)
    assert (target.keras, target.tf1, target.assumed) == ("keras2", True, False)
    # a folder without a requirements file or a Dockerfile is no sub-project
    target_module.forget_project_files()
    write(project / "zoo" / "cv" / "README.md", "Built on TensorFlow 1.15.\n")
    assert target_of(project / "zoo" / "cv" / "a" / "b" / "c" / "x.py", TF_ONLY).assumed


def test_a_readme_three_folders_up_says_nothing(project, installed):
    installed({"tensorflow": "2.21.0"})
    target_module.readme_target.cache_clear()
    target_module.forget_project_files()
    write(project / "README.md", "Use TensorFlow 2.3.\n")
    assert target_of(project / "a" / "b" / "c" / "train.py", TF_ONLY).assumed


def test_a_dockerfile_in_a_docker_folder_or_named_dot_dockerfile(project, installed):
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "svc" / "dockerfile" / "train.Dockerfile", "FROM tensorflow/tensorflow:2.12.0-gpu\n")
    target = target_of(project / "svc" / "train.py", TF_ONLY)
    assert (target.keras, target.assumed) == ("keras2", False)
    assert target.reason == "dockerfile/train.Dockerfile builds on tensorflow/tensorflow:2.12.0-gpu"


@pytest.mark.parametrize(
    "text, what",
    [
        ("import tensorflow as tf\np = tf.keras.mixed_precision.experimental.Policy('mixed_float16')\n",
         "experimental mixed-precision API"),
        ("from tensorflow.python.keras.engine import training\n", "tensorflow.python.keras"),
        ("import tensorflow as tf\nopt = tf.keras.optimizers.Adam(lr=1e-3)\n", "`lr=`"),
        ("import tensorflow as tf\nstrategy.experimental_run_v2(step, args=(x,))\n", "experimental_run_v2"),
        ("import tensorflow as tf\nrate = model.optimizer.lr.numpy()\n", "`.lr`"),
        ("import tensorflow as tf\nimport tensorflow_hub as hub\nlayer = hub.KerasLayer(url)\n", "KerasLayer"),
        ("import tensorflow as tf\nx = tf.keras.Input(batch_input_shape=(1, 4))\n", "batch_input_shape"),
        ("import tensorflow as tf\nmodel.compile('sgd', experimental_run_tf_function=False)\n", "experimental_run_tf_function"),
        ("import tensorflow as tf\nmodel.fit_generator(gen, epochs=1)\n", "fit_generator"),
        ("import tensorflow as tf\nmodel.fit(\n    data(1),\n    epochs=3,\n    use_multiprocessing=True,\n)\n",
         "use_multiprocessing="),
        ("import tensorflow as tf\nmodel.predict(x, workers=4)\n", "use_multiprocessing="),
        ("import horovod.tensorflow.keras as hvd\nimport tensorflow as tf\nopt = hvd.DistributedOptimizer(opt)\n", "horovod"),
        ("import tensorflow as tf\nfrom tensorflow.keras.layers.experimental import preprocessing\n", "experimental.preprocessing"),
        ("import tensorflow as tf\nfrom official.vision.beta.tasks import video_classification\n", "official.vision.beta"),
        ("import tensorflow as tf\nimport tensorflow_compression as tfc\nlayer = tfc.SignalConv2D(8, (3, 3))\n",
         "TensorFlow Compression"),
    ],
)
def test_keras2_only_code_in_the_file_makes_an_assumed_keras2_target(project, installed, text, what):
    installed({"tensorflow": "2.21.0"})
    target = target_of(project / "train.py", text)
    assert (target.keras, target.assumed) == ("keras2", True)
    assert what in target.reason


def test_keras3_pydataset_loader_arguments_are_no_keras2_evidence(project, installed):
    """Keras 3 moved `workers`/`use_multiprocessing` to `PyDataset`'s constructor: only
    those of `fit`/`evaluate`/`predict` date the file."""
    installed({"tensorflow": "2.21.0"})
    text = ("import keras\nclass Data(keras.utils.PyDataset):\n    def __init__(self):\n"
            "        super().__init__(workers=4, use_multiprocessing=True)\nmodel.fit(Data(), epochs=1)\n")
    target = target_of(project / "train.py", text)
    assert (target.keras, target.assumed) == ("keras3", True)


def test_pins_decide_before_keras2_only_code_in_the_file(project, installed):
    """The project says which TensorFlow runs the code: Keras-2-era code there is just broken."""
    installed({"tensorflow": "2.21.0"})
    project_pins.cache_clear()
    project_root.cache_clear()
    write(project / "requirements.txt", "tensorflow==2.17.0\n")
    target = target_of(project / "train.py", "import tensorflow as tf\nopt = tf.keras.optimizers.Adam(lr=1e-3)\n")
    assert (target.keras, target.assumed) == ("keras3", False)


def test_a_dockerfile_that_pip_installs_tensorflow_decides_before_a_nearer_readme(project, installed):
    """A CUDA image that installs TensorFlow with pip (versions in ENV/ARG) says which one;
    a README's prose ("TensorFlow 2.1 implementation of ...") is weaker evidence."""
    installed({"tensorflow": "2.21.0"})
    target_module.container_target.cache_clear()
    target_module.readme_target.cache_clear()
    project_root.cache_clear()
    write(project / "nlp" / "Dockerfile", "FROM nvidia/cuda:11.0-devel-ubuntu18.04\nENV TENSORFLOW_PIP=tensorflow\n"
          "ENV TENSORFLOW_VERSION=2.4.0\nRUN pip install ${TENSORFLOW_PIP}==${TENSORFLOW_VERSION}\n")
    write(project / "nlp" / "albert" / "README.md", "TensorFlow 2.1 implementation of ALBERT.\n")
    target = target_of(project / "nlp" / "albert" / "run_squad.py", TF_ONLY)
    assert (target.keras, target.before_stable_api, target.assumed) == ("keras2", False, False)
    assert target.reason == "Dockerfile installs tensorflow 2.4"


@pytest.mark.parametrize(
    "image, keras, before_stable_api",
    [
        ("763104351884.dkr.ecr.us-east-1.amazonaws.com/tensorflow-training:2.2.0-gpu-py37-cu101-ubuntu18.04", "keras2", True),
        ("763104351884.dkr.ecr.us-west-2.amazonaws.com/tensorflow-training:2.13.0-gpu-py310", "keras2", False),
        ("gcr.io/deeplearning-platform-release/tf2-gpu.2-3", "keras2", True),
        ("gcr.io/deeplearning-platform-release/tf2-gpu.2-17", "keras3", False),
    ],
)
def test_cloud_deep_learning_container_images(project, installed, image, keras, before_stable_api):
    installed({"tensorflow": "2.21.0"})
    target_module.forget_project_files()
    write(project / "Dockerfile", f"FROM {image}\n")
    target = target_of(project / "train.py", TF_ONLY)
    assert (target.keras, target.before_stable_api, target.assumed) == (keras, before_stable_api, False)


def test_a_sagemaker_launcher_next_to_the_code_names_its_tensorflow(project, installed):
    installed({"tensorflow": "2.21.0"})
    target_module.launcher_target.cache_clear()
    target_module.forget_project_files()
    write(project / "ci" / "run_sagemaker.py", "from sagemaker.tensorflow import TensorFlow\n"
          "estimator = TensorFlow(entry_point='train.py', framework_version='2.1.0', py_version='py3')\n")
    target = target_of(project / "ci" / "train.py", TF_ONLY)
    assert (target.keras, target.before_stable_api, target.assumed) == ("keras2", True, False)
    assert "framework_version" in target.reason


def test_experimental_make_numpy_dataset_dates_the_file_before_tf_2_4(project, installed):
    installed({"tensorflow": "2.21.0"})
    target = target_of(project / "train.py", "import tensorflow as tf\nds = strategy.experimental_make_numpy_dataset(x)\n")
    assert (target.keras, target.before_stable_api) == ("keras2", True)


def test_experimental_run_v2_dates_the_file_before_tf_2_4(project, installed):
    installed({"tensorflow": "2.21.0"})
    target = target_of(project / "train.py", "import tensorflow as tf\nstrategy.experimental_run_v2(step)\n"
                       "opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(opt, 'dynamic')\n")
    assert (target.keras, target.before_stable_api) == ("keras2", True)


@pytest.mark.parametrize(
    "check, era",
    [
        ('if version(tf.__version__) >= version("2.4.0"):\n    pass\n', True),
        ("assert tf.__version__ >= '2.3'\n", True),
        ('if tf.__version__ < "2.16":\n    pass\n', False),  # Keras 3 aware
        ("print(tf.__version__)\n", False),
    ],
)
def test_a_check_of_the_tensorflow_version_dates_the_file(project, installed, check, era):
    installed({"tensorflow": "2.21.0"})
    target = target_of(project / "train.py", "import tensorflow as tf\n" + check)
    assert (target.keras == "keras2") is era
    assert not era or target.reason.startswith("the file checks the TensorFlow version")
    assert target.assumed


def _fresh_project_caches() -> None:
    target_module.forget_project_files()


@pytest.mark.parametrize("requirements, expected, image_named", [
    # `Keras==2.3.1` says Keras 2, not which TensorFlow: the image the project runs in
    # (`tensorflow/tensorflow:1.15.2`) does, so the target is TensorFlow 1.x
    ("numpy==1.18.0\nKeras==2.3.1\n", ("keras2", True, True), True),
    # a TensorFlow pin says it itself: the image does not override it
    ("tensorflow==2.5.0\n", ("keras2", False, False), False),
])
def test_pins_that_name_only_keras_take_the_tensorflow_version_from_the_image(project, installed, requirements,
                                                                               expected, image_named):
    installed({"tensorflow": "2.21.0"})
    _fresh_project_caches()
    write(project / "requirements.txt", requirements)
    write(project / "Dockerfile", "FROM tensorflow/tensorflow:1.15.2-gpu-py3\n")
    target = target_of(project / "train.py", TF_ONLY)
    assert (target.keras, target.tf1, target.before_stable_api) == expected
    assert ("tensorflow/tensorflow:1.15.2-gpu-py3" in target.reason) is image_named


def test_the_graph_rewrite_of_a_project_whose_image_is_tensorflow_1_is_not_reported(project, installed, cli):
    installed({"tensorflow": "2.21.0"})
    _fresh_project_caches()
    write(project / "requirements.txt", "Keras==2.3.1\n")
    write(project / "Dockerfile", "FROM tensorflow/tensorflow:1.15.2-gpu-py3\n")
    write(project / "train.py", (
        "import tensorflow as tf\n"
        "optimizer = tf.keras.optimizers.SGD(0.1)\n"
        "optimizer = tf.train.experimental.enable_mixed_precision_graph_rewrite(optimizer)\n"
    ))
    result = cli(["--no-cache", "--output-format", "json", "--select", "MP403", "train.py"], cwd=project)
    assert json.loads(result.stdout) == []
    (project / "Dockerfile").unlink()
    _fresh_project_caches()
    result = cli(["--no-cache", "--output-format", "json", "--select", "MP403", "train.py"], cwd=project)
    assert [f["code"] for f in json.loads(result.stdout)] == ["MP403"]


TRAIN_STEP_KERAS2 = (
    "import tensorflow as tf\n"
    "class Trainer(tf.keras.Model):\n"
    "    def train_step(self, data):\n"
    "        x, y = data\n"
    "        with tf.GradientTape() as tape:\n"
    "            loss = self.compiled_loss(y, self(x))\n"
    "            scaled = self.optimizer.get_scaled_loss(loss)\n"
    "        grads = self.optimizer.get_unscaled_gradients(tape.gradient(scaled, self.trainable_variables))\n"
    "        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))\n"
    "        return {'loss': loss}\n"
)


def test_keras2_era_code_in_another_module_dates_the_project(cli, project, installed):
    """utils.py sets the experimental mixed-precision API (TF 2.1-2.8): the project was
    written for Keras 2, so model.py's `get_scaled_loss` is no Keras 3 AttributeError."""
    installed({"tensorflow": "2.21.0"})
    write(project / "model.py", TRAIN_STEP_KERAS2)
    write(project / "utils.py", (
        "from tensorflow.keras.mixed_precision import experimental as mixed_precision\n"
        "def configure():\n    mixed_precision.set_policy('mixed_float16')\n"
    ))
    result = cli(["--no-cache", "--extended", "--output-format", "json", "--select", "MP404", "--verbose", "model.py"],
                 cwd=project)
    assert json.loads(result.stdout) == []
    assert "model.py: target keras2 (the project: utils.py has Keras-2-era code)" in result.stderr
    # Keras-3-only code anywhere in the project: nothing dates it, the environment decides.
    write(project / "ops_user.py", "import keras\nx = keras.ops.ones((2,))\n")
    result = cli(["--no-cache", "--extended", "--output-format", "json", "--select", "MP404", "model.py"], cwd=project)
    assert {f["code"] for f in json.loads(result.stdout)} == {"MP404"}


def test_a_dockerfile_in_a_folder_named_dockerfile_is_read(project, installed):
    installed({"tensorflow": "2.21.0"})
    _fresh_project_caches()
    write(project / "Dockerfile" / "Dockerfile", "FROM tensorflow/tensorflow:2.3.0-gpu\n")
    target = target_of(project / "train.py", TF_ONLY)
    assert (target.keras, target.before_stable_api, target.assumed) == ("keras2", True, False)
    assert target.reason == "Dockerfile/Dockerfile builds on tensorflow/tensorflow:2.3.0-gpu"


TF1_AMP_SWITCH = (
    "import os\n"
    "import tensorflow as tf\n"
    "os.environ['TF_ENABLE_AUTO_MIXED_PRECISION'] = '1'\n"
    "x = tf.placeholder(tf.float32, [None, 4])\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
)


def test_an_ngc_image_of_the_project_contradicts_the_stock_tensorflow_premise(project, installed, cli):
    # `docker/dockerfile_tf15_amp` (a lower-case name) builds on NVIDIA's image, where the
    # switch works: "keep it for NGC" is no default finding there.
    installed({"tensorflow": "2.21.0"})
    _fresh_project_caches()
    write(project / "train.py", TF1_AMP_SWITCH)
    result = cli(["--no-cache", "--output-format", "json", "--select", "MP403", "train.py"], cwd=project)
    assert [f["code"] for f in json.loads(result.stdout)] == ["MP403"]
    write(project / "docker" / "dockerfile_tf15_amp", "FROM nvcr.io/nvidia/tensorflow:20.06-tf1-py3\n")
    _fresh_project_caches()
    result = cli(["--no-cache", "--output-format", "json", "--select", "MP403", "train.py"], cwd=project)
    assert json.loads(result.stdout) == []
    result = cli(["--no-cache", "--extended", "--output-format", "json", "--select", "MP403", "train.py"], cwd=project)
    (finding,) = json.loads(result.stdout)
    build = [p for p in finding["premises"] if p["fact"] == "tensorflow-build"]
    assert build and build[0]["status"] == "conflicting"
    assert "docker/dockerfile_tf15_amp builds on nvcr.io/nvidia/tensorflow:20.06-tf1-py3" in build[0]["evidence"]


def test_dockerfiles_that_disagree_on_the_keras_decide_nothing(project, installed):
    installed({"tensorflow": "2.21.0"})
    _fresh_project_caches()
    write(project / "docker" / "Dockerfile.legacy", "FROM tensorflow/tensorflow:2.4.1-gpu\n")
    write(project / "docker" / "Dockerfile", "FROM tensorflow/tensorflow:2.17.0-gpu\n")
    target = target_of(project / "train.py", TF_ONLY)
    assert target.source != "container" and "builds on" not in target.reason
    (project / "docker" / "Dockerfile").unlink()
    write(project / "docker" / "dockerfile_gpu", "FROM tensorflow/tensorflow:2.3.0-gpu\n")
    _fresh_project_caches()
    target = target_of(project / "train.py", TF_ONLY)
    assert (target.keras, target.newest_tensorflow) == ("keras2", (2, 4))
    assert "docker/Dockerfile.legacy builds on tensorflow/tensorflow:2.4.1-gpu" in target.reason
