"""The pre-commit hooks (.pre-commit-hooks.yaml), run by the real `pre-commit try-repo`
against a temporary git repository.

pre-commit builds a virtualenv for the hook repository and runs `pip install .` in it.
To work offline (and not download anything in CI either), the test points the hook's
environment at the dependencies already installed for the tests: PYTHONPATH holds the
test interpreter's site-packages, pip is told to use no index (`PIP_NO_INDEX`) and to
build without isolation (`PIP_NO_BUILD_ISOLATION=0` disables it), so pip finds
libcst/click/pathspec/setuptools already there and installs only mplint itself, from
the hook repository, into the hook's own environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat import v4

ROOT = Path(__file__).resolve().parent.parent
HOOK_REPO_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "mplint", "rules")

# A model that ends in float16 under the mixed policy (MP101, safe fix).
FLOAT16_MODEL = (
    "import tensorflow as tf\n"
    "\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    "model = tf.keras.Sequential([\n"
    "    tf.keras.layers.Dense(64, activation='relu'),\n"
    "    tf.keras.layers.Dense(10, activation='softmax'),\n"
    "])\n"
)
FIXED_MODEL = FLOAT16_MODEL.replace(
    "    tf.keras.layers.Dense(10, activation='softmax'),\n",
    "    tf.keras.layers.Dense(10),\n    tf.keras.layers.Activation('softmax', dtype='float32'),\n",
)
# A functional regressor that ends in float16 (MP101 on another model shape, safe fix).
FLOAT16_REGRESSOR = (
    "import tensorflow as tf\n"
    "\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    "inputs = tf.keras.Input((8,))\n"
    "outputs = tf.keras.layers.Dense(1)(inputs)\n"
    "regressor = tf.keras.Model(inputs, outputs)\n"
    "regressor.compile(loss='mse')\n"
)
FIXED_REGRESSOR = FLOAT16_REGRESSOR.replace(
    "outputs = tf.keras.layers.Dense(1)(inputs)\n",
    "outputs = tf.keras.layers.Dense(1)(inputs)\n"
    "outputs = tf.keras.layers.Activation(\"linear\", dtype=\"float32\")(outputs)\n",
)


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com",
                    "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
                   cwd=cwd, check=True, capture_output=True)


def hook_repository(folder: Path) -> Path:
    """A git repository holding this checkout's hooks file and package (uncommitted
    work included), as users' pre-commit would clone it."""
    folder.mkdir()
    for name in HOOK_REPO_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, folder / name)
    git("init", "-q", cwd=folder)
    git("add", "-A", cwd=folder)
    git("commit", "-q", "-m", "hooks", cwd=folder)
    return folder


def hook_environment(home: Path) -> dict[str, str]:
    site_packages = [p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))]
    env = dict(os.environ)
    env.update(
        PRE_COMMIT_HOME=str(home),
        PYTHONPATH=os.pathsep.join(site_packages),
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PRE_COMMIT_COLOR="never",
    )
    env.pop("VIRTUAL_ENV", None)
    return env


def pre_commit(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=540)


def readme_precommit_config() -> dict:
    """The README's .pre-commit-config.yaml snippet (the one docs/integrations.md shows too)."""
    import re

    snippets = []
    for document in (ROOT / "README.md", ROOT / "docs" / "integrations.md"):
        text = document.read_text(encoding="utf-8")
        snippets += [yaml.safe_load(block) for block in re.findall(r"```yaml\n(repos:.*?)```", text, re.S)]
    assert len(snippets) == 2 and snippets[0]["repos"][0]["rev"] == snippets[1]["repos"][0]["rev"]
    return snippets[0]


def test_readme_precommit_snippet_names_the_hooks_and_a_usable_rev():
    (repo,) = readme_precommit_config()["repos"]
    hooks = {hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert {hook["id"] for hook in repo["hooks"]} <= hooks
    # A branch that exists (pre-commit accepts it, with a warning) until the documented
    # `pre-commit autoupdate --freeze` pins it; never a tag that may not exist.
    assert repo["rev"] == "main"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pre-commit autoupdate --freeze" in readme


def test_hooks_file_declares_check_and_fix_hooks():
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"mplint", "mplint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "jupyter"]
        assert "--force-exclude" in hook["entry"]
        assert hook.get("pass_filenames", True) is True
    assert "--fix" not in hooks["mplint"]["entry"] and "--fix" in hooks["mplint-fix"]["entry"]
    assert "--unsafe-fixes" not in hooks["mplint-fix"]["entry"]


@pytest.mark.slow
def test_try_repo_checks_and_fixes_only_staged_files(tmp_path):
    hooks = hook_repository(tmp_path / "hooks")
    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / "pyproject.toml").write_text('[tool.mplint]\nexclude = ["generated/"]\n', encoding="utf-8")
    (project / "model.py").write_text(FLOAT16_MODEL, encoding="utf-8")
    (project / "regressor.py").write_text(FLOAT16_REGRESSOR, encoding="utf-8")
    (project / "generated").mkdir()
    (project / "generated" / "model_pb.py").write_text(FLOAT16_MODEL, encoding="utf-8")
    (project / "notebooks").mkdir()
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_markdown_cell("# Train"),
                      v4.new_code_cell("%matplotlib inline\n" + FLOAT16_MODEL, execution_count=1,
                                       outputs=[v4.new_output("stream", name="stdout", text="ok\n")])]
    nbformat.write(notebook, str(project / "notebooks" / "train.ipynb"))
    git("add", "pyproject.toml", "model.py", "regressor.py", "generated/model_pb.py", "notebooks/train.ipynb", cwd=project)
    # Not staged: pre-commit must not pass it to the hooks.
    (project / "scratch.py").write_text(FLOAT16_MODEL, encoding="utf-8")
    env = hook_environment(tmp_path / "pre-commit-home")

    checked = pre_commit("try-repo", str(hooks), "mplint", "--verbose", cwd=project, env=env)
    output = checked.stdout + checked.stderr
    assert checked.returncode == 1, output
    assert "mplint" in output and "Failed" in output
    assert "model.py:6:5: MP101" in output
    assert "regressor.py:5:11: MP101" in output
    assert "notebooks/train.ipynb:cell 2:7:5: MP101" in output
    assert "scratch.py" not in output  # not staged
    assert "generated/" not in output  # excluded by the project's config, even when named
    assert (project / "model.py").read_text(encoding="utf-8") == FLOAT16_MODEL

    # The README's way: its .pre-commit-config.yaml snippet, naming the hook repository
    # (here a local clone), with the fix hook (plain --fix: safe fixes); then its pinning
    # step, `pre-commit autoupdate --freeze`, turns `rev: main` into the commit SHA.
    config = readme_precommit_config()
    (repo,) = config["repos"]
    assert repo["rev"] == "main" and repo["repo"].endswith("/mplint")
    repo["repo"] = str(hooks)
    repo["hooks"] = [{"id": "mplint-fix"}]
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    pinned = pre_commit("autoupdate", "--freeze", cwd=project, env=env)
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hooks, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert yaml.safe_load((project / ".pre-commit-config.yaml").read_text())["repos"][0]["rev"] == sha
    git("add", ".pre-commit-config.yaml", cwd=project)
    fixed = pre_commit("run", "--verbose", cwd=project, env=env)
    output = fixed.stdout + fixed.stderr
    assert fixed.returncode == 1, output  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in output
    assert "MP101" not in output  # fixed, nothing left
    assert (project / "regressor.py").read_text(encoding="utf-8") == FIXED_REGRESSOR
    assert (project / "model.py").read_text(encoding="utf-8") == FIXED_MODEL
    assert (project / "generated" / "model_pb.py").read_text(encoding="utf-8") == FLOAT16_MODEL
    assert (project / "scratch.py").read_text(encoding="utf-8") == FLOAT16_MODEL
    git("add", "-u", cwd=project)
    again = pre_commit("run", "--verbose", cwd=project, env=env)
    assert again.returncode == 0, again.stdout + again.stderr  # nothing left to fix
    fixed_notebook = nbformat.read(str(project / "notebooks" / "train.ipynb"), as_version=4)
    nbformat.validate(fixed_notebook)
    assert fixed_notebook.cells[1].source == "%matplotlib inline\n" + FIXED_MODEL
    assert fixed_notebook.cells[1].outputs == notebook.cells[1].outputs
