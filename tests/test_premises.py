"""Every finding carries the premises it rests on, with a status; the default tier shows
only findings whose premises are proved or inferred; a fix is safe only on proved ones.

The statuses (mplint.core.diagnostics.Status) are checked on the real engine's output:
proved (seen in the file), inferred (another module, pins), assumed (only the
environment says so) and conflicting (the file's evidence disagrees)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import write

MODEL = '''import keras


def build_model():
    inputs = keras.Input((8,))
    outputs = keras.layers.Dense(10, activation="softmax")(inputs)
    return keras.Model(inputs, outputs)
'''

TRAIN = '''import keras

from model import build_model

keras.mixed_precision.set_global_policy("mixed_float16")
net = build_model()
net.compile("adam", "sparse_categorical_crossentropy")
'''

# Keras 2 methods on an optimizer whose Keras nothing in the file or project proves.
KERAS2_METHODS = '''import tensorflow as tf

tf.keras.mixed_precision.set_global_policy("mixed_float16")
model = tf.keras.Sequential([tf.keras.layers.Dense(1, dtype="float32")])
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())


def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
        scaled = optimizer.get_scaled_loss(loss)
    grads = optimizer.get_unscaled_gradients(tape.gradient(scaled, model.trainable_variables))
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
'''

# tf_keras imported (Keras 2 for the file) and the Keras-3-only `scale_loss` called on a
# tf.keras optimizer (Keras 3 on TF >= 2.16 unless TF_USE_LEGACY_KERAS): conflicting.
CONFLICTING = '''import tensorflow as tf
import tf_keras

tf.keras.mixed_precision.set_global_policy("mixed_float16")
extractor = tf_keras.applications.MobileNetV2(include_top=False)
model = tf.keras.Sequential([tf.keras.layers.Dense(1, dtype="float32")])
optimizer = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD())


def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
        scaled = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
'''


def _json(cli, args, cwd) -> list[dict]:
    result = cli(["--no-cache", "--output-format", "json", *args], cwd=cwd)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def _premise(finding: dict, fact: str) -> dict:
    return next(p for p in finding["premises"] if p["fact"] == fact)


def _unproved(finding: dict) -> set[str]:
    """The facts of a finding's premises that keep it from the default tier, but for its
    rule's own precision: a medium-precision rule's finding (MP103, MP3xx, MP502, MP503)
    is extended whatever its other premises say, and these show what they say."""
    return {p["fact"] for p in finding["premises"]
            if p["status"] in ("assumed", "conflicting") and p["fact"] != "rule-precision"}


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write(root / "pyproject.toml", "[project]\nname = 'p'\nversion = '0'\n")
    write(root / "model.py", MODEL)
    write(root / "train.py", TRAIN)
    return root


def test_a_policy_set_in_the_file_is_proved_and_its_fix_is_safe(cli, tmp_path):
    root = _project(tmp_path)
    write(root / "standalone.py", "import keras\n\nkeras.mixed_precision.set_global_policy('mixed_float16')\n"
          + MODEL.split("\n", 1)[1] + "\nbuild_model().compile('adam', 'mse')\n")
    (finding,) = [f for f in _json(cli, ["standalone.py"], root) if f["code"] == "MP101"]
    premise = _premise(finding, "policy")
    assert premise["status"] == "proved" and "in this file" in premise["evidence"]
    assert finding["tier"] == "default" and finding["fix"]["applicability"] == "safe"


def test_a_policy_from_another_module_is_inferred_and_its_fix_unsafe(cli, tmp_path):
    root = _project(tmp_path)
    (finding,) = [f for f in _json(cli, ["."], root) if f["code"] == "MP101"]
    assert finding["filename"] == "model.py"
    premise = _premise(finding, "policy")
    assert premise["status"] == "inferred" and "train.py" in premise["evidence"]
    assert finding["tier"] == "default", "inferred without conflict: the default tier"
    assert finding["fix"]["applicability"] == "unsafe", "a safe fix needs every premise proved"


def test_an_assumed_target_puts_the_finding_in_the_extended_tier(cli, tmp_path):
    root = tmp_path / "app"
    write(root / "train.py", KERAS2_METHODS)
    write(root / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n")
    assert not [f for f in _json(cli, ["."], root) if f["code"] == "MP404"], "not in the default tier"
    extended = [f for f in _json(cli, ["--extended", "."], root) if f["code"] == "MP404"]
    assert extended and all(f["tier"] == "extended" for f in extended)
    premise = _premise(extended[0], "keras-target")
    assert premise["status"] == "assumed"
    assert "keras-target assumed" in extended[0]["message"], "the message names the unproved premise"
    assert all(f["fix"] is None or f["fix"]["applicability"] == "unsafe" for f in extended)


def test_the_same_finding_is_default_once_the_target_is_declared(cli, tmp_path):
    root = tmp_path / "app"
    write(root / "train.py", KERAS2_METHODS)
    write(root / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n[tool.mplint]\ntarget = 'keras3'\n")
    found = [f for f in _json(cli, ["."], root) if f["code"] == "MP404"]
    assert found and all(f["tier"] == "default" for f in found)
    assert _premise(found[0], "keras-target")["status"] == "proved"


def test_a_pinned_target_is_inferred(cli, tmp_path):
    root = tmp_path / "app"
    write(root / "train.py", KERAS2_METHODS)
    write(root / "requirements.txt", "tensorflow==2.17.0\n")
    write(root / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n")
    found = [f for f in _json(cli, ["."], root) if f["code"] == "MP404"]
    assert found and _premise(found[0], "keras-target")["status"] == "inferred"
    assert all(f["fix"] is None or f["fix"]["applicability"] == "unsafe" for f in found)


def test_conflicting_target_evidence_gives_no_fix_and_the_extended_tier(cli, tmp_path):
    root = tmp_path / "app"
    write(root / "train.py", CONFLICTING)
    write(root / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n")
    assert not [f for f in _json(cli, ["."], root) if f["code"] == "MP404"]
    (finding,) = [f for f in _json(cli, ["--extended", "."], root) if f["code"] == "MP404"]
    premise = _premise(finding, "keras-target")
    assert premise["status"] == "conflicting" and "scale_loss" in premise["evidence"]
    assert finding["fix"] is None and finding["tier"] == "extended"


def test_extended_is_a_config_key_too(cli, tmp_path):
    root = tmp_path / "app"
    write(root / "train.py", KERAS2_METHODS)
    write(root / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n[tool.mplint]\nextended = true\n")
    assert [f for f in _json(cli, ["."], root) if f["code"] == "MP404" and f["tier"] == "extended"]
    write(root / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n[tool.mplint]\nextended = 'yes'\n")
    result = cli(["--no-cache", "."], cwd=root)
    assert result.exit_code == 2 and "extended" in result.stderr


def test_sarif_and_verbose_show_the_premises(cli, tmp_path):
    root = _project(tmp_path)
    result = cli(["--no-cache", "--output-format", "sarif", "."], cwd=root)
    (sarif_result,) = json.loads(result.stdout)["runs"][0]["results"]
    properties = sarif_result["properties"]
    assert properties["tier"] == "default"
    assert properties["premises"][0]["fact"] == "policy" and properties["premises"][0]["status"] == "inferred"
    verbose = cli(["--no-cache", "-v", "."], cwd=root)
    assert "model.py:6:15: MP101 rests on (default tier):" in verbose.stderr
    assert "policy mixed_float16: inferred (set in train.py" in verbose.stderr


def test_keras2_only_evidence_checked_against_the_wheels(cli, tmp_path):
    """`optimizers.experimental` exists in tf-keras 2.21 only (Keras 3.15 and TF 2.21's
    tf.keras have none); keras-cv before 0.8 runs on Keras 2 only."""
    root = tmp_path / "app"
    write(root / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n")
    write(root / "train.py", KERAS2_METHODS.replace("tf.keras.optimizers.SGD()", "tf.keras.optimizers.experimental.AdamW()"))
    result = cli(["--no-cache", "-v", "train.py"], cwd=root)
    assert "target keras2 (Keras-2-only code in the file: `optimizers.experimental`" in result.stderr
    # Any `experimental` namespace of Keras is Keras 2's: Keras 3.15 and TF 2.21's tf.keras have none.
    for spelling, namespace in (("tf.keras.callbacks.experimental.BackupAndRestore('ckpt')", "keras.callbacks.experimental"),
                                ("tf.keras.experimental.CosineDecay(0.1, 100)", "keras.experimental")):
        write(root / "train.py", KERAS2_METHODS + f"\nextra = {spelling}\n")
        result = cli(["--no-cache", "-v", "train.py"], cwd=root)
        assert f"target keras2 (Keras-2-only code in the file: `{namespace}` (Keras 3" in result.stderr
        assert not [f for f in _json(cli, ["--extended", "train.py"], root) if f["code"] == "MP404"]
    write(root / "train.py", KERAS2_METHODS + "\nextra = tf.data.experimental.AUTOTUNE\n")  # TensorFlow's own
    assert "train.py: target keras3 (" in cli(["--no-cache", "-v", "train.py"], cwd=root).stderr
    pinned = tmp_path / "pinned"
    write(pinned / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n")
    write(pinned / "train.py", KERAS2_METHODS)
    write(pinned / "requirements.txt", "keras_cv==0.4.0\ntensorflow\n")
    result = cli(["--no-cache", "-v", "train.py"], cwd=pinned)
    assert "target keras2 (requirements.txt pins keras_cv==0.4.0" in result.stderr


INFERENCE_SCRIPT = '''import keras
import keras_hub

keras.config.set_floatx("bfloat16")
lm = keras_hub.models.GemmaCausalLM.from_preset("gemma_2b_en")
print(lm.generate("What is mixed precision?", max_length=64))
'''


def test_an_inference_script_gets_an_extended_info_that_does_not_fail_the_run(cli, tmp_path):
    """`from_preset` then `generate` under bfloat16 variables: nothing trains them, so the
    role premise is only assumed (extended tier), and the finding is an info; infos fail
    the run only with `--fail-on info`."""
    write(tmp_path / "generate.py", INFERENCE_SCRIPT)
    default = cli(["--no-cache", "generate.py"], cwd=tmp_path)
    assert default.exit_code == 0 and "MP103" not in default.stdout
    result = cli(["--no-cache", "--extended", "generate.py"], cwd=tmp_path)
    assert result.exit_code == 0 and "generate.py:4:1: MP103" in result.stdout and "trains nothing" in result.stdout
    assert "role assumed" in result.stdout
    assert cli(["--no-cache", "--extended", "--fail-on", "info", "generate.py"], cwd=tmp_path).exit_code == 1
    hidden = cli(["--no-cache", "--extended", "--min-severity", "warning", "generate.py"], cwd=tmp_path)
    assert hidden.exit_code == 0 and "MP103" not in hidden.stdout
    write(tmp_path / "mplint.toml", 'fail-on = "info"\nextended = true\n')
    assert cli(["--no-cache", "generate.py"], cwd=tmp_path).exit_code == 1
    write(tmp_path / "mplint.toml", 'fail-on = "sometimes"\n')
    bad = cli(["--no-cache", "generate.py"], cwd=tmp_path)
    assert bad.exit_code == 2 and "fail-on" in bad.stderr


def test_float16_variables_rest_on_something_training_them(cli, tmp_path):
    """MP103's role premise: proved where the module trains, inferred where a module
    that imports it trains, assumed (extended tier, no fix) where nothing does."""
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\n')
    write(tmp_path / "layers.py", 'import keras\n\n\ndef block():\n    return keras.layers.Dense(8, dtype="float16")\n')
    (finding,) = _json(cli, ["--extended", "layers.py"], tmp_path)
    (role,) = [p for p in finding["premises"] if p["fact"] == "role"]
    assert (role["status"], finding["tier"], finding["fix"]) == ("assumed", "extended", None)
    write(tmp_path / "train.py", "from layers import block\n\nblock().fit(None)\n")
    (finding,) = _json(cli, ["--extended", "layers.py"], tmp_path)
    (role,) = [p for p in finding["premises"] if p["fact"] == "role"]
    assert role["status"] == "inferred" and "`train`" in role["evidence"]
    # MP103 is a medium-precision rule (bench/rule_precision.py): extended, its fix unsafe
    assert finding["tier"] == "extended" and _premise(finding, "rule-precision")["status"] == "assumed"
    assert finding["fix"]["applicability"] == "unsafe"
    write(tmp_path / "train.py", "from layers import block\n\nblock().predict(None)\n")
    (finding,) = _json(cli, ["--extended", "layers.py"], tmp_path)  # the edited importer no longer trains
    assert _premise(finding, "role")["status"] == "assumed" and finding["fix"] is None


def test_the_findings_cache_follows_a_trainer_two_imports_away(cli, tmp_path):
    """A file's cached findings depend on whether a module that imports it, even through
    another, trains: editing that module re-checks it."""
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\n')
    write(tmp_path / "layers.py", 'import keras\n\n\ndef block():\n    return keras.layers.Dense(8, dtype="float16")\n')
    write(tmp_path / "model.py", "from layers import block\n\n\ndef build():\n    return block()\n")
    write(tmp_path / "train.py", "from model import build\n\nbuild().fit(None)\n")

    def codes():
        result = cli(["--extended", "--output-format", "json", "layers.py"], cwd=tmp_path)
        assert result.exit_code in (0, 1), result.stderr
        return [(f["code"], _premise(f, "role")["status"]) for f in json.loads(result.stdout)]

    assert codes() == [("MP103", "inferred")]
    write(tmp_path / "train.py", "from model import build\n\nbuild().predict(None)  # no longer trains\n")
    assert codes() == [("MP103", "assumed")]


def test_a_policy_chosen_by_a_selectors_argument_is_assumed(cli, tmp_path):
    """A project function that sets mixed_float16, mixed_bfloat16 or float32 as its
    argument says brings no policy as a fact: the finding is latent (extended tier)."""
    import shutil

    root = tmp_path / "project"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "projects" / "policy_chosen_by_an_argument", root,
                    ignore=shutil.ignore_patterns("expected.txt"))
    assert [f["code"] for f in _json(cli, ["."], root)] == []
    (finding,) = _json(cli, ["--extended", "."], root)
    premise = _premise(finding, "policy")
    assert finding["code"] == "MP201" and finding["tier"] == "extended"
    assert premise["status"] == "assumed" and "set_mixed_precision_policy()" in premise["evidence"]
    # A selector next to a plain setter: the plain one makes the policy a project fact.
    write(root / "amp.py", "import tensorflow as tf\n\n\ndef enable():\n"
          "    tf.keras.mixed_precision.set_global_policy('mixed_float16')\n")
    write(root / "train.py", "from amp import enable\n" + (root / "train.py").read_text() + "\nenable()\n")
    (finding,) = _json(cli, ["."], root)
    assert _premise(finding, "policy")["status"] == "inferred" and finding["tier"] == "default"


def test_a_library_whose_only_float16_is_the_graph_rewrite_is_assumed(cli, tmp_path):
    """A library's layer code runs under its users' policy only where the project names a
    float16 Keras policy; the grappler rewrite (which keeps log and softmax in float32) or a
    comment quoting `mixed_float16` is not one. A test of the layer that sets the policy
    makes it one; a test that sets it and never uses the layer does not."""
    import shutil

    root = tmp_path / "project"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "projects" / "library_with_only_the_graph_rewrite",
                    root, ignore=shutil.ignore_patterns("expected.txt"))
    (finding,) = _json(cli, ["--extended", "."], root)
    premise = _premise(finding, "policy")
    assert finding["code"] == "MP502" and finding["tier"] == "extended"
    assert premise["status"] == "assumed" and "graph rewrite" in premise["evidence"]
    assert _unproved(finding) == {"policy"}
    write(root / "tests" / "test_layers.py", "import tensorflow as tf\n\n\ndef test_mixed():\n"
          "    tf.keras.mixed_precision.set_global_policy('mixed_float16')\n")
    (finding,) = _json(cli, ["--extended", "."], root)
    assert _premise(finding, "policy")["status"] == "assumed"  # the test never uses the layer
    write(root / "tests" / "test_layers.py", "import tensorflow as tf\n\nfrom hashattn.layers import "
          "DuplicateAwareAttention\n\n\ndef test_mixed():\n"
          "    tf.keras.mixed_precision.set_global_policy('mixed_float16')\n    DuplicateAwareAttention()\n")
    (finding,) = _json(cli, ["--extended", "."], root)
    assert _premise(finding, "policy")["status"] == "inferred" and _unproved(finding) == set()


def test_the_dtype_premise_follows_where_the_tensor_comes_from(cli, tmp_path):
    """MP501/MP502 rest on the tensor being float16: proved by a cast to float16,
    inferred for the layer code's own tensors, assumed for the value of another module's
    function (its dtype is not followed): that finding is in the extended tier only."""
    import shutil

    root = tmp_path / "project"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "projects" / "dtype_from_another_module", root,
                    ignore=shutil.ignore_patterns("expected.txt"))
    write(root / "halves.py", "import tensorflow as tf\n\ntf.keras.mixed_precision.set_global_policy('mixed_float16')\n\n\n"
          "class Half(tf.keras.layers.Layer):\n    def call(self, x):\n        h = tf.cast(x, tf.float16)\n"
          "        return h / (tf.norm(h) + 1e-9)\n")
    findings = {f["location"]["row"]: f for f in _json(cli, ["--extended", "."], root) if f["code"] == "MP502"}
    statuses = {(f["filename"], row): _premise(f, "dtype")["status"] for row, f in findings.items()}
    assert statuses == {("layers.py", 16): "assumed", ("layers.py", 17): "inferred", ("halves.py", 9): "proved"}
    assert findings[16]["tier"] == "extended" and "counting.duplicate_counts" in _premise(findings[16], "dtype")["evidence"]
    # MP502 is extended by its measured precision; these two would be default on their premises
    assert sorted((f["filename"], row) for row, f in findings.items() if not _unproved(f)) == [
        ("halves.py", 9), ("layers.py", 17)]


def test_a_tf_function_parameter_has_an_assumed_dtype_and_a_model_output_in_it_an_inferred_one(cli, tmp_path):
    """No layer casts what a @tf.function is given: a parameter's dtype is its callers'
    (assumed, extended tier); a model's output inside it computes under the policy
    (inferred, default tier)."""
    write(tmp_path / "steps.py", (
        "import tensorflow as tf\n\ntf.keras.mixed_precision.set_global_policy('mixed_float16')\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(4)])\n\n\n"
        "@tf.function\ndef hardest(distances, mask):\n    return distances + (1.0 - mask) * 1e9\n\n\n"
        "@tf.function\ndef masked(x, mask):\n    logits = model(x)\n    return logits + (1.0 - mask) * -1e9\n"
    ))
    findings = {f["location"]["row"]: f for f in _json(cli, ["--extended", "steps.py"], tmp_path) if f["code"] == "MP501"}
    assert {row: (_premise(f, "dtype")["status"], f["tier"]) for row, f in findings.items()} == {
        9: ("assumed", "extended"), 15: ("inferred", "default")}
    assert "`distances` is a parameter of @tf.function code" in _premise(findings[9], "dtype")["evidence"]


def test_a_float16_policy_of_files_that_do_not_use_the_library_module_is_assumed(cli, tmp_path):
    """The project names mixed_float16 only in a script that trains another model: the
    library's layer code that script never uses has an assumed policy (extended tier);
    once the script uses it, the policy is inferred (default tier)."""
    import shutil

    root = tmp_path / "project"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "projects" / "float16_policy_only_where_the_module_is_unused",
                    root, ignore=shutil.ignore_patterns("expected.txt"))
    (finding,) = _json(cli, ["--extended", "codec/quantizer.py"], root)
    assert _premise(finding, "policy")["status"] == "assumed" and finding["tier"] == "extended"
    assert _unproved(finding) == {"policy"}
    script = root / "scripts" / "train_encoder.py"
    script.write_text(script.read_text().replace("from codec.encoder import encoder\n",
                                                 "from codec.encoder import encoder\nfrom codec.quantizer import Quantizer\n")
                      .replace("[encoder(16), ", "[encoder(16), Quantizer(), "))
    (finding,) = _json(cli, ["--extended", "codec/quantizer.py"], root)
    # its rule (MP502) is extended by its measured precision; the policy no longer keeps it there
    assert _premise(finding, "policy")["status"] == "inferred" and _unproved(finding) == set()


FLOAT16_PIPELINE = '''import numpy as np
import tensorflow as tf


def from_arrays(images, labels):
    return tf.data.Dataset.from_tensor_slices(((images.astype(np.float16) / 255.0 - 0.5) * 2.0, labels))
'''


def test_a_rule_of_medium_precision_reports_only_in_the_extended_suite(cli, tmp_path):
    """As CodeQL's `@precision`: a rule whose audited findings were seldom worth acting on
    (MP503) rests every finding on an assumed `rule-precision` premise."""
    from mplint.catalogue.registry import rule_class
    from mplint.core.codes import RULES

    root = tmp_path / "app"
    write(root / "data.py", FLOAT16_PIPELINE)
    write(root / "pyproject.toml", "[project]\nname = 'app'\nversion = '0'\n")
    assert not [f for f in _json(cli, ["."], root) if f["code"] == "MP503"], "not in the default tier"
    (finding,) = [f for f in _json(cli, ["--extended", "."], root) if f["code"] == "MP503"]
    assert finding["tier"] == "extended" and finding["message"].endswith("(extended suite)")
    premise = _premise(finding, "rule-precision")
    assert premise["status"] == "assumed" and "judged findings in the fresh audits" in premise["evidence"]
    assert finding["fix"]["applicability"] == "unsafe", "a safe fix needs every premise proved"
    medium = [code for code in RULES if rule_class(code).precision != "high"]
    assert "MP503" in medium and all(rule_class(code).precision_evidence for code in medium)
    result = cli(["rule", "MP503"])
    assert "Precision: medium" in result.stdout
