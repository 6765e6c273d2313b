"""Bad input gets a one-line diagnostic, the other files are still checked."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import write

# MP103, an extended-tier rule: _json passes --extended to report it.
FLOAT16 = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'


def _json(cli, cwd, *args):
    result = cli(["--no-cache", "--extended", "--output-format", "json", *args], cwd=cwd)
    return result, json.loads(result.stdout)


def test_syntax_error_is_mp000_at_the_error_and_others_still_checked(cli, tmp_path):
    write(tmp_path / "broken.py", "import tensorflow as tf  # mixed_float16\n\ndef f(:\n    pass\n")
    write(tmp_path / "good.py", FLOAT16)
    result, findings = _json(cli, tmp_path, ".")
    assert result.exit_code == 1
    broken = next(f for f in findings if f["filename"] == "broken.py")
    assert broken["code"] == "MP000" and broken["message"].startswith("SyntaxError: ")
    assert broken["location"] == {"row": 3, "column": 7}
    assert any(f["filename"] == "good.py" and f["code"] == "MP103" for f in findings)


def test_unclosed_paren_message(cli, tmp_path):
    write(tmp_path / "broken.py", "import keras  # mixed_float16\nx = (1,\n")
    _, (finding,) = _json(cli, tmp_path, "broken.py")
    assert finding["message"] == "SyntaxError: '(' was never closed"
    assert finding["location"]["row"] == 2


def test_latin1_with_cookie_is_read(cli, tmp_path):
    text = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + FLOAT16
    write(tmp_path / "a.py", text, encoding="latin-1")
    _, findings = _json(cli, tmp_path, "a.py")
    assert [f["code"] for f in findings] == ["MP103"]


def test_latin1_without_cookie_is_a_clear_mp000(cli, tmp_path):
    (tmp_path / "a.py").write_bytes(b"# caf\xe9 mixed_float16\nx = 1\n")
    write(tmp_path / "b.py", FLOAT16)
    result, findings = _json(cli, tmp_path, ".")
    bad = next(f for f in findings if f["filename"] == "a.py")
    assert bad["code"] == "MP000"
    assert "cannot decode as utf-8: byte 0xe9 at line 1" in bad["message"]
    assert "\n" not in bad["message"]
    assert any(f["filename"] == "b.py" for f in findings)


def test_binary_file_is_mp000(cli, tmp_path):
    (tmp_path / "blob.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00 mixed_float16")
    _, (finding,) = _json(cli, tmp_path, ".")
    assert finding["code"] == "MP000" and "binary file" in finding["message"]


def test_empty_file_is_fine(cli, tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    result, findings = _json(cli, tmp_path, ".")
    assert result.exit_code == 0 and findings == []


def test_unreadable_file_exits_2_and_checks_the_rest(cli, tmp_path, monkeypatch):
    write(tmp_path / "secret.py", FLOAT16)
    write(tmp_path / "open.py", FLOAT16)
    import mplint.engine.runner as runner

    real_read = runner.read_bytes

    def guarded_read(path):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_read(path)

    monkeypatch.setattr(runner, "read_bytes", guarded_read)
    result, findings = _json(cli, tmp_path, ".")
    assert result.exit_code == 2
    assert "secret.py: cannot read: Permission denied" in result.stderr
    assert [f["filename"] for f in findings] == ["open.py"]


def test_unreadable_directory_is_reported(cli, tmp_path, monkeypatch):
    write(tmp_path / "locked" / "a.py", FLOAT16)
    write(tmp_path / "b.py", FLOAT16)
    real_scandir = os.scandir

    def guarded(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr("mplint.inputs.discovery.os.scandir", guarded)
    result, findings = _json(cli, tmp_path, ".")
    assert result.exit_code == 2 and "locked: permission denied" in result.stderr
    assert [f["filename"] for f in findings] == ["b.py"]


def test_huge_file_is_skipped_with_a_message(cli, tmp_path, monkeypatch):
    monkeypatch.setattr("mplint.inputs.source.MAX_FILE_BYTES", 150)
    write(tmp_path / "big.py", FLOAT16 + "# " + "x" * 200 + "\n")
    write(tmp_path / "small.py", FLOAT16)
    result, findings = _json(cli, tmp_path, ".")
    assert "big.py: skipped:" in result.stderr and "limit" in result.stderr
    assert [f["filename"] for f in findings] == ["small.py"]


def test_symlink_loops_are_not_followed(cli, tmp_path):
    write(tmp_path / "pkg" / "a.py", FLOAT16)
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "loop")
    os.symlink(tmp_path / "pkg" / "a.py", tmp_path / "pkg" / "alias.py")
    os.symlink(tmp_path / "nowhere.py", tmp_path / "pkg" / "dangling.py")
    result, findings = _json(cli, tmp_path, ".")
    assert [f["filename"] for f in findings] == ["pkg/a.py"]  # the alias is the same file
    assert "dangling.py: broken symbolic link" in result.stderr
    assert result.exit_code == 1


def test_broken_notebook_is_mp000(cli, tmp_path):
    (tmp_path / "nb.ipynb").write_text('{"cells": [ mixed_float16')
    write(tmp_path / "a.py", FLOAT16)
    result, findings = _json(cli, tmp_path, ".")
    nb = next(f for f in findings if f["filename"] == "nb.ipynb")
    assert nb["code"] == "MP000" and nb["message"].startswith("broken notebook: invalid JSON")
    assert any(f["filename"] == "a.py" for f in findings)


@pytest.mark.parametrize("name", ["dir.py", "pkg.ipynb"])
def test_directories_named_like_sources_are_walked_not_read(cli, tmp_path, name):
    write(tmp_path / name / "inner.py", FLOAT16)
    result, findings = _json(cli, tmp_path, ".")
    assert [f["filename"] for f in findings] == [f"{name}/inner.py"]
