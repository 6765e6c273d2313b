"""The command line: default command, options, output formats, exit codes."""

from __future__ import annotations

import json
import os

import pytest

from mplint import __version__
from tests.conftest import write

# MP103 (an extended-tier rule, unsafe fix): the tests pass --extended to report it.
FLOAT16_POLICY = 'import tensorflow as tf\n\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'
TEST_HEADER = "# mixed_float16\n"


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "pkg" / "model.py", FLOAT16_POLICY)
    write(tmp_path / "pkg" / "plain.py", "print('hello')\n")
    return tmp_path


def test_version(cli):
    result = cli(["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"mplint {__version__}"


def test_check_is_the_default_command(cli, project):
    explicit = cli(["check", "--no-cache", "--extended", "pkg"], cwd=project)
    implicit = cli(["--no-cache", "--extended", "pkg"], cwd=project)
    assert explicit.exit_code == implicit.exit_code == 1
    assert explicit.stdout == implicit.stdout
    assert "pkg/model.py:3:1: MP103 " in implicit.stdout


def test_no_paths_means_current_directory(cli, project):
    result = cli(["--no-cache", "--extended"], cwd=project / "pkg")
    assert result.exit_code == 1
    assert result.stdout.startswith("model.py:3:1: MP103")


def test_text_output_summary_and_fix_marker(cli, project):
    result = cli(["--no-cache", "--extended", "pkg"], cwd=project)
    assert "Found 1 finding." in result.stdout
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option" in result.stdout
    # --unsafe-fixes alone shows the fix as available ([*]) without applying it.
    shown = cli(["--no-cache", "--extended", "--unsafe-fixes", "pkg"], cwd=project)
    assert "MP103 [*] " in shown.stdout
    assert (project / "pkg" / "model.py").read_text() == FLOAT16_POLICY


def test_clean_tree_exits_zero(cli, tmp_path):
    write(tmp_path / "ok.py", "import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy('mixed_float16')\n")
    result = cli(["--no-cache", "."], cwd=tmp_path)
    assert result.exit_code == 0
    assert result.stdout == "All checks passed!\n"


def test_json_output_is_exactly_the_documented_array(cli, project):
    result = cli(["--no-cache", "--extended", "--output-format", "json", "pkg"], cwd=project)
    data = json.loads(result.stdout)
    assert isinstance(data, list) and len(data) == 1
    item = data[0]
    assert set(item) == {"code", "name", "message", "severity", "filename", "location", "end_location", "fix", "cell",
                         "tier", "premises", "detail"}
    assert item["code"] == "MP103" and item["name"] == "float16-variables"
    assert item["severity"] == "warning"
    assert item["filename"] == os.path.join("pkg", "model.py")
    assert item["location"] == {"row": 3, "column": 1}
    assert item["end_location"] == {"row": 3, "column": 54}
    assert item["cell"] is None
    assert item["tier"] == "extended" and item["message"].endswith("(extended suite)")
    fix = item["fix"]
    assert set(fix) == {"applicability", "message", "edits"} and fix["applicability"] == "unsafe"
    (edit,) = fix["edits"]
    assert set(edit) == {"content", "location", "end_location"}
    assert edit == {"content": '"mixed_float16"', "location": {"row": 3, "column": 44}, "end_location": {"row": 3, "column": 53}}


def test_fix_applies_only_safe_fixes(cli, test_rules, tmp_path):
    path = write(tmp_path / "a.py", TEST_HEADER + "old_name = lower_me\n")
    result = cli(["--no-cache", "--select", "MP99", "--fix", "a.py"], cwd=tmp_path)
    assert path.read_text() == TEST_HEADER + "new_name = lower_me\n"
    assert result.exit_code == 0  # the unsafe one remains, an info: infos do not fail the run
    assert "(1 fixed, 1 remaining)" in result.stdout
    write(tmp_path / "b.py", TEST_HEADER + "old_name = lower_me\n")
    assert cli(["--no-cache", "--select", "MP99", "--fix", "--fail-on", "info", "b.py"], cwd=tmp_path).exit_code == 1


def test_fix_with_unsafe_fixes_applies_both(cli, test_rules, tmp_path):
    path = write(tmp_path / "a.py", TEST_HEADER + "old_name = lower_me\n")
    result = cli(["--no-cache", "--select", "MP990,MP994", "--fix", "--unsafe-fixes", "a.py"], cwd=tmp_path)
    assert path.read_text() == TEST_HEADER + "new_name = LOWER_ME\n"
    assert result.exit_code == 0
    assert "(2 fixed, 0 remaining)" in result.stdout


def test_diff_prints_the_fix_and_writes_nothing(cli, test_rules, tmp_path):
    path = write(tmp_path / "a.py", TEST_HEADER + "old_name = 1\n")
    result = cli(["--no-cache", "--select", "MP990", "--diff", "a.py"], cwd=tmp_path)
    assert path.read_text() == TEST_HEADER + "old_name = 1\n"
    assert result.exit_code == 1
    assert "--- a.py\n+++ a.py\n" in result.stdout
    assert "-old_name = 1\n+new_name = 1\n" in result.stdout
    assert "Would fix 1 finding" in result.stderr


def test_diff_with_nothing_to_fix_exits_zero(cli, test_rules, tmp_path):
    write(tmp_path / "a.py", TEST_HEADER + "new_name = 1\n")
    result = cli(["--no-cache", "--select", "MP990", "--diff", "a.py"], cwd=tmp_path)
    assert result.exit_code == 0 and result.stdout == ""


@pytest.mark.parametrize(
    "select,ignore,expected",
    [
        ("MP99", None, {"MP990", "MP994"}),
        ("MP990", None, {"MP990"}),
        ("MP99", "MP994", {"MP990"}),
        ("MP99", "MP99", set()),
        ("MP9", "MP99", set()),
        ("MP994", "MP99", {"MP994"}),  # the more specific selector wins
    ],
)
def test_select_and_ignore_prefixes(cli, test_rules, tmp_path, select, ignore, expected):
    write(tmp_path / "a.py", TEST_HEADER + "old_name = lower_me\n")
    args = ["--no-cache", "--output-format", "json", "--select", select]
    if ignore:
        args += ["--ignore", ignore]
    result = cli(args + ["a.py"], cwd=tmp_path)
    assert {f["code"] for f in json.loads(result.stdout)} == expected


def test_unknown_code_in_select_is_a_usage_error(cli, tmp_path):
    result = cli(["--select", "MP777", "."], cwd=tmp_path)
    assert result.exit_code == 2
    assert "unknown rule code MP777" in result.stderr


def test_exit_zero(cli, project):
    result = cli(["--no-cache", "--extended", "--exit-zero", "pkg"], cwd=project)
    assert result.exit_code == 0 and "MP103" in result.stdout


def test_exit_zero_does_not_hide_errors(cli, project):
    result = cli(["--no-cache", "--exit-zero", "pkg", "missing.py"], cwd=project)
    assert result.exit_code == 2


def test_missing_path_exits_2_and_checks_the_rest(cli, project):
    result = cli(["--no-cache", "--extended", "missing.py", "pkg"], cwd=project)
    assert result.exit_code == 2
    assert "missing.py: no such file or directory" in result.stderr
    assert "MP103" in result.stdout


def test_quiet_prints_findings_only(cli, project):
    result = cli(["--no-cache", "--extended", "--quiet", "pkg"], cwd=project)
    assert result.stdout.count("\n") == 1 and "Found" not in result.stdout


def test_github_output(cli, project):
    result = cli(["--no-cache", "--extended", "--output-format", "github", "pkg"], cwd=project)
    assert result.stdout.startswith("::warning file=pkg/model.py,line=3,col=1,endLine=3,endColumn=54,title=MP103::MP103 ")


def test_target_option_is_used_and_shown(cli, project):
    result = cli(["--no-cache", "--verbose", "--target", "keras2", "pkg"], cwd=project)
    assert "pkg/model.py: target keras2 (set by --target/config)" in result.stderr


def test_show_settings(cli, project):
    write(project / "pyproject.toml", "[tool.mplint]\nignore = ['MP104']\ntensor-core-multiple = 16\n")
    result = cli(["--show-settings", "pkg"], cwd=project)
    settings = json.loads(result.stdout)
    assert settings["ignore"] == ["MP104"] and settings["tensor_core_multiple"] == 16
    assert settings["config_file"].endswith("pyproject.toml")


def test_config_option_uses_that_file(cli, project):
    config = write(project / "custom.toml", "ignore = ['MP103']\n")
    # --extended reports MP103 (an extended-tier rule): only the file's ignore keeps it out.
    result = cli(["--no-cache", "--extended", "--config", str(config), "pkg"], cwd=project)
    assert result.exit_code == 0


def test_rule_prints_documentation(cli):
    result = cli(["rule", "MP103"])
    assert result.exit_code == 0
    assert result.stdout.startswith("# float16-variables (MP103)")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in result.stdout


def test_rule_all_lists_every_rule(cli):
    from mplint.core.codes import RULES

    result = cli(["rule", "--all"])
    assert result.exit_code == 0
    for code, (name, _) in RULES.items():
        assert any(line.startswith(code) and name in line for line in result.stdout.splitlines())


def test_rule_unknown_code(cli):
    result = cli(["rule", "MP777"])
    assert result.exit_code == 2 and "unknown rule code MP777" in result.stderr


def test_real_process_exit_codes_and_streams(mplint_process, project):
    found = mplint_process(["--no-cache", "--extended", "pkg"], cwd=project)
    assert found.exit_code == 1 and "MP103" in found.stdout
    clean = mplint_process(["--no-cache", "pkg/plain.py"], cwd=project)
    assert clean.exit_code == 0 and "All checks passed!" in clean.stdout
    usage = mplint_process(["--output-format", "yaml"], cwd=project)
    assert usage.exit_code == 2
