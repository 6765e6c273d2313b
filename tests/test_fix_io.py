"""Writing fixes back: bytes outside the edit, newlines, BOM, encodings, modes, atomicity."""

from __future__ import annotations

import codecs
import os
import stat

from tests.conftest import write

HEADER = "# mixed_float16\n"


def _fix(cli, tmp_path, *paths):
    return cli(["--no-cache", "--select", "MP990", "--fix", *paths], cwd=tmp_path)


def test_crlf_is_preserved(cli, test_rules, tmp_path):
    path = write(tmp_path / "a.py", HEADER + "x = old_name  # keep me\n\n\ny = 2\n", newline="\r\n")
    _fix(cli, tmp_path, "a.py")
    assert path.read_bytes() == (HEADER + "x = new_name  # keep me\n\n\ny = 2\n").replace("\n", "\r\n").encode()


def test_mixed_newlines_are_preserved(cli, test_rules, tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"# mixed_float16\r\nx = old_name\ny = 1\r\n")
    _fix(cli, tmp_path, "a.py")
    assert path.read_bytes() == b"# mixed_float16\r\nx = new_name\ny = 1\r\n"


def test_bom_is_preserved(cli, test_rules, tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(codecs.BOM_UTF8 + (HEADER + "x = old_name\n").encode())
    _fix(cli, tmp_path, "a.py")
    assert path.read_bytes() == codecs.BOM_UTF8 + (HEADER + "x = new_name\n").encode()


def test_declared_encoding_is_preserved(cli, test_rules, tmp_path):
    text = "# -*- coding: latin-1 -*-\n" + HEADER + "# caf\xe9\nx = old_name\n"
    path = write(tmp_path / "a.py", text, encoding="latin-1")
    _fix(cli, tmp_path, "a.py")
    assert path.read_bytes() == text.replace("old_name", "new_name").encode("latin-1")


def test_file_mode_is_preserved_and_no_temp_files_remain(cli, test_rules, tmp_path):
    path = write(tmp_path / "a.py", HEADER + "x = old_name\n")
    os.chmod(path, 0o751)
    _fix(cli, tmp_path, "a.py")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_read_only_file_is_reported_and_left_alone(cli, test_rules, tmp_path):
    path = write(tmp_path / "a.py", HEADER + "x = old_name\n")
    other = write(tmp_path / "b.py", HEADER + "y = old_name\n")
    os.chmod(path, 0o444)
    result = _fix(cli, tmp_path, ".")
    assert path.read_text() == HEADER + "x = old_name\n"
    assert other.read_text() == HEADER + "y = new_name\n"
    assert "a.py: not fixed: file is read-only" in result.stderr
    assert result.exit_code == 1  # the finding remains
    assert "a.py:2:5: MP990" in result.stdout


def test_symlink_is_kept_and_its_target_fixed(cli, test_rules, tmp_path):
    target = write(tmp_path / "real" / "a.py", HEADER + "x = old_name\n")
    link = tmp_path / "link.py"
    os.symlink(target, link)
    _fix(cli, tmp_path, "link.py")
    assert os.path.islink(link)
    assert target.read_text() == HEADER + "x = new_name\n"


def test_text_outside_the_edit_is_byte_identical(cli, test_rules, tmp_path):
    body = "\t# tabs and trailing spaces   \nx = [old_name,   1]  # odd  spacing\n\x0c\ndef f():\n\treturn old_name\n"
    path = write(tmp_path / "a.py", HEADER + body)
    _fix(cli, tmp_path, "a.py")
    assert path.read_text() == HEADER + body.replace("old_name", "new_name")


def test_fixed_file_parses_and_second_fix_changes_nothing(cli, test_rules, tmp_path):
    path = write(tmp_path / "a.py", HEADER + "older_name = old_name\n")
    cli(["--no-cache", "--select", "MP99", "--fix", "a.py"], cwd=tmp_path)
    first = path.read_bytes()
    compile(first, "a.py", "exec")
    result = cli(["--no-cache", "--select", "MP99", "--fix", "a.py"], cwd=tmp_path)
    assert path.read_bytes() == first
    assert result.exit_code == 0


def test_breaking_fix_leaves_file_untouched_and_exits_2(cli, test_rules, tmp_path):
    text = HEADER + "breakme = 1\n"
    path = write(tmp_path / "a.py", text)
    result = cli(["--no-cache", "--select", "MP991", "--fix", "a.py"], cwd=tmp_path)
    assert path.read_text() == text
    assert result.exit_code == 2
    assert "MP900" in result.stdout and "MP991" in result.stdout


def test_crashing_rule_exits_2_but_reports_the_rest(cli, test_rules, tmp_path):
    write(tmp_path / "a.py", HEADER + "crash_here = old_name\n")
    result = cli(["--no-cache", "--select", "MP990,MP992", "a.py"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "MP900 error: internal error in rule MP992 (test-crashes) on a.py" in result.stdout
    assert "MP990" in result.stdout
