"""Tensors on every backend the probe runs on: TensorFlow (Keras 2 or 3), and Keras 3 on
JAX or torch, where TensorFlow may not be installed at all.

The parent sets KERAS_BACKEND for every run (tensorflow when it does not say), so the
backend is known before Keras is imported: TensorFlow runs keep using `tf.nest` and
TensorFlow tensors (Keras 2 has no `keras.tree`), the others `keras.tree` / `keras.ops`.
"""

from __future__ import annotations

import os

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def backend() -> str:
    return os.environ.get("KERAS_BACKEND") or "tensorflow"


def uses_tensorflow() -> bool:
    return backend() == "tensorflow"


def flatten(structure) -> list:
    if uses_tensorflow():
        import tensorflow as tf

        return tf.nest.flatten(structure)
    import keras

    return keras.tree.flatten(structure)


def pack_as(structure, flat: list):
    if uses_tensorflow():
        import tensorflow as tf

        return tf.nest.pack_sequence_as(structure, flat)
    import keras

    return keras.tree.pack_sequence_as(structure, flat)


def map_structure(function, structure):
    if uses_tensorflow():
        import tensorflow as tf

        return tf.nest.map_structure(function, structure)
    import keras

    return keras.tree.map_structure(function, structure)


def to_numpy(value, dtype="float64"):
    """The values of a tensor (any backend) or array, as a NumPy array of `dtype`
    (None: its own). NumPy is imported here: a --python without it must still get to
    the verifier's own message about what is missing."""
    import numpy as np

    if uses_tensorflow():
        import tensorflow as tf

        array = tf.convert_to_tensor(value).numpy()
    elif hasattr(value, "shape") and not isinstance(value, np.ndarray):
        import keras

        array = keras.ops.convert_to_numpy(value)
    else:
        array = np.asarray(value)
    return np.asarray(array).astype(dtype) if dtype is not None else np.asarray(array)


def dtype_name(value) -> str:
    """"float16", "int32", ...: the dtype of a tensor, a variable or a symbolic input."""
    dtype = getattr(value, "dtype", value)
    name = getattr(dtype, "name", None)  # TensorFlow and NumPy/JAX dtypes; Keras 3 uses strings
    if isinstance(name, str):
        return name
    text = str(dtype)
    return text.split(".", 1)[1] if text.startswith("torch.") else text


def is_float(value) -> bool:
    return dtype_name(value) in FLOAT_DTYPES


def tensor(array, dtype: str | None = None):
    """A backend tensor holding `array` (cast to `dtype`)."""
    if uses_tensorflow():
        import tensorflow as tf

        result = tf.convert_to_tensor(array)
        return tf.cast(result, dtype) if dtype is not None else result
    import keras

    return keras.ops.convert_to_tensor(array, dtype=dtype)


def same_values(a, b) -> bool:
    """Same shape and the same values in the lower precision of the two floating dtypes."""
    if not (hasattr(a, "dtype") and hasattr(b, "dtype") and hasattr(a, "shape") and hasattr(b, "shape")):
        return False
    if tuple(a.shape) != tuple(b.shape) or not (is_float(a) and is_float(b)):
        return False
    sizes = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
    low = min(dtype_name(a), dtype_name(b), key=lambda n: sizes[n])
    import numpy as np

    try:
        return bool(np.array_equal(to_numpy(cast(a, low)), to_numpy(cast(b, low))))
    except Exception:
        return False


def cast(value, dtype: str):
    """`value` as a backend tensor of `dtype`."""
    if uses_tensorflow():
        import tensorflow as tf

        return tf.cast(value, dtype)
    import keras

    return keras.ops.cast(value, dtype)


def set_seeds(seed: int) -> None:
    """The same random numbers on every run (Python, NumPy, Keras, TensorFlow)."""
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    if uses_tensorflow():
        import tensorflow as tf

        tf.random.set_seed(seed)
