"""`mplint verify` on a library model built from a small config (issue #27): keras-hub's
T5Backbone under mixed_float16 on JAX. Its attention fills padded positions with -1e9,
which overflows float16: on a fully padded sequence the outputs are NaN. Verify's
inputs carry padding (the model's `*_padding_mask` inputs), so parity fails and names
the attention layer; with MP501's advice applied to a copy of keras-hub (a fill float16
can hold, -65504.0) parity passes.

Needs keras-hub (the `library-models` extra, pinned to 0.32.0: see pyproject.toml) and
JAX; skipped where they are not installed (CI does not install them).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

from tests.test_verify import checks_of, run_verify

pytestmark = [
    pytest.mark.tensorflow,
    pytest.mark.skipif(importlib.util.find_spec("keras_hub") is None, reason="needs keras-hub (library-models extra)"),
    pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax"),
]

BUILD = '''import os

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras
import keras_hub

keras.mixed_precision.set_global_policy("mixed_float16")


def build_model():
    return keras_hub.models.T5Backbone(vocabulary_size=64, num_layers=1, num_heads=2, hidden_dim=16,
                                       intermediate_dim=32, key_value_dim=8, dropout=0.0)
'''


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
