"""The Keras 3 backend of a file (mplint.facts.backend): each step of the decision
order, what counts in the project, and `mplint check --verbose` showing it."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from mplint.facts.backend import Evidence, decide_backend, forget_project_evidence, project_evidence
from mplint.facts.module import ModuleFacts
from tests.conftest import write


@pytest.fixture
def project(tmp_path, monkeypatch):
    """An empty git checkout, in an environment that says nothing about the backend."""
    (tmp_path / ".git").mkdir()
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "no-keras-home"))
    return tmp_path


def backend_of(path, text: str, project=None):
    text = textwrap.dedent(text)
    write(path, text)
    return ModuleFacts(cst.parse_module(text), text, str(path), project_backend=project).backend


JAX_STEP = """
    import jax
    import keras

    class Model(keras.Model):
        def train_step(self, state, data):
            grad_fn = jax.value_and_grad(self.compute_loss_and_updates, has_aux=True)
            return grad_fn(state, data)
"""

TORCH_STEP = """
    import keras

    class Model(keras.Model):
        def train_step(self, data):
            self.zero_grad()
            loss = self.compute_loss(y=data[1], y_pred=self(data[0]))
            loss.backward()
"""


@pytest.mark.parametrize("setting", [
    'os.environ["KERAS_BACKEND"] = "jax"',
    "os.environ['KERAS_BACKEND'] = 'jax'",
    'os.environ.setdefault("KERAS_BACKEND", "jax")',
    'os.environ.update({"KERAS_BACKEND": "jax"})',
    'os.environ.update(KERAS_BACKEND="jax")',
    'BACKEND = "jax"\nos.environ["KERAS_BACKEND"] = BACKEND',
])
def test_the_file_sets_it_before_importing_keras(project, setting):
    backend = backend_of(project / "train.py", f"import os\n{setting}\nimport keras\n")
    assert (backend.name, backend.source) == ("jax", "file")
    assert "the file sets KERAS_BACKEND=jax" in backend.reason


def test_set_backend_counts_wherever_it_is(project):
    backend = backend_of(project / "train.py", 'import keras\nkeras.config.set_backend("torch")\n')
    assert (backend.name, backend.source) == ("torch", "file")
    assert "keras.config.set_backend" in backend.reason


def test_settings_that_keras_never_sees_do_not_count(project):
    late = backend_of(project / "late.py", 'import os\nimport keras\nos.environ["KERAS_BACKEND"] = "jax"\n')
    assert (late.name, late.source) == ("tensorflow", "default")
    assert "after importing Keras: no effect" in late.reason
    in_function = backend_of(project / "main.py", """
        import os
        import keras

        def main():
            os.environ["KERAS_BACKEND"] = "jax"
    """)
    assert in_function.name == "tensorflow" and "no effect" in in_function.reason
    putenv = backend_of(project / "putenv.py", 'import os\nos.putenv("KERAS_BACKEND", "jax")\nimport keras\n')
    assert putenv.name == "tensorflow" and "does not change os.environ" in putenv.reason
    unknown = backend_of(project / "flag.py", 'import os, sys\nos.environ["KERAS_BACKEND"] = sys.argv[1]\nimport keras\n')
    assert unknown.name == "tensorflow" and "a value mplint cannot read" in unknown.reason


def test_a_setting_in_a_function_before_its_own_keras_import_counts(project):
    backend = backend_of(project / "main.py", """
        import os

        def main():
            os.environ["KERAS_BACKEND"] = "jax"
            import keras
    """)
    assert (backend.name, backend.source) == ("jax", "file")


def test_train_steps_that_only_run_on_one_backend(project):
    jax = backend_of(project / "jax_step.py", JAX_STEP)
    assert (jax.name, jax.source, jax.reason) == ("jax", "code", "Model.train_step uses JAX APIs")
    torch = backend_of(project / "torch_step.py", TORCH_STEP)
    assert (torch.name, torch.reason) == ("torch", "Model.train_step uses torch APIs")
    tf = backend_of(project / "tf_step.py", """
        import tensorflow as tf

        class Model(tf.keras.Model):
            def train_step(self, data):
                with tf.GradientTape() as tape:
                    loss = self.compute_loss(y=data[1], y_pred=self(data[0]))
    """)
    assert (tf.name, tf.source) == ("tensorflow", "code")


def test_steps_for_several_backends_decide_nothing(project):
    both = backend_of(project / "both.py", textwrap.dedent(JAX_STEP) + textwrap.dedent(TORCH_STEP).replace("import keras\n", ""))
    assert (both.name, both.source) == ("tensorflow", "default")
    assert "train steps for jax and torch" in both.reason


def test_the_file_outranks_its_code(project):
    backend = backend_of(project / "train.py", 'import os\nos.environ["KERAS_BACKEND"] = "torch"\n' + textwrap.dedent(JAX_STEP))
    assert (backend.name, backend.source) == ("torch", "file")


def test_a_conftest_above_the_file(project):
    write(project / "tests" / "conftest.py", 'import os\n\nos.environ["KERAS_BACKEND"] = "jax"\n')
    backend = backend_of(project / "tests" / "models" / "test_model.py", "import keras\n")
    assert (backend.name, backend.source) == ("jax", "project")
    assert backend.reason == "../conftest.py (pytest) sets KERAS_BACKEND=jax"
    elsewhere = backend_of(project / "src" / "model.py", "import keras\n")
    assert elsewhere.name == "tensorflow"  # not under the conftest's folder


def test_a_config_module_imported_before_keras(project):
    write(project / "settings.py", 'import os\nos.environ.setdefault("KERAS_BACKEND", "torch")\n')
    write(project / "pkg" / "__init__.py", "")
    write(project / "pkg" / "env.py", 'import os\nos.environ["KERAS_BACKEND"] = "jax"\n')
    first = backend_of(project / "train.py", "import settings\nimport keras\n")
    assert (first.name, first.source) == ("torch", "project")
    assert "settings.py, imported before Keras, sets KERAS_BACKEND=torch" in first.reason
    relative = backend_of(project / "pkg" / "train.py", "from . import env\nimport keras\n")
    assert relative.name == "jax"
    after = backend_of(project / "late.py", "import keras\nimport settings\n")
    assert after.name == "tensorflow"  # Keras already chose its backend


def test_dotenv_and_keras_json_in_the_project(project):
    write(project / ".env", "# local settings\nexport KERAS_BACKEND=torch\n")
    assert backend_of(project / "a.py", "import keras\n").reason == ".env sets KERAS_BACKEND=torch"
    (project / ".env").unlink()
    forget_project_evidence()  # files read are remembered until a project file changes
    write(project / ".keras" / "keras.json", '{"backend": "jax", "floatx": "float32"}')
    backend = backend_of(project / "src" / "b.py", "import keras\n")
    assert (backend.name, backend.source) == ("jax", "project")
    assert "the project's ../.keras/keras.json says backend 'jax'" == backend.reason


def test_the_environment_then_the_default(project, monkeypatch):
    assert backend_of(project / "a.py", "import keras\n").describe() == \
        "tensorflow (Keras's default: nothing sets KERAS_BACKEND)"
    home = project / "home"
    write(home / "keras.json", '{"backend": "jax"}')
    monkeypatch.setenv("KERAS_HOME", str(home))
    backend = backend_of(project / "b.py", "import keras\n")
    assert (backend.name, backend.source) == ("jax", "environment")
    monkeypatch.setenv("KERAS_BACKEND", "torch")  # the variable outranks keras.json, as in Keras
    assert backend_of(project / "c.py", "import keras\n").reason == "KERAS_BACKEND=torch in mplint's environment"


def test_project_evidence_is_an_input():
    """A project index can hand its evidence in; then no folder is read."""
    given = [Evidence("jax", "config/keras_env.py sets KERAS_BACKEND=jax (project index)")]
    decided = decide_backend([], [], given, [Evidence("torch", "environment")])
    assert (decided.name, decided.source, decided.reason) == ("jax", "project", given[0].reason)
    assert decide_backend([Evidence(None, "unreadable")], [], given).reason.endswith("(unreadable)")


def test_supplied_project_evidence_replaces_the_scan(project):
    write(project / "conftest.py", 'import os\nos.environ["KERAS_BACKEND"] = "jax"\n')
    assert project_evidence(str(project / "t.py"))[0].backend == "jax"
    backend = backend_of(project / "t.py", "import keras\n", project=[Evidence("torch", "the index says so")])
    assert (backend.name, backend.reason) == ("torch", "the index says so")


def test_verbose_shows_the_backend(cli, project):
    write(project / "train.py", 'import os\nos.environ["KERAS_BACKEND"] = "jax"\nimport keras\n'
          'keras.mixed_precision.set_dtype_policy("mixed_float16")\n')
    result = cli(["--no-cache", "--verbose", "train.py"], cwd=project)
    assert "train.py: target keras3 (" in result.stderr
    assert "; backend jax (the file sets KERAS_BACKEND=jax with os.environ[...] =)" in result.stderr
