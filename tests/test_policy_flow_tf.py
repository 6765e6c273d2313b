"""The `scope_*` MP101 fixtures run as their code runs, with TensorFlow: the models whose
output layer really computes in float16 are exactly the ones MP101 reports.

Each fixture runs in a child process the way it is meant to run: a test module under
pytest (unittest classes, fixtures), a script as `__main__` followed by its module-level
functions that take no argument (what "runs after the module" means for an uncalled
function), a notebook's code cells in order. The child records the line that created
each layer, and for every model built its last layer's compute dtype; models whose
last layer belongs to another model too (an encoder over an intermediate tensor) are
parts, not trained outputs. The test then compares the float16 output lines with the
rows of the fixture's expected MP101 findings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fixture_cases import Case, cases
from tests.tf_harness import run_tf

SCOPE_CASES = [c for c in cases("MP101") if c.name.startswith("scope_")]

_CHILD = r'''
import inspect, json, os, runpy, sys, types
import keras
import tensorflow as tf

FIXTURE = os.path.realpath(PATH)
created = {}   # id(layer) -> the fixture line that created it
models = []


def creation_line():
    for frame in inspect.stack()[2:]:
        if os.path.realpath(frame.filename) == FIXTURE:
            return frame.lineno
    return None


def hook(family):
    original = family.layers.Layer.__init__
    def layer_init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        created.setdefault(id(self), creation_line())
        if isinstance(self, family.Model):
            models.append(self)
    family.layers.Layer.__init__ = layer_init
    family.mixed_precision.set_global_policy("float32")


hook(keras)
if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras
    hook(tf_keras)
if PATH.endswith("_test.py"):
    import pytest
    code = pytest.main([PATH, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "ignore"])
    assert code == 0, f"the fixture's tests failed ({code})"
elif PATH.endswith(".ipynb"):
    cells = [c for c in json.load(open(PATH))["cells"] if c["cell_type"] == "code"]
    source = "\n".join("".join(c["source"]) for c in cells)
    exec(compile(source, PATH, "exec"), {"__name__": "__main__"})
else:
    ran = set()
    sys.setprofile(lambda frame, event, arg: ran.add(frame.f_code) if event == "call" else None)
    namespace = runpy.run_path(PATH, run_name="__main__")
    sys.setprofile(None)
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and os.path.realpath(value.__code__.co_filename) == FIXTURE:
            if value.__code__ not in ran and value.__code__.co_argcount == 0:
                value()

outputs = []
for model in models:
    if not model.layers:
        continue
    last = model.layers[-1]
    part = any(last in other.layers and other.layers[-1] is not last for other in models if other is not model)
    if not part and created.get(id(last)) is not None:
        outputs.append([created[id(last)], last.compute_dtype])
emit({"outputs": outputs})
'''


def _runtime_outputs(case: Case, tmp_path: Path) -> dict[int, set[str]]:
    path = tmp_path / case.input.name
    path.write_bytes(case.input.read_bytes())
    code = f"PATH = {str(path)!r}\n" + _CHILD
    keras = 2 if "tf_keras" in case.source() or case.options().get("target") == "keras2" else 3
    (result,) = run_tf(code, keras=keras, cwd=str(tmp_path))
    found: dict[int, set[str]] = {}
    for line, dtype in result["outputs"]:
        found.setdefault(line, set()).add(dtype)
    return found


def _reported_rows(case: Case) -> set[int]:
    rows = set()
    for line in case.expected_path.read_text().splitlines():
        match = re.match(r"(?:cell \d+:)?(\d+):\d+ MP101 ", line)
        if match:
            rows.add(int(match.group(1)))
    return rows


def _notebook_rows(case: Case, rows: set[int], expected: str) -> set[int]:
    """Notebook findings are cell-relative: turn them into lines of the joined code."""
    cells = [c for c in json.loads(case.source())["cells"] if c["cell_type"] == "code"]
    starts, line = {}, 1
    for index, cell in enumerate(json.loads(case.source())["cells"], start=1):
        if cell["cell_type"] != "code":
            continue
        starts[index] = line
        line += "".join(cell["source"]).count("\n") + 1
    found = set()
    for text in expected.splitlines():
        match = re.match(r"cell (\d+):(\d+):\d+ MP101 ", text)
        if match:
            found.add(starts[int(match.group(1))] + int(match.group(2)) - 1)
    assert cells
    return found


@pytest.mark.tensorflow
@pytest.mark.parametrize("case", SCOPE_CASES, ids=lambda c: c.id)
def test_reported_outputs_are_exactly_the_float16_ones_at_run_time(case: Case, tmp_path: Path) -> None:
    outputs = _runtime_outputs(case, tmp_path)
    assert outputs, "the fixture built no model when run"
    half = {line for line, dtypes in outputs.items() if dtypes & {"float16", "bfloat16"}}
    reported = _reported_rows(case)
    if case.input.suffix == ".ipynb":
        reported = _notebook_rows(case, reported, case.expected_path.read_text())
    assert reported == half, f"float16 outputs at lines {sorted(half)}, MP101 reports lines {sorted(reported)}"
