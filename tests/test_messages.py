"""Messages in one sentence (issue #28): what is wrong here and what to do, in about 150
characters; the why (mechanism, premise evidence, why there is no fix) is the finding's
`detail`, shown by `-v`, JSON, SARIF and the editor. (A premise that is not proved is
named in the message in a few words: tests/test_target.py.)"""

from __future__ import annotations

import json
import statistics

from mplint.engine.engine import lint
from mplint.inputs.documents import load_document
from tests.conftest import write
from tests.fixture_cases import cases

MESSAGE_LIMIT = 200  # a hard ceiling; the typical message is far shorter (median below)


def _all_fixture_findings():
    found = []
    for case in cases():
        settings = case.file_settings()
        doc = load_document(str(case.input), case.input.read_bytes())
        found += [(case.id, f) for f in lint(doc, settings, case.input.name)]
    return found


def test_every_fixture_message_is_short_and_the_why_is_its_detail():
    findings = _all_fixture_findings()
    assert len(findings) > 300
    too_long = [(case, len(f.message), f.message) for case, f in findings if len(f.message) > MESSAGE_LIMIT]
    assert too_long == []
    assert statistics.median(len(f.message) for _, f in findings) <= 150
    # The reasons a fix is withheld are kept, in the detail.
    details = [f.detail for _, f in findings if f.code == "MP206"]
    assert any("no fix: the gradients are changed" in d for d in details)


def test_detail_reaches_json_sarif_and_verbose(cli, tmp_path):
    write(tmp_path / "model.py", "import tensorflow as tf\n\n"
          "tf.keras.mixed_precision.set_global_policy('mixed_float16')\n\n\n"
          "class Block(tf.keras.layers.Layer):\n"
          "    def call(self, x):\n"
          "        return x / (tf.norm(x) + 1e-10)\n")
    # MP502 is a medium-precision rule (bench/rule_precision.py): extended tier
    result = cli(["--no-cache", "--extended", "--output-format", "json", "model.py"], cwd=tmp_path)
    (finding,) = json.loads(result.stdout)
    assert finding["code"] == "MP502" and len(finding["message"]) <= 150
    assert "smallest float16 is 6e-8" in finding["detail"] and "6e-8" not in finding["message"]
    sarif = json.loads(cli(["--no-cache", "--extended", "--output-format", "sarif", "model.py"], cwd=tmp_path).stdout)
    assert sarif["runs"][0]["results"][0]["properties"]["detail"] == finding["detail"]
    verbose = cli(["--no-cache", "--extended", "-v", "model.py"], cwd=tmp_path)
    assert f"MP502 why: {finding['detail']}" in verbose.stderr
