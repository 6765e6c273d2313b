"""`--output-format github` and `--output-format sarif`, checked against GitHub's
workflow-command syntax and the official SARIF 2.1.0 JSON schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import nbformat
import pytest
from click.testing import CliRunner
from nbformat import v4

from mplint.frontends.cli import main

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-2.1.0.json").read_text(encoding="utf-8"))
MODEL = (
    "import tensorflow as tf\n"
    "\n"
    "tf.keras.mixed_precision.set_global_policy('float16')\n"
    "layer = tf.keras.layers.Dense(64, dtype=\"bfloat16\")  # \U0001f680 \u00e9\n"
    "layer.fit()\n"
)
FIXED = MODEL.replace("'float16'", "'mixed_float16'").replace('"bfloat16"', '"mixed_bfloat16"')
BROKEN = "import tensorflow as tf\npolicy = 'mixed_float16'\nif policy:\nprint(policy)\n"
ANNOTATION = re.compile(
    r"^::(?P<command>error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$"
)


def mplint(*args: str):
    # --extended: the sample findings are MP103's, an extended-tier rule.
    return CliRunner().invoke(main, ["check", "--no-cache", "--extended", *args], catch_exceptions=False)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def _props(props: str) -> dict[str, str]:
    out = {}
    for item in props.split(","):
        key, _, value = item.partition("=")
        out[key] = value.replace("%2C", ",").replace("%3A", ":").replace("%25", "%")
    return out


def validate_sarif(text: str) -> dict:
    data = json.loads(text)
    jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER).validate(data)
    return data


# -- GitHub annotations -------------------------------------------------------------------

def test_github_annotations_format(tmp_path):
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "broken.py").write_text(BROKEN, encoding="utf-8")
    result = mplint("model.py", "broken.py", "--output-format", "github")
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines == [
        "::error file=broken.py,line=4,col=1,endLine=4,endColumn=1,title=MP000::MP000 "
        "SyntaxError: expected an indented block after 'if' statement on line 3",
        "::warning file=model.py,line=3,col=1,endLine=3,endColumn=54,title=MP103::MP103 global policy 'float16' "
        "keeps the variables in float16; use 'mixed_float16' (float32 variables, float16 compute) (extended suite)",
        "::warning file=model.py,line=4,col=9,endLine=4,endColumn=52,title=MP103::MP103 layer dtype 'bfloat16' "
        "keeps the variables in bfloat16; use 'mixed_bfloat16' (float32 variables, bfloat16 compute) "
        "(extended suite)",
    ]
    for line in lines:
        match = ANNOTATION.match(line)
        assert match, line
        props = _props(match["props"])
        assert list(props)[:1] == ["file"] and props["title"] == match["message"].split()[0]


def test_github_escapes_properties_and_relativises_paths(tmp_path):
    folder = tmp_path / "a,b:c"
    folder.mkdir()
    (folder / "m%1.py").write_text(MODEL, encoding="utf-8")
    result = mplint(str(folder / "m%1.py"), "--output-format", "github", "--select", "MP103")
    first = result.output.splitlines()[0]
    assert first.startswith("::warning file=a%2Cb%3Ac/m%251.py,line=3,col=1,")
    assert _props(ANNOTATION.match(first)["props"])["file"] == "a,b:c/m%1.py"


def test_github_nothing_to_report_prints_nothing(tmp_path):
    (tmp_path / "ok.py").write_text(FIXED, encoding="utf-8")
    result = mplint("ok.py", "--output-format", "github")
    assert result.exit_code == 0
    assert result.output == ""


def test_github_notebook_annotation_points_into_the_ipynb(tmp_path):
    nb = v4.new_notebook()
    nb.cells = [v4.new_markdown_cell("hi"), v4.new_code_cell("import tensorflow as tf\nx = 1"),
                v4.new_code_cell("y = 2\nlayer = tf.keras.layers.Dense(8, dtype='float16')\nlayer.fit()")]
    nbformat.write(nb, str(tmp_path / "nb.ipynb"))
    result = mplint("nb.ipynb", "--output-format", "github")
    (line,) = result.output.splitlines()
    match = ANNOTATION.match(line)
    props = _props(match["props"])
    assert match["message"].startswith("cell 3:2:9: MP103 layer dtype 'float16'")
    file_line = (tmp_path / "nb.ipynb").read_text(encoding="utf-8").splitlines()[int(props["line"]) - 1]
    assert file_line[int(props["col"]) - 1:].startswith("tf.keras.layers.Dense(8")


# -- SARIF ------------------------------------------------------------------------------

def _offset(text: str, line: int, column: int) -> int:
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    return starts[line - 1] + column - 1


def apply_sarif_fixes(text: str, results: list[dict]) -> str:
    """Apply every result's fix replacements (code point columns) to `text`."""
    replacements = []
    for result in results:
        for fix in result.get("fixes", []):
            for change in fix["artifactChanges"]:
                for r in change["replacements"]:
                    region = r["deletedRegion"]
                    start = _offset(text, region["startLine"], region["startColumn"])
                    end = _offset(text, region["endLine"], region["endColumn"])
                    replacements.append((start, end, r["insertedContent"]["text"]))
    for start, end, content in sorted(replacements, reverse=True):
        text = text[:start] + content + text[end:]
    return text


def test_sarif_validates_and_carries_rules_regions_and_fixes(tmp_path):
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "broken.py").write_text(BROKEN, encoding="utf-8")
    result = mplint("model.py", "broken.py", "--output-format", "sarif")
    assert result.exit_code == 1
    sarif = validate_sarif(result.output)
    assert sarif["version"] == "2.1.0"
    (run,) = sarif["runs"]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["invocations"] == [{"executionSuccessful": True}]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert {"MP000", "MP900", "MP103", "MP104"} <= set(ids)
    mp103 = rules[ids.index("MP103")]
    assert mp103["name"] == "float16-variables"
    assert "## Why is this bad?" in mp103["help"]["markdown"]
    assert mp103["shortDescription"]["text"].startswith("Finds a pure")
    results = run["results"]
    assert [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
            for r in results] == [("MP000", "error", "broken.py"), ("MP103", "warning", "model.py"),
                                  ("MP103", "warning", "model.py")]
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
    region = results[2]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 4, "startColumn": 9, "endLine": 4, "endColumn": 52}
    # Columns are code points: the region ends right after the call, before the emoji comment.
    line4 = MODEL.splitlines()[3]
    assert line4[region["endColumn"] - 2] == ")"
    assert all("(unsafe fix)" in f["description"]["text"] for r in results[1:] for f in r["fixes"])
    assert "fixes" not in results[0]
    # The fixes, applied as a SARIF viewer would, give what `--fix --unsafe-fixes` writes.
    assert apply_sarif_fixes(MODEL, results[1:]) == FIXED
    assert mplint("model.py", "--fix", "--unsafe-fixes").exit_code == 0
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == FIXED


def test_sarif_notebook_results_validate_and_point_into_the_file(tmp_path):
    nb = v4.new_notebook()
    nb.cells = [v4.new_code_cell("import tensorflow as tf"),
                v4.new_code_cell("%time x = 1\nlayer = tf.keras.layers.Dense(8, dtype='float16')\nlayer.fit()")]
    nbformat.write(nb, str(tmp_path / "my notebook.ipynb"))
    result = mplint("my notebook.ipynb", "--output-format", "sarif")
    sarif = validate_sarif(result.output)
    (res,) = sarif["runs"][0]["results"]
    location = res["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "my%20notebook.ipynb"
    assert res["properties"]["cell"] == 2
    assert res["message"]["text"].startswith("cell 2:2:9: layer dtype")
    assert "fixes" not in res
    region = location["region"]
    text = (tmp_path / "my notebook.ipynb").read_text(encoding="utf-8").splitlines()
    assert text[region["startLine"] - 1][region["startColumn"] - 1:].startswith("tf.keras.layers.Dense(8, ")
    assert text[region["endLine"] - 1][: region["endColumn"] - 1].endswith("dtype='float16')")


def test_sarif_reports_unreadable_paths_as_notifications(tmp_path):
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    result = mplint("model.py", "missing.py", "--output-format", "sarif")
    assert result.exit_code == 2
    sarif = validate_sarif(result.stdout)
    (invocation,) = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error" and "missing.py" in note["message"]["text"]


def test_sarif_help_uri_follows_the_declared_documentation_url(tmp_path, monkeypatch):
    import mplint.catalogue.ruledocs as ruledocs

    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    monkeypatch.setattr(ruledocs, "project_urls", lambda: {})
    without = validate_sarif(mplint("model.py", "--output-format", "sarif").output)
    assert all("helpUri" not in r for r in without["runs"][0]["tool"]["driver"]["rules"])  # no web docs known
    monkeypatch.setattr(ruledocs, "project_urls", lambda: {
        "homepage": "https://example.org/fork", "documentation": "https://example.org/fork/docs"})
    sarif = validate_sarif(mplint("model.py", "--output-format", "sarif").output)
    driver = sarif["runs"][0]["tool"]["driver"]
    mp103 = next(r for r in driver["rules"] if r["id"] == "MP103")
    assert mp103["helpUri"] == "https://example.org/fork/docs/rules/MP103.md"
    assert driver["informationUri"] == "https://example.org/fork"


def test_sarif_empty_run_validates(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    sarif = validate_sarif(mplint("ok.py", "--output-format", "sarif").output)
    assert sarif["runs"][0]["results"] == []
