"""MP103's list of layers without float variables (mplint/facts/layer_variables.py) is what
Keras 3 and tf-keras build: each listed layer, built under dtype="float16" on a sample
input, owns no floating-point variable; the layers MP103 still reports do own float16
ones."""

from __future__ import annotations

import pytest

from mplint.facts.layer_variables import _WITHOUT_VARIABLES
from tests.tf_harness import run_tf

pytestmark = pytest.mark.tensorflow

# name -> (constructor arguments, input shape without batch, number of inputs)
BUILD = {
    "Activation": ("'relu'", (4,), 1), "ReLU": ("", (4,), 1), "Softmax": ("", (4,), 1), "LeakyReLU": ("", (4,), 1),
    "ELU": ("", (4,), 1), "ThresholdedReLU": ("", (4,), 1), "Dropout": ("0.5", (4,), 1),
    "SpatialDropout1D": ("0.5", (4, 3), 1), "SpatialDropout2D": ("0.5", (4, 4, 3), 1),
    "SpatialDropout3D": ("0.5", (4, 4, 4, 3), 1), "GaussianNoise": ("0.1", (4,), 1), "GaussianDropout": ("0.1", (4,), 1),
    "AlphaDropout": ("0.1", (4,), 1), "Reshape": ("(2, 2)", (4,), 1), "Flatten": ("", (2, 2), 1),
    "Permute": ("(2, 1)", (2, 3), 1), "RepeatVector": ("2", (4,), 1), "Lambda": ("lambda t: t * 2", (4,), 1),
    "Masking": ("", (3, 4), 1), "Identity": ("", (4,), 1), "Cropping1D": ("1", (4, 3), 1),
    "Cropping2D": ("1", (4, 4, 3), 1), "Cropping3D": ("1", (4, 4, 4, 3), 1), "ZeroPadding1D": ("1", (4, 3), 1),
    "ZeroPadding2D": ("1", (4, 4, 3), 1), "ZeroPadding3D": ("1", (4, 4, 4, 3), 1), "UpSampling1D": ("", (4, 3), 1),
    "UpSampling2D": ("", (4, 4, 3), 1), "UpSampling3D": ("", (4, 4, 4, 3), 1), "MaxPooling1D": ("2", (4, 3), 1),
    "MaxPooling2D": ("2", (4, 4, 3), 1), "MaxPooling3D": ("2", (4, 4, 4, 3), 1), "MaxPool1D": ("2", (4, 3), 1),
    "MaxPool2D": ("2", (4, 4, 3), 1), "MaxPool3D": ("2", (4, 4, 4, 3), 1), "AveragePooling1D": ("2", (4, 3), 1),
    "AveragePooling2D": ("2", (4, 4, 3), 1), "AveragePooling3D": ("2", (4, 4, 4, 3), 1), "AvgPool1D": ("2", (4, 3), 1),
    "AvgPool2D": ("2", (4, 4, 3), 1), "AvgPool3D": ("2", (4, 4, 4, 3), 1), "GlobalMaxPooling1D": ("", (4, 3), 1),
    "GlobalMaxPooling2D": ("", (4, 4, 3), 1), "GlobalMaxPooling3D": ("", (4, 4, 4, 3), 1),
    "GlobalAveragePooling1D": ("", (4, 3), 1), "GlobalAveragePooling2D": ("", (4, 4, 3), 1),
    "GlobalAveragePooling3D": ("", (4, 4, 4, 3), 1), "GlobalMaxPool1D": ("", (4, 3), 1),
    "GlobalMaxPool2D": ("", (4, 4, 3), 1), "GlobalMaxPool3D": ("", (4, 4, 4, 3), 1), "GlobalAvgPool1D": ("", (4, 3), 1),
    "GlobalAvgPool2D": ("", (4, 4, 3), 1), "GlobalAvgPool3D": ("", (4, 4, 4, 3), 1), "Add": ("", (4,), 2),
    "Subtract": ("", (4,), 2), "Multiply": ("", (4,), 2), "Average": ("", (4,), 2), "Maximum": ("", (4,), 2),
    "Minimum": ("", (4,), 2), "Concatenate": ("", (4,), 2), "Dot": ("axes=1", (4,), 2),
    "ActivityRegularization": ("", (4,), 1), "UnitNormalization": ("", (4,), 1), "Rescaling": ("1 / 255.0", (4,), 1),
    "Resizing": ("2, 2", (4, 4, 3), 1), "CenterCrop": ("2, 2", (4, 4, 3), 1), "RandomFlip": ("", (4, 4, 3), 1),
    "RandomRotation": ("0.1", (4, 4, 3), 1), "RandomZoom": ("0.1", (4, 4, 3), 1),
    "RandomTranslation": ("0.1, 0.1", (4, 4, 3), 1), "RandomContrast": ("0.1", (4, 4, 3), 1),
    "RandomCrop": ("2, 2", (4, 4, 3), 1), "RandomBrightness": ("0.1", (4, 4, 3), 1),
    "RandomHeight": ("0.1", (4, 4, 3), 1), "RandomWidth": ("0.1", (4, 4, 3), 1),
    "CategoryEncoding": ("num_tokens=4, output_mode='multi_hot'", (3,), 1), "Hashing": ("num_bins=4, output_mode='one_hot'", (3,), 1),
    "Discretization": ("bin_boundaries=[0.0, 1.0], output_mode='one_hot'", (3,), 1),
    # configurations MP103 treats as variable-free, and the ones it still reports
    "Normalization(mean, variance)": ("mean=1.0, variance=1.0", (4,), 1), "Attention()": ("", (3, 4), 2),
    "Normalization()": ("", (4,), 1), "Attention(use_scale=True)": ("use_scale=True", (3, 4), 2),
}
OWN_VARIABLES = {"Normalization()", "Attention(use_scale=True)"}

CHILD = '''
import numpy as np
import tensorflow as tf
L = __import__("keras").layers if KERAS == 3 else tf.keras.layers
found = {}
for label, (args, shape, n_inputs) in BUILD.items():
    name = label.split("(")[0]
    cls = getattr(L, name, None)
    if cls is None:
        continue  # not in this Keras
    layer = eval(f"cls({args}{', ' if args else ''}dtype='float16')", {"cls": cls})
    x = np.ones((2, *shape), "float32")
    if name in ("CategoryEncoding", "Hashing"):
        x = np.ones((2, *shape), "int32")
    if name == "Normalization" and not args:
        layer.adapt(x)
    full = (2, *shape)
    if not layer.built:
        layer.build(full if n_inputs == 1 else [full, full])  # creates the variables (float16 kernels need no CPU op)
    found[label] = sorted({v.dtype if isinstance(v.dtype, str) else v.dtype.name
                           for v in layer.weights if "float" in str(v.dtype)})
emit(found)
'''


@pytest.mark.parametrize("keras", [3, 2])
def test_listed_layers_own_no_float_variables(keras):
    assert set(BUILD) - OWN_VARIABLES >= {n for n in _WITHOUT_VARIABLES}  # every listed name is built here
    (found,) = run_tf(f"KERAS = {keras}\nBUILD = {BUILD!r}\n" + CHILD, keras=keras)
    assert len(found) > 60, sorted(found)  # nearly all exist in both Keras generations
    for label, dtypes in found.items():
        if label in OWN_VARIABLES:
            assert dtypes == ["float16"], (label, dtypes)
        else:
            assert dtypes == [], (label, dtypes)
