"""Run TensorFlow code in a fresh child interpreter (Keras 2 or Keras 3), get JSON back.

Linting never imports TensorFlow, and Keras 2 vs 3 is chosen by `TF_USE_LEGACY_KERAS`
before TensorFlow is imported, so every runtime check runs in its own process:

    result = run_tf('''
        import tensorflow as tf
        emit({"dtype": tf.keras.layers.Dense(2)(tf.ones((1, 2))).dtype.name})
    ''', keras=3)

`emit(obj)` (defined in the child) sends one JSON object back. A child that fails
raises `TFChildError` with its stderr tail, so a test failure shows the real error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

_MARKER = "@@MPLINT-RESULT@@"
_PRELUDE = f'''
import json as _json, os as _os, sys as _sys
def emit(obj):
    _sys.stdout.write("\\n{_MARKER}" + _json.dumps(obj) + "\\n")
    _sys.stdout.flush()
'''


class TFChildError(AssertionError):
    pass


def tf_env(keras: int, backend: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if backend is not None:  # Keras 3 on another backend (jax, torch): TensorFlow is not imported
        env["KERAS_BACKEND"] = backend
    else:
        env.pop("KERAS_BACKEND", None)
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONHASHSEED"] = "0"
    if keras == 2:
        env["TF_USE_LEGACY_KERAS"] = "1"
    else:
        env.pop("TF_USE_LEGACY_KERAS", None)
    return env


def run_tf(code: str, *, keras: int = 3, timeout: float = 600, cwd: str | None = None,
           backend: str | None = None) -> list:
    """Run `code` in a child Python with TensorFlow (or Keras 3 on `backend`); return
    every object it emitted."""
    script = _PRELUDE + textwrap.dedent(code)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=tf_env(keras, backend),
        cwd=cwd,
    )
    results = [json.loads(line[len(_MARKER):]) for line in proc.stdout.splitlines() if line.startswith(_MARKER)]
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-25:])
        what = f"Keras 3 child on {backend}" if backend else f"TensorFlow child (Keras {keras})"
        raise TFChildError(f"{what} exited {proc.returncode}:\n{tail}")
    return results
