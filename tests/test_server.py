"""`mplint server`: commands handed to a resident process give exactly what a local run
gives (output, exit code, stdin), and a missing server changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import MPLINT_EXE, write

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the server forks")

MIXED = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'
# the sample's MP103 is a medium-precision rule (bench/rule_precision.py): extended tier
EXTENDED = "extended = true\n"


def _mplint(args, cwd, env, stdin=""):
    proc = subprocess.run([str(MPLINT_EXE), *args], cwd=cwd, env=env, input=stdin, capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def server(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MPLINT_NO_SERVER", "NO_COLOR", "FORCE_COLOR")}
    env["MPLINT_SERVER_DIR"] = str(tmp_path / "server")
    code, out, err = _mplint(["server", "start", "--idle-minutes", "5"], tmp_path, env)
    assert code == 0, err
    yield env
    _mplint(["server", "stop"], tmp_path, env)


def _served(env, cwd) -> int:
    code, out, _ = _mplint(["server", "status"], cwd, env)
    assert code == 0, out
    return int(out.split(", ")[1].split()[0])


def test_a_served_command_gives_what_a_local_run_gives(server, tmp_path):
    project = tmp_path / "project"
    write(project / "a.py", MIXED)
    write(project / "mplint.toml", EXTENDED)
    write(project / "b.py", "print('nothing to see')\n")
    local_env = dict(server, MPLINT_NO_SERVER="1")
    for args in (["check", "a.py"], ["--output-format", "json", "."], ["check", "--no-cache", "b.py"],
                 ["check", "--select", "NOPE", "."]):
        before = _served(server, project)
        served = _mplint(args, project, server)
        assert _served(server, project) == before + 1, "the server ran it"
        assert served == _mplint(args, project, local_env), args
    assert _mplint(["check", "a.py"], project, server)[0] == 1
    assert _mplint(["check", "--select", "NOPE", "."], project, server)[0] == 2


def test_stdin_and_the_environment_reach_the_served_command(server, tmp_path):
    write(tmp_path / "mplint.toml", EXTENDED)
    code, out, _ = _mplint(["check", "--stdin-filename", "train.py"], tmp_path, server, stdin=MIXED)
    assert code == 1 and "train.py:2:1: MP103" in out
    env = dict(server, MPLINT_OUTPUT_FORMAT="json")
    code, out, _ = _mplint(["check", "-", "--exit-zero"], tmp_path, env, stdin=MIXED)
    assert code == 0 and out.lstrip().startswith("[")


def test_without_a_server_the_command_runs_here(tmp_path):
    env = dict(os.environ, MPLINT_SERVER_DIR=str(tmp_path / "none"))
    write(tmp_path / "a.py", MIXED)
    write(tmp_path / "mplint.toml", EXTENDED)
    code, out, err = _mplint(["check", "a.py"], tmp_path, env)
    assert code == 1 and "MP103" in out
    assert _mplint(["server", "status"], tmp_path, env)[0] == 1


def test_python_dash_m_uses_the_same_entry_point(server, tmp_path):
    write(tmp_path / "a.py", MIXED)
    write(tmp_path / "mplint.toml", EXTENDED)
    before = _served(server, tmp_path)
    proc = subprocess.run([sys.executable, "-m", "mplint", "check", "a.py"], cwd=tmp_path, env=server,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "MP103" in proc.stdout
    assert _served(server, tmp_path) == before + 1


TRAIN = (
    "import tensorflow as tf\n"
    "from model import build\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    "model = build()\n"
)
MODEL = (
    "import tensorflow as tf\n"
    "def build():\n"
    "    return tf.keras.Sequential([tf.keras.layers.Dense(16), tf.keras.layers.Dense(10, activation='softmax')])\n"
)


def _codes(output: str) -> list[tuple[str, str]]:
    import json

    return [(f["filename"], f["code"]) for f in json.loads(output)]


def test_the_server_keeps_the_project_warm_and_follows_edits(server, tmp_path):
    """The server keeps the project index between commands and refreshes it from the
    files on disk: after each edit (the policy dropped, set again, a file added, an edit
    that changes nothing the solution rests on) a served check of the other module says
    exactly what a local run says."""
    project = tmp_path / "project"
    write(project / "pyproject.toml", "[tool.mplint]\n")
    write(project / "train.py", TRAIN)
    write(project / "model.py", MODEL)
    local_env = dict(server, MPLINT_NO_SERVER="1")
    args = ["check", "--output-format", "json", "--exit-zero", "model.py"]

    def same_as_local() -> list[tuple[str, str]]:
        served = _mplint(args, project, server)
        assert served == _mplint(args, project, local_env)
        return _codes(served[1])

    assert same_as_local() == [("model.py", "MP101")]
    assert _mplint(["server", "status"], project, server)[1].rstrip().endswith(f"1 project kept warm: {project})")
    write(project / "train.py", TRAIN.replace("mixed_float16", "float32"))
    assert same_as_local() == []
    write(project / "train.py", TRAIN + "steps = 10\n")  # back to mixed, and a new constant
    assert same_as_local() == [("model.py", "MP101")]
    write(project / "train.py", TRAIN + "steps = 10\nprint(model)\n")  # the same flow: the solution stands
    assert same_as_local() == [("model.py", "MP101")]
    write(project / "launch.py", "import train\n")  # a new file: the index is built again
    assert same_as_local() == [("model.py", "MP101")]
    write(project / "model.py", MODEL.replace("activation='softmax'", "activation='softmax', dtype='float32'"))
    assert same_as_local() == []
