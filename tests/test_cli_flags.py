"""`mplint check` flags at ruff's conventions, run through the installed `mplint`."""

from __future__ import annotations

import json

import pytest

from tests.conftest import write

# MP103 (unsafe fix, extended tier: reported with --extended) on line 5, MP101 (safe fix) on line 6.
MODEL = (
    "import tensorflow as tf\n"
    "\n"
    'tf.keras.mixed_precision.set_global_policy("mixed_float16")\n'
    "model = tf.keras.Sequential([\n"
    '    tf.keras.layers.Dense(64, activation="relu", dtype="float16"),\n'
    '    tf.keras.layers.Dense(10, activation="softmax"),\n'
    "])\n"
    "model.fit(x, y)\n"
)
SAFE_FIXED = MODEL.replace(
    '    tf.keras.layers.Dense(10, activation="softmax"),\n',
    '    tf.keras.layers.Dense(10),\n    tf.keras.layers.Activation("softmax", dtype="float32"),\n',
)
ALL_FIXED = SAFE_FIXED.replace('dtype="float16"', 'dtype="mixed_float16"')
MP103 = "model.py:5:5: MP103 warning: layer dtype 'float16' keeps the variables in float16"
MP101 = "model.py:6:5: MP101 [*] error: the output of Sequential model `model` is float16"


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "model.py", MODEL)
    return tmp_path


# -- summaries ------------------------------------------------------------------------------

def test_report_lists_findings_then_the_summary(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--extended", "model.py"], cwd=project)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(MP103) and lines[1].startswith(MP101)
    assert lines[0].endswith("(extended suite)")
    assert lines[2:] == [
        "",
        "Found 2 findings.",
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
    ]


def test_directory_without_python_files_warns_and_does_not_claim_a_pass(mplint_exe, tmp_path):
    (tmp_path / "docs").mkdir()
    write(tmp_path / "docs" / "notes.txt", "not python\n")
    result = mplint_exe(["check", "-n", "docs"], cwd=tmp_path)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "warning: No Python files found under the given path(s)" in result.stderr


def test_missing_path_is_an_error_on_stderr_and_no_pass_on_stdout(mplint_exe, tmp_path):
    write(tmp_path / "ok.py", "x = 1\n")
    result = mplint_exe(["check", "-n", "missing.py"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "All checks passed!" not in result.stdout and result.stdout == ""
    assert "mplint: error: missing.py: no such file or directory" in result.stderr
    # The other paths are still checked, and a clean one is still not a pass overall.
    both = mplint_exe(["check", "-n", "missing.py", "ok.py"], cwd=tmp_path)
    assert both.exit_code == 2 and "All checks passed!" not in both.stdout


def test_clean_file_passes(mplint_exe, tmp_path):
    write(tmp_path / "ok.py", "import tensorflow as tf\n")
    result = mplint_exe(["check", "-n", "ok.py"], cwd=tmp_path)
    assert result.exit_code == 0 and result.stdout == "All checks passed!\n" and result.stderr == ""


# -- --diff: implies --fix-only ---------------------------------------------------------------

def test_diff_prints_the_diff_and_exits_1_only_when_there_is_one(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--extended", "--diff", "model.py"], cwd=project)
    assert result.exit_code == 1
    assert result.stdout.startswith("--- model.py\n+++ model.py\n")
    assert '-    tf.keras.layers.Dense(10, activation="softmax"),\n' in result.stdout
    assert "MP103" not in result.stdout  # findings are not reported
    assert result.stderr == "Would fix 1 finding (1 additional fix available with `--unsafe-fixes`).\n"
    assert (project / "model.py").read_text() == MODEL


def test_diff_with_only_unfixable_findings_exits_0(mplint_exe, tmp_path):
    # MP103's fix is unsafe: without --unsafe-fixes there is nothing to diff, and the
    # remaining finding does not change the exit code.
    write(tmp_path / "m.py", 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n')
    result = mplint_exe(["check", "-n", "--extended", "--diff", "m.py"], cwd=tmp_path)
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == "No findings would be fixed (1 fix available with `--unsafe-fixes`).\n"
    unsafe = mplint_exe(["check", "-n", "--extended", "--diff", "--unsafe-fixes", "m.py"], cwd=tmp_path)
    assert unsafe.exit_code == 1 and '+tf.keras.mixed_precision.set_global_policy("mixed_float16")' in unsafe.stdout
    zero = mplint_exe(["check", "-n", "--extended", "--diff", "--unsafe-fixes", "--exit-zero", "m.py"], cwd=tmp_path)
    assert zero.exit_code == 0 and zero.stdout == unsafe.stdout


def test_diff_with_a_machine_format_prints_only_the_diff(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--diff", "--output-format", "json", "model.py"], cwd=project)
    assert result.exit_code == 1 and result.stdout.startswith("--- model.py") and result.stderr == ""


# -- --fix, --fix-only, --show-fixes, --exit-non-zero-on-fix -----------------------------------

def test_fix_only_fixes_and_reports_only_what_it_fixed(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--extended", "--fix-only", "model.py"], cwd=project)
    assert result.exit_code == 0  # MP103 remains, but --fix-only does not report it
    assert result.stdout == "Fixed 1 finding (1 additional fix available with `--unsafe-fixes`).\n"
    assert (project / "model.py").read_text() == SAFE_FIXED
    again = mplint_exe(["check", "-n", "--extended", "--fix-only", "model.py"], cwd=project)
    assert again.exit_code == 0 and again.stdout == "No findings fixed (1 fix available with `--unsafe-fixes`).\n"


def test_exit_non_zero_on_fix(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--extended", "--fix-only", "--unsafe-fixes", "--exit-non-zero-on-fix",
                         "model.py"], cwd=project)
    assert result.exit_code == 1 and result.stdout == "Fixed 2 findings.\n"
    assert (project / "model.py").read_text() == ALL_FIXED
    clean = mplint_exe(["check", "-n", "--extended", "--fix", "--exit-non-zero-on-fix", "model.py"], cwd=project)
    assert clean.exit_code == 0  # nothing fixed, nothing left


def test_show_fixes_lists_the_fixes_per_file_and_rule(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--extended", "--fix", "--unsafe-fixes", "--show-fixes", "model.py"],
                        cwd=project)
    assert result.exit_code == 0
    assert result.stdout == (
        "\n"
        "Fixed 2 findings:\n"
        "- model.py:\n"
        "    1 \u00d7 MP101 (float16-model-output)\n"
        "    1 \u00d7 MP103 (float16-variables)\n"
        "\n"
        "Found 2 findings (2 fixed, 0 remaining).\n"
    )


def test_show_fixes_cannot_be_used_with_diff(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--diff", "--show-fixes", "model.py"], cwd=project)
    assert result.exit_code == 2 and "--diff cannot be used with --show-fixes" in result.stderr


# -- --statistics ------------------------------------------------------------------------------

def test_statistics_text_and_json(mplint_exe, project):
    write(project / "more.py", MODEL)
    text = mplint_exe(["check", "-n", "--extended", "--statistics", "."], cwd=project)
    assert text.exit_code == 1
    assert text.stdout.splitlines()[:2] == [
        "2\tMP101\t[*] float16-model-output",
        "2\tMP103\t[ ] float16-variables",
    ]
    assert "Found 4 findings." in text.stdout and "model.py:" not in text.stdout
    data = json.loads(mplint_exe(["check", "-n", "--extended", "--statistics", "--output-format", "json", "."],
                                 cwd=project).stdout)
    assert data == [
        {"code": "MP101", "name": "float16-model-output", "count": 2, "fixable": True, "fixable_count": 2},
        {"code": "MP103", "name": "float16-variables", "count": 2, "fixable": False, "fixable_count": 0},
    ]
    unsafe = json.loads(mplint_exe(["check", "-n", "--extended", "--statistics", "--unsafe-fixes", "--output-format",
                                    "json", "."], cwd=project).stdout)
    assert unsafe[1]["fixable"] is True and unsafe[1]["fixable_count"] == 2


def test_statistics_refuses_formats_it_cannot_print(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--statistics", "--output-format", "sarif", "model.py"], cwd=project)
    assert result.exit_code == 2 and "--statistics prints text or json, not sarif" in result.stderr


# -- --output-file, --color ----------------------------------------------------------------------

def test_output_file_gets_the_report_and_stdout_stays_empty(mplint_exe, project):
    result = mplint_exe(["check", "-n", "--extended", "--output-format", "json", "-o", "reports/mplint.json",
                         "model.py"], cwd=project)
    assert result.exit_code == 1 and result.stdout == ""
    data = json.loads((project / "reports" / "mplint.json").read_text(encoding="utf-8"))
    assert [f["code"] for f in data] == ["MP103", "MP101"]
    text = mplint_exe(["check", "-n", "--extended", "--output-file", "out.txt", "model.py"], cwd=project)
    assert text.stdout == "" and (project / "out.txt").read_text().startswith(MP103)
    from_env = mplint_exe(["check", "-n", "--extended", "model.py"], cwd=project,
                          env={"MPLINT_OUTPUT_FILE": "env.txt", "MPLINT_OUTPUT_FORMAT": "pylint"})
    assert from_env.stdout == "" and (project / "env.txt").read_text().startswith("model.py:5: [MP103]")


ESC = "\x1b["


@pytest.mark.parametrize(
    "args,env,colored",
    [
        ([], {}, False),  # auto, and stdout is a pipe
        (["--color", "always"], {}, True),
        (["--color", "never"], {"FORCE_COLOR": "1"}, False),
        ([], {"FORCE_COLOR": "1"}, True),  # auto: FORCE_COLOR colours a pipe (CI logs)
        ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),  # NO_COLOR wins
        (["--color", "always"], {"NO_COLOR": "1"}, True),  # an explicit choice wins
        (["--color", "auto"], {"TERM": "dumb"}, False),
    ],
)
def test_color(mplint_exe, project, args, env, colored):
    result = mplint_exe(["check", "-n", "--extended", *args, "model.py"], cwd=project, env=env)
    assert (ESC in result.stdout) is colored
    if colored:
        assert f"{ESC}1m{ESC}31mMP103{ESC}0m" in result.stdout
        plain = result.stdout
        assert f"{ESC}33mwarning{ESC}0m" in result.stdout and f"{ESC}31merror{ESC}0m" in result.stdout
        for code in ("\x1b[1m", "\x1b[31m", "\x1b[33m", "\x1b[36m", "\x1b[0m"):
            plain = plain.replace(code, "")
        assert plain == mplint_exe(["check", "-n", "--extended", "model.py"], cwd=project).stdout


def test_color_never_reaches_machine_formats_or_files(mplint_exe, project):
    for fmt in ("json", "github", "pylint", "junit", "gitlab", "sarif"):
        result = mplint_exe(["check", "-n", "--extended", "--color", "always", "--output-format", fmt, "model.py"],
                            cwd=project)
        assert ESC not in result.stdout, fmt
    mplint_exe(["check", "-n", "--extended", "-o", "r.txt", "model.py"], cwd=project, env={"FORCE_COLOR": "1"})
    assert ESC not in (project / "r.txt").read_text()


def test_color_on_a_terminal(project):
    """auto colours a real terminal (a pseudo-terminal here)."""
    import os
    import pty
    import subprocess

    from tests.conftest import MPLINT_EXE

    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["TERM"] = "xterm"
    proc = subprocess.Popen([str(MPLINT_EXE), "check", "-n", "--extended", "model.py"], cwd=project,
                            stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=60)
    os.close(leader)
    assert ESC.encode() in b"".join(chunks)


# -- rule selection on the command line -----------------------------------------------------------

def test_extend_select_adds_to_the_configured_selection(mplint_exe, project):
    write(project / "pyproject.toml", '[tool.mplint]\nselect = ["MP101"]\n')
    assert "MP103" not in mplint_exe(["check", "-n", "--extended", "model.py"], cwd=project).stdout
    result = mplint_exe(["check", "-n", "--extended", "--extend-select", "MP103", "model.py"], cwd=project)
    assert "MP103" in result.stdout and "MP101" in result.stdout
    replaced = mplint_exe(["check", "-n", "--extended", "--select", "MP103", "model.py"], cwd=project)
    assert "MP103" in replaced.stdout and "MP101" not in replaced.stdout
    bad = mplint_exe(["check", "-n", "--extended", "--extend-select", "MP777", "model.py"], cwd=project)
    assert bad.exit_code == 2 and "--extend-select: unknown rule code MP777" in bad.stderr


def test_per_file_ignores_on_the_command_line(mplint_exe, project):
    write(project / "tests" / "test_model.py", MODEL)
    result = mplint_exe(["check", "-n", "--extended", "--output-format", "json", "--per-file-ignores", "tests/**:MP1",
                         "."], cwd=project)
    assert {(f["filename"], f["code"]) for f in json.loads(result.stdout)} == {("model.py", "MP103"),
                                                                               ("model.py", "MP101")}
    # ruff's spelling: comma-separated PATTERN:CODE pairs, one pattern's pairs merged.
    pairs = mplint_exe(["check", "-n", "--extended", "--output-format", "json",
                        "--per-file-ignores", "model.py:MP101,model.py:MP103", "model.py"], cwd=project)
    assert pairs.exit_code == 0 and json.loads(pairs.stdout) == []
    bad = mplint_exe(["check", "-n", "--extended", "--per-file-ignores", "model.py:MP101,MP103", "model.py"],
                     cwd=project)
    assert bad.exit_code == 2 and "expected <FilePattern>:<RuleCode>, got 'MP103'" in bad.stderr


def test_per_file_ignores_replaces_and_extend_adds_to_the_config(mplint_exe, project):
    write(project / "pyproject.toml", '[tool.mplint.per-file-ignores]\n"model.py" = ["MP101"]\n')
    codes = lambda r: {f["code"] for f in json.loads(r.stdout)}  # noqa: E731
    assert codes(mplint_exe(["check", "-n", "--extended", "--output-format", "json", "model.py"],
                            cwd=project)) == {"MP103"}
    replaced = mplint_exe(["check", "-n", "--extended", "--output-format", "json", "--per-file-ignores",
                           "model.py:MP103", "model.py"], cwd=project)
    assert codes(replaced) == {"MP101"}
    extended = mplint_exe(["check", "-n", "--extended", "--output-format", "json", "--extend-per-file-ignores",
                           "model.py:MP103", "model.py"], cwd=project)
    assert codes(extended) == set()


# -- options that do not go together ----------------------------------------------------------------

@pytest.mark.parametrize(
    "args,message",
    [
        (["--add-noqa", "--fix"], "--add-noqa cannot be used with --fix"),
        (["--add-noqa", "--diff"], "--add-noqa cannot be used with --diff"),
        (["--statistics", "--diff"], "--statistics cannot be used with --diff"),
        (["--verify"], "--verify needs --fix"),
        (["-", "model.py"], "`-` (standard input) cannot be combined with other paths"),
        (["--output-format", "yaml"], "Invalid value for '--output-format'"),
        (["--color", "sometimes"], "Invalid value for '--color'"),
    ],
)
def test_usage_errors_exit_2(mplint_exe, project, args, message):
    result = mplint_exe(["check", "-n", *args], cwd=project)
    assert result.exit_code == 2 and message in result.stderr and result.stdout == ""


def test_engine_codes_are_documented_and_cannot_be_selected_away(cli, tmp_path):
    for code in ("MP000", "MP900"):
        doc = cli(["rule", code])
        assert doc.exit_code == 0 and f"# {code}" in doc.stdout and "cannot be selected, ignored" in doc.stdout
        ignored = cli(["--ignore", code, "."], cwd=tmp_path)
        assert ignored.exit_code == 2 and f"{code} is an engine code" in ignored.stderr


def test_an_empty_selection_is_an_error_not_a_pass(cli, tmp_path):
    result = cli(["--select", "", "."], cwd=tmp_path)
    assert result.exit_code == 2 and "no rule code given" in result.stderr
    assert "All checks passed" not in result.stdout


def test_watch_without_watchfiles_is_one_clear_error(tmp_path):
    import subprocess
    import sys

    code = "import sys; sys.modules['watchfiles'] = None; from mplint.frontends.cli import main; main()"
    proc = subprocess.run([sys.executable, "-c", code, "check", "--watch", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "mplint: error: --watch needs watchfiles: pip install 'mplint[watch]'"


def test_check_verify_without_tensorflow_names_an_option_check_has(monkeypatch, tmp_path, capsys):
    """`mplint check --fix --verify` has no --python: its hint names `mplint verify --python`."""
    from types import SimpleNamespace

    import mplint.verify.report as report
    import mplint.verify.runner as runner
    import mplint.verify.target as target
    from mplint.verify.command import verify_fixed_files

    message = "x cannot import TensorFlow: install TensorFlow there, or pass --python with an interpreter that has it\n"
    monkeypatch.setattr(target, "entry_point", lambda path: "build_model")
    monkeypatch.setattr(runner, "verify", lambda path: SimpleNamespace(exit_code=2))
    monkeypatch.setattr(report, "render_text", lambda result: message)
    assert verify_fixed_files([str(tmp_path / "model.py")], to_stderr=False) == 2
    out = capsys.readouterr().out
    assert "pass --python" not in out and f"mplint verify --python PATH {tmp_path / 'model.py'}" in out
