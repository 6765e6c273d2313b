"""concise, grouped, pylint, junit and gitlab output, through the installed `mplint`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import nbformat
import pytest
from nbformat import v4

from tests.conftest import write
from tests.test_cli_flags import MODEL

POLICY = 'import tensorflow as tf\n\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "model.py", MODEL)  # MP103 at 5:5, MP101 at 6:5
    write(tmp_path / "pkg" / "policy.py", POLICY)  # MP103 at 3:1
    write(tmp_path / "pkg" / "clean.py", "print('ok')\n")
    return tmp_path


def _report(mplint_exe, project, fmt, *paths, env=None):
    # --extended: MP103, most of the sample findings, is an extended-tier rule.
    result = mplint_exe(["check", "-n", "--extended", "--output-format", fmt, *(paths or (".",))], cwd=project, env=env)
    assert result.exit_code == 1, result.stderr
    return result.stdout


def test_concise_is_text(mplint_exe, project):
    concise = _report(mplint_exe, project, "concise")
    assert concise == _report(mplint_exe, project, "text") == _report(mplint_exe, project, "concise", ".")
    assert concise.splitlines()[0].startswith("model.py:5:5: MP103 warning: layer dtype 'float16'")
    assert concise.splitlines()[2].startswith("pkg/policy.py:3:1: MP103 warning: global policy 'float16'")


def test_grouped(mplint_exe, project):
    lines = _report(mplint_exe, project, "grouped").splitlines()
    assert lines[0] == "model.py:"
    assert lines[1].startswith("  5:5 MP103 warning: layer dtype 'float16'")
    assert lines[2].startswith("  6:5 MP101 [*] error: the output of Sequential model")
    assert lines[3] == ""
    assert lines[4] == "pkg/policy.py:"
    assert lines[5].startswith("  3:1 MP103 warning: global policy 'float16'")
    assert lines[6:] == ["", "Found 3 findings.",
                         "[*] 1 fixable with the `--fix` option (2 hidden fixes can be enabled with the "
                         "`--unsafe-fixes` option)."]


def test_grouped_aligns_rows_and_columns(mplint_exe, tmp_path):
    body = "\n" * 8 + 'tf.keras.mixed_precision.set_global_policy("float16")\n'
    text = "import tensorflow as tf\n" + body + "layer = tf.keras.layers.Dense(8, dtype='float16')\nlayer.fit()\n"
    write(tmp_path / "m.py", text)
    lines = _report(mplint_exe, tmp_path, "grouped", "m.py").splitlines()
    assert lines[1].startswith("  10:1 MP103") and lines[2].startswith("  11:9 MP103")


def test_pylint(mplint_exe, project):
    lines = _report(mplint_exe, project, "pylint").splitlines()
    assert lines == [
        "model.py:5: [MP103] layer dtype 'float16' keeps the variables in float16; use 'mixed_float16' "
        "(float32 variables, float16 compute) (extended suite)",
        "model.py:6: [MP101] the output of Sequential model `model` is float16 (last layer `Dense` under the "
        "mixed policy): model outputs must be float32",
        "pkg/policy.py:3: [MP103] global policy 'float16' keeps the variables in float16; use 'mixed_float16' "
        "(float32 variables, float16 compute) (extended suite)",
    ]


def test_junit_is_xml_with_one_testcase_per_finding_grouped_by_file(mplint_exe, project):
    root = ET.fromstring(_report(mplint_exe, project, "junit"))
    assert root.tag == "testsuites" and root.get("name") == "mplint"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "3", "0")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["model.py", "pkg/policy.py"]
    assert [(s.get("tests"), s.get("failures")) for s in suites] == [("2", "2"), ("1", "1")]
    cases = suites[0].findall("testcase")
    assert [c.get("name") for c in cases] == ["MP103 (float16-variables)", "MP101 (float16-model-output)"]
    assert [(c.get("file"), c.get("line"), c.get("column")) for c in cases] == [("model.py", "5", "5"),
                                                                                ("model.py", "6", "5")]
    failure = cases[1].find("failure")
    assert failure.get("type") == "MP101"
    assert failure.get("message").startswith("the output of Sequential model `model` is float16")
    assert failure.text.startswith("model.py:6:5: MP101 the output")
    for suite in suites:
        assert all(len(case.findall("failure")) == 1 for case in suite.findall("testcase"))


def test_junit_escapes_and_reports_unreadable_paths(mplint_exe, tmp_path):
    write(tmp_path / "a&b.py", POLICY.replace('"float16"', '"float16"  # <odd> & "quoted"'))
    result = mplint_exe(["check", "-n", "--output-format", "junit", "a&b.py", "missing.py"], cwd=tmp_path)
    assert result.exit_code == 2
    root = ET.fromstring(result.stdout)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "1")
    names = [s.get("name") for s in root.findall("testsuite")]
    assert names == ["a&b.py", "missing.py"]
    error = root.findall("testsuite")[1].find("testcase/error")
    assert error.get("message") == "no such file or directory"


def test_junit_without_findings_has_one_passing_case(mplint_exe, tmp_path):
    write(tmp_path / "ok.py", "x = 1\n")
    result = mplint_exe(["check", "-n", "--output-format", "junit", "ok.py"], cwd=tmp_path)
    assert result.exit_code == 0
    root = ET.fromstring(result.stdout)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("1", "0", "0")
    (case,) = root.iter("testcase")
    assert not list(case)  # no failure: a pass


def _gitlab(mplint_exe, project, *paths, env=None):
    issues = json.loads(_report(mplint_exe, project, "gitlab", *paths, env=env))
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert set(issue["location"]) == {"path", "lines"} and issue["location"]["lines"]["begin"] >= 1
    return issues


def test_gitlab_code_quality_report(mplint_exe, project):
    issues = _gitlab(mplint_exe, project)
    assert [(i["check_name"], i["location"]["path"], i["location"]["lines"]["begin"]) for i in issues] == [
        ("MP103", "model.py", 5), ("MP101", "model.py", 6), ("MP103", "pkg/policy.py", 3)]
    assert issues[1]["severity"] == "major" and issues[0]["severity"] == "minor"  # error, warning
    assert issues[1]["description"].startswith("MP101 the output of Sequential model")
    assert len({i["fingerprint"] for i in issues}) == 3


def test_gitlab_fingerprints_are_stable_across_runs_and_moved_code(mplint_exe, project):
    first = [i["fingerprint"] for i in _gitlab(mplint_exe, project)]
    assert [i["fingerprint"] for i in _gitlab(mplint_exe, project)] == first
    write(project / "model.py", "# a comment moves everything down\n\n" + MODEL)
    moved = _gitlab(mplint_exe, project)
    assert moved[0]["location"]["lines"]["begin"] == 7
    assert [i["fingerprint"] for i in moved] == first


def test_gitlab_tells_identical_findings_apart_and_uses_ci_project_dir(mplint_exe, project):
    write(project / "twice.py", POLICY + 'tf.keras.mixed_precision.set_global_policy("float16")\n')
    issues = _gitlab(mplint_exe, project, str(project / "twice.py"), env={"CI_PROJECT_DIR": str(project)})
    assert [i["location"]["path"] for i in issues] == ["twice.py", "twice.py"]
    assert issues[0]["description"] == issues[1]["description"]
    assert issues[0]["fingerprint"] != issues[1]["fingerprint"]


def test_notebook_findings_point_into_the_ipynb_file(mplint_exe, tmp_path):
    notebook = v4.new_notebook()
    notebook.cells = [v4.new_markdown_cell("# Train"), v4.new_code_cell(MODEL)]
    nbformat.write(notebook, str(tmp_path / "train.ipynb"))
    raw_lines = (tmp_path / "train.ipynb").read_text().splitlines()
    line_of = next(i for i, line in enumerate(raw_lines, 1) if 'activation=\\"softmax\\"' in line)
    pylint = _report(mplint_exe, tmp_path, "pylint", "train.ipynb").splitlines()
    assert pylint[1].startswith(f"train.ipynb:{line_of}: [MP101] cell 2:6:5: the output")
    gitlab = json.loads(_report(mplint_exe, tmp_path, "gitlab", "train.ipynb"))
    assert gitlab[1]["location"]["lines"]["begin"] == line_of
    assert gitlab[1]["description"].startswith("MP101 cell 2:6:5: ")
    junit = ET.fromstring(_report(mplint_exe, tmp_path, "junit", "train.ipynb"))
    case = junit.findall("testsuite/testcase")[1]
    assert case.get("line") == str(line_of) and "cell 2:6:5" in case.find("failure").get("message")
