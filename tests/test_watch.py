"""`mplint check --watch`: checks again when a file changes (watchfiles events)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from tests.conftest import MPLINT_EXE, write

POLICY = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("{}")\ntf.keras.Model().fit()\n'


def _read_until(wanted: str, seen: list[str], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if wanted in "".join(seen):
            return True
        time.sleep(0.05)
    return wanted in "".join(seen)


def test_watch_checks_again_after_a_change(tmp_path):
    path = write(tmp_path / "m.py", POLICY.format("mixed_float16"))
    # --extended: MP103, the finding the change brings, is an extended-tier rule.
    proc = subprocess.Popen([str(MPLINT_EXE), "check", "-n", "--extended", "--watch", "."], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda s=s, b=b: b.extend(iter(s.readline, "")), daemon=True)
               for s, b in ((proc.stdout, out), (proc.stderr, err))]
    for reader in readers:
        reader.start()
    try:
        assert _read_until("All checks passed!", out), (out, err)
        assert "Starting linter in watch mode..." in "".join(err)
        time.sleep(0.5)
        path.write_text(POLICY.format("float16"))
        assert _read_until("m.py:2:1: MP103", out), (out, err)
        assert "File change detected..." in "".join(err)
        assert proc.poll() is None  # still watching
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
