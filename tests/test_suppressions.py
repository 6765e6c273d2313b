"""`# noqa` and `# mplint: noqa`."""

from __future__ import annotations

import json

import pytest

from mplint.inputs.suppressions import parse_suppressions
from tests.conftest import write

HEADER = "# mixed_float16\n"


def _codes(cli, tmp_path, text):
    write(tmp_path / "a.py", HEADER + text)
    result = cli(["--no-cache", "--select", "MP99", "--output-format", "json", "a.py"], cwd=tmp_path)
    return sorted((f["location"]["row"], f["code"]) for f in json.loads(result.stdout))


@pytest.mark.parametrize(
    "line,suppressed",
    [
        ("x = old_name  # noqa", True),
        ("x = old_name  # noqa: MP990", True),
        ("x = old_name  # noqa: MP9", True),
        ("x = old_name  # noqa:MP990,E501", True),
        ("x = old_name  # NOQA: mp990", True),
        ("x = old_name  # noqa: E501", False),
        ("x = old_name  # noqa: MP994", False),
        ("x = '# noqa' + old_name", False),
    ],
)
def test_line_noqa(cli, test_rules, tmp_path, line, suppressed):
    found = _codes(cli, tmp_path, line + "\n")
    assert (found == []) is suppressed


def test_noqa_on_any_line_the_finding_spans(cli, test_rules, tmp_path):
    text = "x = f(\n    old_name,\n)  # noqa: MP990\n"
    # The finding spans only line 3 of the file (the name); noqa on the closing line
    # does not cover it.
    assert _codes(cli, tmp_path, text) == [(3, "MP990")]


def test_noqa_on_a_multiline_finding(cli, tmp_path):
    text = (
        "import tensorflow as tf\n"
        "tf.keras.mixed_precision.set_global_policy(\n"
        "    'float16',\n"
        ")  # noqa: MP103\n"
    )
    write(tmp_path / "a.py", text)
    result = cli(["--no-cache", "--output-format", "json", "a.py"], cwd=tmp_path)
    assert json.loads(result.stdout) == []


def test_file_level_noqa(cli, test_rules, tmp_path):
    assert _codes(cli, tmp_path, "# mplint: noqa\nold_name = lower_me\n") == []
    assert _codes(cli, tmp_path, "# mplint: noqa: MP990\nold_name = lower_me\n") == [(3, "MP994")]
    # After code on the same line it is not a file-level switch.
    assert _codes(cli, tmp_path, "y = 1  # mplint: noqa\nold_name = 1\n") == [(3, "MP990")]


def test_suppressed_findings_are_not_fixed(cli, test_rules, tmp_path):
    path = write(tmp_path / "a.py", HEADER + "a = 'fix me'  # noqa\nb = 'fix me'\n")
    cli(["--no-cache", "--select", "MP996", "--fix", "a.py"], cwd=tmp_path)
    assert path.read_text() == HEADER + "a = 'fix me'  # noqa\nb = 'fixed'\n"


def test_a_suppressed_member_keeps_its_whole_fix_group_unfixed(cli, test_rules, tmp_path):
    """A rename is one fix group: suppressing one use leaves every use as it was, and the
    others are reported without a fix (and say why)."""
    text = HEADER + "old_name = 1  # noqa\nb = old_name\n"
    path = write(tmp_path / "a.py", text)
    result = cli(["--no-cache", "--select", "MP990", "--fix", "--output-format", "json", "a.py"], cwd=tmp_path)
    assert path.read_text() == text
    (left,) = json.loads(result.stdout)
    assert left["fix"] is None and "not all of them can be fixed" in left["detail"]


def test_engine_codes_cannot_be_suppressed(cli, tmp_path):
    write(tmp_path / "a.py", "# mplint: noqa\nimport tensorflow as tf  # mixed_float16\nx = (\n")
    result = cli(["--no-cache", "a.py"], cwd=tmp_path)
    assert "MP000" in result.stdout


def test_parse_suppressions_unit():
    parsed = parse_suppressions("a = 1  # noqa: MP1, MP301\nb = 2 # noqa\n# mplint: noqa: MP5\n")
    assert parsed.lines == {1: ("MP1", "MP301"), 2: ("",)}
    assert parsed.file == ("MP5",)
    assert parsed.suppresses("MP101", 1, 1) and not parsed.suppresses("MP201", 1, 1)
    assert parsed.suppresses("MP201", 2, 2) and parsed.suppresses("MP501", 9, 9)


def test_noqa_where_a_string_or_continuation_ends_covers_its_lines():
    text = (
        'x = f"""{old_name}\n'      # 1: inside a multi-line string
        '"""  # noqa: MP990\n'      # 2
        "y = old_name + \\\n"       # 3: continued
        "    1  # noqa: MP990\n"    # 4
        "z = old_name\n"            # 5: its own line
        "w = 1  # noqa: MP990\n"    # 6
    )
    suppressions = parse_suppressions(text)
    assert suppressions.suppresses("MP990", 1, 1) and suppressions.suppresses("MP990", 3, 3)
    assert not suppressions.suppresses("MP990", 5, 5)
    assert not suppressions.suppresses("MP994", 1, 1)  # only the codes named
