"""Rule semantics found wrong on real code (bench/audit): severities, what is not reported
and why, in shapes the fixtures do not show. The fixtures hold the messages."""

from __future__ import annotations

import pytest

from mplint.core.diagnostics import Severity
from tests.fixture_cases import cases
from tests.support.engine import lint_and_fix


def _fixture(case_id: str):
    code, name = case_id.split("/")
    (case,) = [c for c in cases(code) if c.name == name]
    return case


def fixture_findings(case_id: str):
    case = _fixture(case_id)
    options = case.options()
    findings, _ = lint_and_fix(case.source(), case.select(), options.get("target", "keras3"),
                               extended=case.file_settings().extended)  # a medium rule's fixtures: extended
    return findings


# -- MP403: TF 1.x graph code is deprecated, not broken ------------------------------------

@pytest.mark.parametrize("case_id", [
    "MP403/tf1_session", "MP403/tf1_estimator_subclass", "MP403/tf1_horovod_wrapped",
    "MP403/tf1_project_optimizer", "MP403/env_var_tf1",
])
def test_tf1_graph_code_gets_an_info_without_a_fix(case_id):
    (finding,) = fixture_findings(case_id)
    assert finding.severity == Severity.INFO
    assert finding.fix is None
    assert "Keras optimizers (ValueError)" not in finding.message


def test_a_tf1_loss_scale_class_in_tf1_code_is_an_info():
    (finding,) = fixture_findings("MP401/tf1_loss_scale_class")
    assert finding.severity == Severity.INFO and finding.fix is None


def test_keras_code_keeps_the_error_and_its_fix():
    (finding,) = fixture_findings("MP403/api_page_tf115")
    assert finding.severity == Severity.ERROR and finding.fix is not None


def test_a_legacy_optimizer_or_the_ignored_switch_is_a_warning():
    assert [f.severity for f in fixture_findings("MP403/legacy_optimizer_keras2")] == [Severity.WARNING]
    assert [f.severity for f in fixture_findings("MP403/env_var")] == [Severity.WARNING]


def test_an_unknown_optimizer_outside_tf1_code_claims_no_exception_for_it():
    findings, _ = lint_and_fix("""
        import tensorflow as tf
        from training import make_optimizer

        opt = tf.compat.v1.mixed_precision.enable_mixed_precision_graph_rewrite(make_optimizer())
    """, frozenset({"MP403"}), "keras3")
    (finding,) = findings
    assert finding.severity == Severity.WARNING
    assert "accepts only TF 1.x and Keras 2 legacy optimizers" in finding.message


def test_a_keras_optimizer_in_a_tf1_style_module_is_still_an_error():
    findings, _ = lint_and_fix("""
        import tensorflow.compat.v1 as tf1
        import tensorflow as tf

        tf1.disable_eager_execution()
        opt = tf1.mixed_precision.enable_mixed_precision_graph_rewrite(tf.keras.optimizers.Adam())
    """, frozenset({"MP403"}), "keras3")
    (finding,) = findings
    assert finding.severity == Severity.ERROR
    assert "rejects Keras 3 optimizers (ValueError)" in finding.message


# -- MP4xx: code that runs only on an older TensorFlow ---------------------------------------

def test_version_guarded_compatibility_code_is_not_reported():
    assert fixture_findings("MP401/clean_version_guarded") == []


@pytest.mark.parametrize("guard, reported", [
    ('version.parse(tf.__version__) < version.parse("2.4")', False),
    ('LooseVersion(tf.__version__) < LooseVersion("2.9.0")', False),
    ('tf.__version__ < "2.4"', True),  # a string comparison: true on "2.21.0"
    ('tf.__version__.startswith("2.3")', False),
    ('int(tf.__version__.split(".")[1]) < 4', False),
    ('not hasattr(tf.keras.mixed_precision, "set_global_policy")', False),
    ('use_amp', True),  # not a version check
])
def test_the_guard_is_evaluated_as_python_would(guard, reported):
    findings, _ = lint_and_fix(f"""
        import tensorflow as tf
        from distutils.version import LooseVersion
        from packaging import version

        use_amp = True
        if {guard}:
            tf.keras.mixed_precision.experimental.set_policy("mixed_float16")
    """, frozenset({"MP401"}), "keras3")
    assert bool(findings) == reported


def test_keras2_targets_evaluate_the_guard_at_keras2_versions():
    source = """
        import tensorflow as tf
        from packaging import version

        if version.parse(tf.__version__) < version.parse("2.11"):
            tf.keras.mixed_precision.experimental.set_policy("mixed_float16")
    """
    assert lint_and_fix(source, frozenset({"MP401"}), "keras3")[0] == []  # dead on TF 2.21
    assert len(lint_and_fix(source, frozenset({"MP401"}), "keras2")[0]) == 1  # runs on TF 2.9, where it is gone


# -- MP103: only where float16 variables exist, and an info where nothing trains them ---------

@pytest.mark.parametrize("case_id", ["MP103/clean_serialization_roundtrip", "MP103/clean_fp32_variable_creator"])
def test_no_float16_variables_no_finding(case_id):
    assert fixture_findings(case_id) == []


def test_variable_free_layers_are_not_reported_but_variable_owners_are():
    findings = fixture_findings("MP103/variable_free_layers")
    assert [f.location.row for f in findings] == [16, 17]  # adapt()-ed Normalization, Attention(use_scale=True)
    assert all(f.severity == Severity.WARNING for f in findings)


@pytest.mark.parametrize("case_id", ["MP103/conversion_script", "MP103/frozen_layer"])
def test_untrained_float16_variables_are_an_info_without_a_fix(case_id):
    findings = fixture_findings(case_id)
    assert findings and all(f.severity == Severity.INFO and f.fix is None for f in findings)
    assert all("trains nothing" in f.message or "not trainable" in f.message for f in findings)


def test_a_library_module_that_nothing_trains_keeps_the_warning_in_the_extended_tier():
    """Layer code nothing in sight trains: still a warning (its users may train it), but
    its role premise is only assumed, so it is latent (extended tier) and has no fix."""
    source = """
        import tensorflow as tf

        def build_head(units):
            return tf.keras.layers.Dense(units, dtype="float16")
    """
    assert lint_and_fix(source, frozenset({"MP103"}), "keras3")[0] == []
    findings, fixed = lint_and_fix(source, frozenset({"MP103"}), "keras3", extended=True)
    assert [(f.severity, f.tier, f.fix) for f in findings] == [(Severity.WARNING, "extended", None)]
    assert 'dtype="float16"' in fixed


