"""MP5xx fixtures, run under mixed_float16: NaN/inf before the fix, finite after.

Each fixture's input (`<case>.py`) and its fixed text (`<case>.fixed.py`, what
`mplint --fix --unsafe-fixes` writes, checked by test_fixtures.py) are executed in a
TensorFlow child process (one per Keras version, all cases batched), their layer or
function is called on inputs that hit the hazard (padding in the mask, all-zero
vectors, a constant group), and the child reports whether the output is finite. The
MP503 input pipeline is run too: float16 elements before the fix, float32 after.
"""

from __future__ import annotations

import json

import pytest

from tests.fixture_cases import FIXTURES
from tests.tf_harness import run_tf

pytestmark = pytest.mark.tensorflow

# case -> (Keras version, driver). A driver runs in the fixture module's namespace and
# sets `out` (a tensor or a list of tensors). Inputs are float16 where the fixture's
# layer expects the caller to provide compute-dtype tensors (Keras 2 casts only the
# first `call` argument).
CASES = {
    "MP501/mask_subtraction": (3, """
        q = np.random.RandomState(0).randn(2, 3, 8).astype("float32")
        mask = np.ones((2, 1, 3), "float32"); mask[:, :, -1] = 0.0  # last key is padding
        out = MaskedAttention()(q, q, mask)
    """),
    "MP501/multiplied_mask": (3, """
        x = np.random.RandomState(1).randn(2, 4, 8).astype("float32")
        mask = np.ones((2, 1, 4), "float32"); mask[0, :, 2:] = 0.0
        out = SelfAttention(8)(x, mask)
    """),
    "MP501/tf_function_under_policy": (3, """
        logits = tf.constant(np.random.RandomState(2).randn(2, 5), tf.float16)
        mask = tf.constant([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], tf.float16)
        out = [masked_logits(logits, mask), tf.nn.softmax(logits + step(logits) * (1.0 - mask))]
    """),
    "MP501/tied_constant_inf": (2, """
        logits = tf.constant(np.random.RandomState(3).randn(2, 5), tf.float16)
        mask = tf.constant([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], tf.float16)
        out = tf.nn.softmax(PointerHead()(logits, mask))
    """),
    "MP501/keras_backend_helpers": (2, """
        scores = tf.constant(np.random.RandomState(4).randn(2, 5), tf.float16)
        mask = tf.constant([[True, True, False, True, False], [True, False, True, True, True]])
        out = SwitchMasking()(scores, mask)
    """),
    "MP502/norm_epsilon": (3, """
        x = np.zeros((2, 8), "float32")  # an all-zero (padding) vector
        probs = np.array([[0.0, 1.0], [0.5, 0.5]], "float32")
        labels = np.array([[0.0, 1.0], [1.0, 0.0]], "float32")
        out = [L2Normalize()(x), CrossEntropyHead()(probs, labels)]
    """),
    "MP502/clip_and_batch_norm": (3, """
        out = focal_term(tf.constant([[0.0, 1.0], [0.25, 0.75]], tf.float16))
    """),
    "MP502/tied_epsilon_constant": (2, """
        a = np.zeros((2, 8), "float32"); b = np.ones((2, 8), "float32")
        out = Similarity()([a, b])
    """),
    "MP502/group_norm_keras2": (2, """
        out = build_block(8)(np.zeros((2, 4, 4, 3), "float32"))  # zero activations: a constant group
    """),
}

# Fixed fixtures whose dtype-aware spelling must also work on symbolic tensors (the
# functional API calls `call` while the model is built).
FUNCTIONAL = {
    "MP501/mask_subtraction": (3, """
        qi = keras.Input((3, 8)); mi = keras.Input((1, 3))
        model = keras.Model([qi, mi], MaskedAttention()(qi, qi, mi))
        mask = np.ones((2, 1, 3), "float32"); mask[:, :, -1] = 0.0
        out = model([np.random.RandomState(0).randn(2, 3, 8).astype("float32"), mask])
    """),
    "MP501/tied_constant_inf": (2, """
        li = tf.keras.Input((5,), dtype="float16"); mi = tf.keras.Input((5,), dtype="float16")
        model = tf.keras.Model([li, mi], PointerHead()(li, mi))
        mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], "float16")
        out = model([np.random.RandomState(3).randn(2, 5).astype("float16"), mask])
    """),
}

# MP503: the fixed input pipeline yields float32 (the model casts it to float16 itself).
PIPELINES = {
    "MP503/dataset_map_cast": (3, """
        ds = make_dataset(np.random.RandomState(5).randint(0, 255, (4, 8, 8, 3)).astype("uint8"), np.zeros(4))
        images, _ = next(iter(ds))
        model = tf.keras.Sequential([tf.keras.Input((8, 8, 3)), tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)])
        out = [images, model(images)]
    """),
}

# What the docs (docs/numerics.md) and MP502 say about Keras's normalization layers under
# mixed_float16 with epsilon=1e-12 and a zero-variance input: the layers that compute in
# float32 stay finite, Keras 2's GroupNormalization adds the epsilon in float16 (NaN).
LAYER_EPSILON = """
    L = keras.layers if {keras} == 3 else tf.keras.layers
    x = np.ones((2, 4, 4, 8), "float32")
    made = {{
        "LayerNormalization": L.LayerNormalization(epsilon=1e-12)(x),
        "BatchNormalization": L.BatchNormalization(epsilon=1e-12)(x, training=True),
        "GroupNormalization": L.GroupNormalization(groups=2, epsilon=1e-12)(x),
    }}
    if {keras} == 3:
        made["RMSNormalization"] = L.RMSNormalization(epsilon=1e-12)(np.zeros_like(x))
    names = sorted(made)
    out = [made[n] for n in names]
"""
EXPECTED_LAYER_FINITE = {
    3: {"BatchNormalization": True, "GroupNormalization": True, "LayerNormalization": True, "RMSNormalization": True},
    2: {"BatchNormalization": True, "GroupNormalization": False, "LayerNormalization": True},
}

# Cases whose original text is finite when the same inputs run in float32: the NaN is
# float16's doing, not a bug of the fixture.
FINE_IN_FLOAT32 = (
    "MP501/mask_subtraction",
    "MP501/multiplied_mask",
    "MP502/norm_epsilon",
    "MP502/tied_epsilon_constant",
    "MP502/group_norm_keras2",
)

# Findings without a fix: the original is not finite under mixed_float16 and finite in
# float32 (the claim of the message holds where the rule reports).
UNFIXED = {
    "MP501/where_fill_then_softmax": (3, """
        q = np.random.RandomState(6).randn(2, 3, 8).astype("float32")
        mask = np.ones((2, 3, 3), bool); mask[0, 0, :] = False  # a fully masked row (left padding)
        out = Attention()(q, q, mask)
    """),
}
# Silent fixtures whose overflowing fill is harmless: the same output under
# mixed_float16 as in float32 (up to float16 rounding), and finite.
HARMLESS = {
    "MP501/clean_fill_into_custom_op": (3, """
        rng = np.random.RandomState(7)
        r, w, k, v = (rng.rand(2, 4).astype("float32") for _ in range(4))
        mask = np.array([[True, True, False, False], [True, True, True, True]])
        out = TimeMix()(r, w, k, v, padding_mask=mask)
    """),
}

CHILD = """
import json, textwrap
import numpy as np
import tensorflow as tf
if {keras} == 3:
    import keras
    set_policy = keras.mixed_precision.set_global_policy
else:
    set_policy = tf.keras.mixed_precision.set_global_policy

for job in json.loads({jobs!r}):
    set_policy(job["policy"])
    namespace = {{"__name__": "fixture_" + job["variant"]}}
    # compiled with the fixture's own path, so autograph can read the source of tf.functions
    if job["path"]:
        exec(compile(open(job["path"], encoding="utf-8").read(), job["path"], "exec"), namespace)
    namespace["np"], namespace["tf"] = np, tf
    if {keras} == 3:
        namespace.setdefault("keras", keras)
    exec(textwrap.dedent(job["driver"]), namespace)
    outputs = namespace["out"] if isinstance(namespace["out"], list) else [namespace["out"]]
    emit({{
        "case": job["case"], "variant": job["variant"],
        "finite": [bool(np.isfinite(np.asarray(tf.cast(o, tf.float32))).all()) for o in outputs],
        "dtypes": [tf.as_dtype(o.dtype).name for o in outputs],
        "values": [np.asarray(tf.cast(o, tf.float32)).ravel().tolist() for o in outputs] if job.get("values") else None,
        "names": namespace.get("names"),
    }})
"""


def _fixture_path(case: str, fixed: bool) -> str:
    code, name = case.split("/")
    path = FIXTURES / code / (f"{name}.fixed.py" if fixed else f"{name}.py")
    assert path.is_file(), path
    return str(path)


def _run(keras: int) -> dict[tuple[str, str], dict]:
    mixed = "mixed_float16"
    jobs = []
    for case, (version, driver) in CASES.items():
        if version == keras:
            jobs.append({"case": case, "variant": "before", "path": _fixture_path(case, False), "driver": driver, "policy": mixed})
            jobs.append({"case": case, "variant": "after", "path": _fixture_path(case, True), "driver": driver, "policy": mixed})
            if case in FINE_IN_FLOAT32:
                jobs.append({"case": case, "variant": "float32", "path": _fixture_path(case, False), "driver": driver, "policy": "float32"})
    for case, (version, driver) in PIPELINES.items():
        if version == keras:
            jobs.append({"case": case, "variant": "before", "path": _fixture_path(case, False), "driver": driver, "policy": mixed})
            jobs.append({"case": case, "variant": "after", "path": _fixture_path(case, True), "driver": driver, "policy": mixed})
    for table in (UNFIXED, HARMLESS):
        for case, (version, driver) in table.items():
            if version == keras:
                for variant, policy in (("before", mixed), ("float32", "float32")):
                    jobs.append({"case": case, "variant": variant, "path": _fixture_path(case, False),
                                 "driver": driver, "policy": policy, "values": True})
    for case, (version, driver) in FUNCTIONAL.items():
        if version == keras:
            jobs.append({"case": case, "variant": "functional", "path": _fixture_path(case, True), "driver": driver, "policy": mixed})
    jobs.append({"case": "layers", "variant": "epsilon", "path": None, "driver": LAYER_EPSILON.format(keras=keras), "policy": mixed})
    results = run_tf(CHILD.format(keras=keras, jobs=json.dumps(jobs)), keras=keras)
    return {(r["case"], r["variant"]): r for r in results}


@pytest.fixture(scope="module")
def outcomes() -> dict[int, dict[tuple[str, str], dict]]:
    return {2: _run(2), 3: _run(3)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixture_layer_is_not_finite_before_and_finite_after_the_fix(case, outcomes) -> None:
    keras = CASES[case][0]
    before = outcomes[keras][(case, "before")]
    after = outcomes[keras][(case, "after")]
    # the hazard is float16's: the layer really computed in float16 ...
    assert "float16" in before["dtypes"], before
    # ... and produced NaN/inf there, which the fixed text no longer does
    assert not all(before["finite"]), before
    assert all(after["finite"]), after


@pytest.mark.parametrize("case", sorted(FUNCTIONAL))
def test_dtype_aware_spelling_works_on_symbolic_tensors(case, outcomes) -> None:
    keras = FUNCTIONAL[case][0]
    result = outcomes[keras][(case, "functional")]
    assert all(result["finite"]), result


@pytest.mark.parametrize("case", FINE_IN_FLOAT32)
def test_the_original_is_finite_in_float32(case, outcomes) -> None:
    keras = CASES[case][0]
    result = outcomes[keras][(case, "float32")]
    assert result["dtypes"] and set(result["dtypes"]) == {"float32"}, result
    assert all(result["finite"]), result


@pytest.mark.parametrize("case", sorted(PIPELINES))
def test_fixed_input_pipeline_yields_float32_and_the_model_still_computes_in_float16(case, outcomes) -> None:
    keras = PIPELINES[case][0]
    before = outcomes[keras][(case, "before")]
    after = outcomes[keras][(case, "after")]
    assert before["dtypes"] == ["float16", "float16"], before
    assert after["dtypes"] == ["float32", "float16"], after
    assert all(after["finite"]), after


@pytest.mark.parametrize("keras", [2, 3])
def test_which_keras_normalization_layers_add_epsilon_in_float16(keras, outcomes) -> None:
    result = outcomes[keras][("layers", "epsilon")]
    assert set(result["dtypes"]) == {"float16"}, result  # outputs in the compute dtype ...
    finite = dict(zip(result["names"], result["finite"]))
    assert finite == EXPECTED_LAYER_FINITE[keras]  # ... but only these computed in float32


@pytest.mark.parametrize("case", sorted(UNFIXED))
def test_unfixed_hazard_is_not_finite_under_mixed_float16_and_finite_in_float32(case, outcomes) -> None:
    results = outcomes[UNFIXED[case][0]]
    assert not all(results[(case, "before")]["finite"]), "the reported hazard must show under mixed_float16"
    assert all(results[(case, "float32")]["finite"])


@pytest.mark.parametrize("case", sorted(HARMLESS))
def test_silent_fill_is_harmless_under_mixed_float16(case, outcomes) -> None:
    import numpy as np

    results = outcomes[HARMLESS[case][0]]
    mixed, wide = results[(case, "before")], results[(case, "float32")]
    assert all(mixed["finite"]) and all(wide["finite"])
    for a, b in zip(mixed["values"], wide["values"]):
        np.testing.assert_allclose(a, b, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("keras, cast", [(2, ["float16", "float32", "float32"]), (3, ["float16", "float16", "float16"])])
def test_which_call_arguments_keras_casts_to_the_compute_dtype(keras, cast) -> None:
    """MP501/MP502's dtype walk (an argument of a layer's `call` other than its inputs has
    the dtype its caller passes under Keras 2): Keras 2 casts only a layer's first input
    to the compute dtype, Keras 3 casts every floating argument."""
    seen = run_tf('''
        import tensorflow as tf
        from tensorflow import keras
        keras.mixed_precision.set_global_policy("mixed_float16")

        class Attention(keras.layers.Layer):
            def call(self, scores, mask, bias=None):
                emit([scores.dtype.name, mask.dtype.name, bias.dtype.name])
                return scores

        Attention()(tf.ones((2, 2)), tf.ones((2, 2)), bias=tf.ones((2,)))
    ''', keras=keras)
    assert seen[-1] == cast


def test_a_dtype_limit_fill_scaled_by_a_temperature_is_nan_where_the_constant_was_finite():
    """Why MP501 offers no `x.dtype.min` fix where the filled tensor is divided later
    (fixtures/MP501/fill_scaled_after_a_helper.py): in float32, a fully masked row divided
    by a 0.01 temperature stays finite with the written -100000 and becomes NaN with the
    dtype limit the fix would write."""
    path = _fixture_path("MP501/fill_scaled_after_a_helper", False)
    (seen,) = run_tf(f'''
import numpy as np
import tensorflow as tf
source = open({path!r}, encoding="utf-8").read()
finite = {{}}
for label, text in (("written", source), ("limit", source.replace("* _NEGATIVE_PADDING", "* weights.dtype.min"))):
    namespace = {{"__name__": "fixture_" + label}}
    exec(compile(text, {path!r}, "exec"), namespace)
    q = np.random.RandomState(3).randn(1, 2, 4).astype("float32")
    valid = np.array([[False, False]])  # every key masked: the row keeps only the fill
    out = namespace["ContextAttention"](temperature=0.01)(q, q, valid)
    finite[label] = bool(np.isfinite(out.numpy()).all())
emit(finite)
''', keras=3)
    assert seen == {"written": True, "limit": False}
