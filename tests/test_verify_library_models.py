"""`mplint verify` on a library model built from a small config (issue #27): keras-hub's
T5Backbone under mixed_float16 on JAX. Its attention fills padded positions with -1e9,
which overflows float16: on a fully padded sequence the outputs are NaN. Verify's
inputs carry padding (the model's `*_padding_mask` inputs), so parity fails and names
the attention layer; with MP501's advice applied to a copy of keras-hub (a fill float16
can hold, -65504.0) parity passes.

Needs keras-hub (the `library-models` extra, pinned to 0.32.0: see pyproject.toml) and
JAX; skipped where they are not installed (CI does not install them). The same for
Hugging Face's TF T5 (transformers 4.46.3, tf-keras) on TensorFlow: its inputs come from
the model's `input_signature`, and there mplint's own MP501 fix (`x.dtype.min`, TensorFlow
code) makes parity pass.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from tests.test_verify import checks_of, run_verify

pytestmark = pytest.mark.tensorflow
needs_keras_hub = pytest.mark.skipif(
    importlib.util.find_spec("keras_hub") is None or importlib.util.find_spec("jax") is None,
    reason="needs keras-hub (library-models extra) and jax")
needs_transformers = pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                                        reason="needs transformers==4.46.3 (library-models extra)")

BUILD = '''import os

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras
import keras_hub

keras.mixed_precision.set_global_policy("mixed_float16")


def build_model():
    return keras_hub.models.T5Backbone(vocabulary_size=64, num_layers=1, num_heads=2, hidden_dim=16,
                                       intermediate_dim=32, key_value_dim=8, dropout=0.0)
'''


@needs_keras_hub
def test_keras_hub_t5_fails_parity_on_padded_inputs_and_passes_after_the_mp501_advice(tmp_path: Path, monkeypatch):
    import keras_hub

    (tmp_path / "t5_small.py").write_text(BUILD)
    code, report = run_verify("t5_small.py", "--backend", "jax", cwd=tmp_path)
    checks = checks_of(report)
    assert report["backend"] == "jax" and code == 1
    assert checks["finite-forward"]["status"] == "fail"
    assert "T5MultiHeadAttention" in checks["finite-forward"]["detail"]
    first = checks["float32-agreement"]["measured"]["first_divergent_layer"]
    assert first["class"] == "T5MultiHeadAttention" and first["path"].endswith("self_attention")

    # MP501 reports the fill (keras.ops code that also runs on JAX: no automatic fix, the
    # message names a value float16 can hold); apply that advice to a copy of keras-hub.
    from mplint.engine.engine import lint
    from mplint.inputs.config import FileSettings
    from mplint.inputs.documents import load_document

    source = Path(keras_hub.__file__).parent
    copy = tmp_path / "site" / "keras_hub"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
    attention = copy / "src" / "models" / "t5" / "t5_multi_head_attention.py"
    doc = load_document(str(attention), attention.read_bytes())
    findings = [f for f in lint(doc, FileSettings(codes=frozenset({"MP501"}), assumed_policy="mixed_float16"),
                                attention.name) if f.code == "MP501"]
    assert findings and "-65504.0 is its lowest" in findings[0].message
    attention.write_text(attention.read_text().replace("* -1e9", "* -65504.0"))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code, report = run_verify("t5_small.py", "--backend", "jax", cwd=tmp_path)
    fixed = checks_of(report)
    assert (fixed["finite-forward"]["status"], fixed["float32-agreement"]["status"]) == ("pass", "pass"), report


HF_BUILD = '''import tensorflow as tf
from transformers import T5Config, TFT5Model

tf.keras.mixed_precision.set_global_policy("mixed_float16")


def build_model():
    config = T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2, dropout_rate=0.0)
    return TFT5Model(config)
'''


@needs_transformers
def test_hugging_face_tf_t5_fails_parity_and_passes_after_mplints_mp501_fix(tmp_path: Path, monkeypatch):
    import transformers

    (tmp_path / "hf_t5.py").write_text(HF_BUILD)
    code, report = run_verify("hf_t5.py", "--keras", "2", cwd=tmp_path)
    checks = checks_of(report)
    assert code == 1 and report["keras"] == "2"
    assert "attention_mask: int32" in checks["finite-forward"]["detail"]  # from the input signature, padded
    assert checks["finite-forward"]["status"] == "fail"
    first = checks["float32-agreement"]["measured"]["first_divergent_layer"]
    assert first["class"] == "TFT5Attention"

    # mplint's fix, run as a user would on a copy of transformers, whose users' policy
    # (a library's) is declared with assume-policy.
    from click.testing import CliRunner

    from mplint.frontends.cli import main

    site = tmp_path / "site"
    shutil.copytree(Path(transformers.__file__).parent, site / "transformers", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "pyproject.toml").write_text('[tool.mplint]\nassume-policy = "mixed_float16"\n')
    modeling = Path("transformers") / "models" / "t5" / "modeling_tf_t5.py"
    monkeypatch.chdir(site)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--fix", "--unsafe-fixes", "--select", "MP501",
                                       str(modeling)], catch_exceptions=False)
    assert "2 fixed" in result.output, result.output
    assert ".dtype.min" in (site / modeling).read_text()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code, report = run_verify("hf_t5.py", "--keras", "2", cwd=tmp_path)
    fixed = checks_of(report)
    assert (fixed["finite-forward"]["status"], fixed["float32-agreement"]["status"]) == ("pass", "pass"), report
