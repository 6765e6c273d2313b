"""A policy set in train.py applies to the project modules it imports."""

from __future__ import annotations

import json

from mplint.policy_inheritance import PolicyGraph, imported_modules, mixed_policy_set
from tests.conftest import write

TRAIN = (
    "import tensorflow as tf\n"
    "from model import build\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
)


def test_detects_the_policy_a_module_sets():
    assert mixed_policy_set("mp.set_global_policy('mixed_float16')") == "mixed_float16"
    assert mixed_policy_set('keras.mixed_precision.set_dtype_policy(Policy("mixed_bfloat16"))') == "mixed_bfloat16"
    assert mixed_policy_set("p = 'mixed_float16'\nif amp:\n    set_global_policy(p)") == "mixed_float16"
    assert mixed_policy_set("set_global_policy('float32')") is None
    assert mixed_policy_set("x = 'mixed_float16'") is None


def test_reads_imports():
    text = "import a.b as c, d\nfrom .models import (\n    net,\n    head as h,\n)\nfrom . import util\n"
    assert imported_modules(text) == [(".models", ["net", "head"]), (".", ["util"]), ("a.b", []), ("d", [])]


def test_graph_follows_direct_imports_only(tmp_path):
    graph = PolicyGraph(roots=[str(tmp_path)])
    files = {
        "train.py": "from pkg.model import build\nset_global_policy('mixed_float16')\n",
        "pkg/__init__.py": "",
        "pkg/model.py": "import keras\nfrom .blocks import block\n",
        "pkg/blocks.py": "import keras\n",
        "unrelated.py": "import keras\n",
    }
    for name, text in files.items():
        graph.add(str(tmp_path / name), text, relevant="keras" in text or "policy" in text)
    inherited = graph.inherited()
    # model.py builds on blocks.py: its blocks are components, not the trained model.
    assert sorted(p.rsplit("/", 1)[-1] for p in inherited) == ["model.py"]
    assert {policy for policy, _ in inherited.values()} == {"mixed_float16"}


SOFTMAX_MODEL = (
    "import tensorflow as tf\n"
    "def build():\n"
    "    return tf.keras.Sequential([tf.keras.layers.Dense(16), tf.keras.layers.Dense(10, activation='softmax')])\n"
)


def test_imported_model_module_is_checked_under_the_policy(cli, tmp_path):
    write(tmp_path / "train.py", TRAIN)
    write(tmp_path / "model.py", SOFTMAX_MODEL)
    result = cli(["--no-cache", "--output-format", "json", "--verbose", "."], cwd=tmp_path)
    assert [(f["filename"], f["code"]) for f in json.loads(result.stdout)] == [("model.py", "MP101")]
    assert "model.py: target" in result.stderr
    assert "policy mixed_float16 (set in train.py, which imports this module)" in result.stderr


def test_model_checked_alone_has_no_policy(cli, tmp_path):
    write(tmp_path / "train.py", TRAIN)
    write(tmp_path / "model.py", SOFTMAX_MODEL)
    result = cli(["--no-cache", "--verbose", "model.py"], cwd=tmp_path)
    assert result.exit_code == 0
    assert "model.py: target" not in result.stderr  # not even parsed: no policy, no tokens


def test_test_files_do_not_pass_their_policy_on(tmp_path):
    graph = PolicyGraph(roots=[str(tmp_path)])
    files = {
        "tests/test_model.py": "from model import build\nset_global_policy('mixed_float16')\n",
        "model_test.py": "from model import build\nset_global_policy('mixed_float16')\n",
        "model.py": "import keras\n",
    }
    for name, text in files.items():
        graph.add(str(tmp_path / name), text, relevant=True)
    assert graph.inherited() == {}


def test_inheritance_with_worker_processes(mplint_process, tmp_path):
    """With workers, files are checked as soon as they are read; a file found later to
    inherit a policy is checked again and only that result counts."""
    write(tmp_path / "train.py", TRAIN)
    # Mentions float16, so it is sent to a worker before train.py's import is known.
    write(tmp_path / "model.py", "# float16 inside\n" + SOFTMAX_MODEL)
    for i in range(30):
        write(tmp_path / f"pkg/m{i:02d}.py", "import tensorflow as tf\nx = tf.cast(1, tf.float16)\n")
    result = mplint_process(["--no-cache", "-j", "2", "--output-format", "json", "."], cwd=tmp_path)
    findings = [(f["filename"], f["code"]) for f in json.loads(result.stdout)]
    assert findings == [("model.py", "MP101")]
