"""A policy set in train.py applies where train.py runs the code of other modules."""

from __future__ import annotations

import json

from tests.conftest import write

TRAIN = (
    "import tensorflow as tf\n"
    "from model import build\n"
    "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    "trainer = build\n"
)
SOFTMAX_MODEL = (
    "import tensorflow as tf\n"
    "def build():\n"
    "    return tf.keras.Sequential([tf.keras.layers.Dense(16), tf.keras.layers.Dense(10, activation='softmax')])\n"
)


def test_imported_model_module_is_checked_under_the_policy(cli, tmp_path):
    # `build` is read by a script that sets the policy but never called in the project:
    # it runs after that script (a framework it is handed to, an interactive session).
    write(tmp_path / "train.py", TRAIN)
    write(tmp_path / "model.py", SOFTMAX_MODEL)
    result = cli(["--no-cache", "--output-format", "json", "--verbose", "."], cwd=tmp_path)
    assert [(f["filename"], f["code"]) for f in json.loads(result.stdout)] == [("model.py", "MP101")]
    assert "model.py: target" in result.stderr
    assert "policy mixed_float16 (from train.py)" in result.stderr


def test_an_import_the_script_never_reads_brings_no_policy(cli, tmp_path):
    # A leftover `from model import build` that the script never uses runs nothing of
    # model.py after the policy is set.
    write(tmp_path / "train.py", TRAIN.replace("trainer = build\n", ""))
    write(tmp_path / "model.py", SOFTMAX_MODEL)
    result = cli(["--no-cache", "--output-format", "json", "."], cwd=tmp_path)
    assert json.loads(result.stdout) == []


def test_model_checked_alone_is_judged_like_the_project(cli, tmp_path):
    write(tmp_path / "train.py", TRAIN)
    write(tmp_path / "model.py", SOFTMAX_MODEL)
    result = cli(["--no-cache", "--output-format", "json", "model.py"], cwd=tmp_path)
    assert [(f["filename"], f["code"]) for f in json.loads(result.stdout)] == [("model.py", "MP101")]


def test_a_function_called_before_the_script_sets_the_policy_stays_float32(cli, tmp_path):
    write(tmp_path / "train.py", (
        "import tensorflow as tf\n"
        "from model import build\n"
        "reference = build()\n"
        "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
    ))
    write(tmp_path / "model.py", SOFTMAX_MODEL)
    result = cli(["--no-cache", "--output-format", "json", "."], cwd=tmp_path)
    assert json.loads(result.stdout) == []


def test_test_files_do_not_pass_their_policy_on(cli, tmp_path):
    write(tmp_path / "tests" / "test_model.py", TRAIN + "build()\n")
    write(tmp_path / "model_test.py", TRAIN + "build()\n")
    write(tmp_path / "model.py", SOFTMAX_MODEL)
    result = cli(["--no-cache", "--output-format", "json", "."], cwd=tmp_path)
    assert json.loads(result.stdout) == []


def test_with_worker_processes(mplint_process, tmp_path):
    """With workers, files are checked as soon as they are read: the project index is
    built first, so every worker sees what the other modules say."""
    write(tmp_path / "train.py", TRAIN)
    # Mentions float16, so it is sent to a worker while the other files are being read.
    write(tmp_path / "model.py", "# float16 inside\n" + SOFTMAX_MODEL)
    for i in range(30):
        write(tmp_path / f"pkg/m{i:02d}.py", "import tensorflow as tf\nx = tf.cast(1, tf.float16)\n")
    result = mplint_process(["--no-cache", "-j", "2", "--output-format", "json", "."], cwd=tmp_path)
    findings = [(f["filename"], f["code"]) for f in json.loads(result.stdout)]
    assert findings == [("model.py", "MP101")]


def test_several_projects_are_solved_side_by_side_and_judged_the_same(tmp_path, monkeypatch):
    """A run over several projects solves them in parallel processes
    (mplint.project.parallel_solve); the parent adopts what they derived and the
    findings are those of a single-process run."""
    from mplint.engine.runner import RunOptions, run
    from mplint.inputs.config import ConfigResolver
    from mplint.project.store import Store

    for name, policy in (("alpha", "mixed_float16"), ("beta", "float32"), ("gamma", "mixed_bfloat16")):
        project = tmp_path / name
        write(project / "pyproject.toml", "[project]\nname = 'x'\n")
        write(project / "train.py", TRAIN.replace("mixed_float16", policy) + "model = build()\n")
        write(project / "model.py", SOFTMAX_MODEL)
        for i in range(8):
            write(project / f"pkg/m{i}.py", "import tensorflow as tf\nx = tf.constant(1.0)\n")
    write(tmp_path / "delta" / "pyproject.toml", "")  # sets no policy: nothing to solve, no process
    write(tmp_path / "delta" / "model.py", SOFTMAX_MODEL)
    adopted = []
    original = Store.adopt
    monkeypatch.setattr(Store, "adopt", lambda self, entries: adopted.append(self.root) or original(self, entries))
    monkeypatch.chdir(tmp_path)

    def findings(jobs: int) -> list[tuple[str, str, str]]:
        result = run(["."], ConfigResolver(), RunOptions(cache=False, jobs=jobs))
        return sorted((f.filename, f.code, f.message) for f in result.findings)

    alone = findings(1)
    assert not adopted
    assert findings(2) == alone
    assert sorted(adopted) == [str(tmp_path / name) for name in ("alpha", "beta", "gamma")]
    assert [(f, c) for f, c, _ in alone] == [("alpha/model.py", "MP101"), ("gamma/model.py", "MP101")]


def test_a_policy_passed_on_by_a_module_that_does_not_set_it_is_named_as_from_another_module(cli, tmp_path):
    # train.py sets the policy and calls runner.run(), which builds model.py's model:
    # runner.py carries the policy to model.py without setting it, so it is not named as
    # where the policy comes from (the header once read "(from )").
    write(tmp_path / "train.py", (
        "import tensorflow as tf\n"
        "import runner\n"
        "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
        "runner.run()\n"
    ))
    write(tmp_path / "runner.py", "from model import build\ndef run():\n    return build()\n")
    write(tmp_path / "model.py", SOFTMAX_MODEL)
    result = cli(["--no-cache", "--output-format", "json", "--verbose", "model.py"], cwd=tmp_path)
    assert [(f["filename"], f["code"]) for f in json.loads(result.stdout)] == [("model.py", "MP101")]
    assert "policy mixed_float16 (from another module)" in result.stderr


def test_floatx_float16_is_overridden_by_the_mixed_policy_a_script_sets_before_building(cli, tmp_path):
    # layers.py sets floatx at import; train.py imports it, then sets mixed_float16 and
    # builds: an explicitly set global policy, not floatx, gives the layers their
    # variables (float32).
    write(tmp_path / "train.py", TRAIN + "trainer().fit(x, y)\n")
    write(tmp_path / "model.py", "import tensorflow as tf\ntf.keras.backend.set_floatx('float16')\n" + SOFTMAX_MODEL.split("\n", 1)[1])
    # MP103 is a medium-precision rule (bench/rule_precision.py): extended tier
    result = cli(["--no-cache", "--extended", "--output-format", "json", "--select", "MP103", "."], cwd=tmp_path)
    assert json.loads(result.stdout) == []
    # Without the script's policy, floatx float16 gives float16 variables.
    write(tmp_path / "train.py", TRAIN.replace("tf.keras.mixed_precision.set_global_policy('mixed_float16')\n", "")
          + "trainer().fit(x, y)\n")
    result = cli(["--no-cache", "--extended", "--output-format", "json", "--select", "MP103", "."], cwd=tmp_path)
    assert [(f["filename"], f["code"]) for f in json.loads(result.stdout)] == [("model.py", "MP103")]


WEIGHTS = (
    "import tensorflow as tf\n"
    "norm = tf.keras.layers.LayerNormalization()  # built at import, before the policy\n"
    "def init_weights(n):\n"
    "    return [tf.Variable(tf.random.normal((n, n))), tf.Variable(tf.zeros((n,)))]\n"
)
HALF_SCRIPT = (
    "import tensorflow as tf\n"
    "from weights import init_weights\n"
    "tf.keras.mixed_precision.set_global_policy('float16')\n"
    "weights = init_weights(8)\n"
    "optimizer = tf.keras.optimizers.Adam()\n"
    "with tf.GradientTape() as tape:\n"
    "    loss = tf.reduce_sum(weights[0])\n"
    "optimizer.apply_gradients(zip(tape.gradient(loss, weights), weights))\n"
)


def test_a_float16_global_policy_that_no_layer_is_built_under_is_latent(cli, tmp_path):
    # Hand-made tf.Variables keep their own dtype, and the only layer is built at import,
    # before the policy: no float16 variable is proved, the finding is extended.
    write(tmp_path / "weights.py", WEIGHTS)
    write(tmp_path / "train.py", HALF_SCRIPT)
    # MP103 is a medium-precision rule (bench/rule_precision.py): its findings are all
    # extended, and the role premise says whether it would be latent on its own
    args = ["--no-cache", "--extended", "--output-format", "json", "--select", "MP103", "train.py"]
    (finding,) = json.loads(cli(args, cwd=tmp_path).stdout)
    assert [(p["value"], p["status"]) for p in finding["premises"] if p["fact"] == "role"][-1] == \
        ("layers built under it", "assumed")
    # A function of an imported module that builds a layer may run under it: not assumed.
    write(tmp_path / "weights.py", WEIGHTS + "def head():\n    return tf.keras.layers.Dense(4)\n")
    (finding,) = json.loads(cli(args, cwd=tmp_path).stdout)
    assert finding["code"] == "MP103" and all(p["status"] != "assumed" for p in finding["premises"]
                                               if p["fact"] == "role")
    # So does a layer built here after it (proved).
    write(tmp_path / "weights.py", WEIGHTS)
    write(tmp_path / "train.py", HALF_SCRIPT + "model = tf.keras.Sequential([tf.keras.layers.Dense(4)])\nmodel.fit(x, y)\n")
    (finding,) = json.loads(cli(args, cwd=tmp_path).stdout)
    assert ("layers built under it", "proved") in [(p["value"], p["status"]) for p in finding["premises"]]


def test_a_helper_that_sets_the_policy_only_when_asked_follows_its_callers_argument_across_runs(cli, tmp_path):
    # tools.py sets the policy only `if fp16:`; the script's argument (or the helper's
    # default) decides, and the kept summaries follow an edit of either side.
    helper = ("import tensorflow as tf\n"
              "def setup(fp16=True):\n"
              "    if fp16:\n"
              "        tf.keras.mixed_precision.set_global_policy('mixed_float16')\n")
    script = ("import tensorflow as tf\n"
              "from tools import setup\n"
              "setup({args})\n"
              "model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(10, activation='softmax')])\n"
              "model.compile(loss='mse')\n")
    write(tmp_path / "tools.py", helper)

    def codes(args: str) -> list[str]:
        write(tmp_path / "train.py", script.format(args=args))
        result = cli(["--output-format", "json", "--select", "MP101", "train.py"], cwd=tmp_path)
        return [f["code"] for f in json.loads(result.stdout)]

    assert codes("fp16=False") == []
    assert codes("False") == []
    assert codes("fp16=True") == ["MP101"]
    assert codes("") == ["MP101"]  # the default
    write(tmp_path / "tools.py", helper.replace("fp16=True", "fp16=False"))
    assert codes("") == []
    assert codes("fp16=FLAGS.fp16") == ["MP101"]  # not known: the setting may run
