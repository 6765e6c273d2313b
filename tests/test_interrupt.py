"""Interrupting `--fix` leaves every file original or fully fixed, never truncated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from mplint.inputs.source import atomic_write

ORIGINAL = ('import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'
            + "# padding\n" * 400)
FIXED = ORIGINAL.replace('"float16"', '"mixed_float16"')


def _make_files(folder, count):
    paths = []
    for i in range(count):
        path = folder / f"pkg{i % 10}" / f"m{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(ORIGINAL)
        paths.append(path)
    return paths


def _interrupt_fix_run(folder, count, sig):
    """Start `mplint --fix` over `count` files, signal its process group once the first
    files are fixed; return (paths, whether the signal arrived mid-run, return code, stderr)."""
    paths = _make_files(folder, count)
    first = sorted(paths)[:20]  # discovery order: these are fixed first
    proc = subprocess.Popen(  # --extended: MP103, the finding fixed, is an extended-tier rule
        [sys.executable, "-m", "mplint", "--no-cache", "--extended", "--fix", "--unsafe-fixes", "-j", "2", "."],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if sum(p.read_text() == FIXED for p in first) >= 3:
            break
        time.sleep(0.01)
    signalled = proc.poll() is None
    if signalled:
        # Like a terminal: the signal goes to the whole process group.
        os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    return paths, signalled, proc.returncode, err.decode(errors="replace")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_fix_leaves_files_original_or_fixed(tmp_path, sig):
    # A loaded machine may finish a small run before the signal is sent: grow and retry.
    runs = []
    for attempt, count in enumerate((1200, 3000, 6000)):
        folder = tmp_path / f"attempt{attempt}"
        paths, signalled, returncode, err = _interrupt_fix_run(folder, count, sig)
        contents = [p.read_text() for p in paths]
        assert all(c in (ORIGINAL, FIXED) for c in contents), "a file is neither original nor fully fixed"
        assert [p for p in folder.rglob("*") if p.name.endswith(".mplint-tmp")] == []
        fixed = sum(c == FIXED for c in contents)
        if signalled and 0 < fixed < count:
            assert returncode in (128 + sig, 130), (returncode, fixed)
            return
        runs.append(f"{count} files: signalled={signalled}, exit {returncode}, {fixed} fixed, stderr {err[-500:]!r}")
    pytest.fail("the run always finished before the signal could interrupt it: " + "; ".join(runs))


def test_failed_write_keeps_the_original_and_removes_the_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text(ORIGINAL)

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write(str(path), FIXED.encode())
    assert path.read_text() == ORIGINAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_interrupt_during_write_keeps_the_original(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text(ORIGINAL)

    def interrupted_fsync(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(str(path), FIXED.encode())
    assert path.read_text() == ORIGINAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
