"""Each rule's precision class (`Rule.precision`, CodeQL's `@precision`) is the figure its
findings measured on code it was never tuned on: the fresh audits before their fixes
(bench/rule_precision.py). A rule whose findings were mostly false there reports in the
extended tier, and its catalogue entry states the figures."""

from __future__ import annotations

import collections
import importlib.util
import sys
from pathlib import Path

from mplint.catalogue.registry import rule_class
from mplint.core.codes import RULES

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _rule_precision():
    sys.path.insert(0, str(BENCH))  # rule_precision imports its sibling audit.py
    try:
        spec = importlib.util.spec_from_file_location("rule_precision", BENCH / "rule_precision.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


rule_precision = _rule_precision()
MEASURED = rule_precision.measured()


def test_the_fresh_audits_are_measured():
    runs = rule_precision.fresh_runs()
    assert runs[0] == "fresh11" and len(runs) >= 16
    assert sum(sum(c.values()) for c in MEASURED.values()) > 400


def test_every_rule_class_is_the_class_its_figures_give():
    for code in RULES:
        by_figures = rule_precision.precision_class(MEASURED.get(code, collections.Counter()))
        if by_figures is not None:
            assert rule_class(code).precision == by_figures, (code, dict(MEASURED[code]))


def test_a_medium_rule_states_its_figures():
    medium = [code for code in RULES if rule_class(code).precision != "high"]
    assert {"MP103", "MP301", "MP303", "MP502"} <= set(medium)
    for code in medium:
        assert rule_class(code).precision_evidence == rule_precision.evidence(MEASURED[code]), code


def test_the_threshold_and_the_premises_it_counts():
    counts = collections.Counter
    assert rule_precision.precision_class(counts(true=1, false=3, debatable=0)) is None  # four labelled
    assert rule_precision.precision_class(counts(true=0, false=0, debatable=9)) is None  # none judged
    assert rule_precision.precision_class(counts(true=1, false=4, debatable=0)) == "medium"
    assert rule_precision.precision_class(counts(true=2, false=4, debatable=0)) == "high"  # one in three
    assert rule_precision.would_be_default({"premises": ["policy=inferred", "rule-precision=assumed"]})
    assert not rule_precision.would_be_default({"premises": ["policy=assumed"]})
    assert not rule_precision.would_be_default({"premises": ["call-path=conflicting", "role=proved"]})
