"""Progress of long runs: on a terminal's stderr after a second, never in pipes or
machine-readable output, and counting every file exactly once."""

from __future__ import annotations

import io

import pytest

from mplint.inputs.config import ConfigResolver
from mplint.frontends.progress import Progress, terminal_progress
from mplint.engine.runner import RunOptions, run
from tests.conftest import write


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_shown_in_the_first_second_then_a_line_rewritten_in_place():
    clock, stream = Clock(), Terminal()
    progress = Progress(stream, clock=clock)
    progress(10, 100)
    assert stream.getvalue() == ""
    clock.now = 1.5
    progress(20, 100)
    progress(21, 100)  # within the redraw interval: not drawn
    clock.now = 1.7
    progress(30, 100)
    assert stream.getvalue() == "\rmplint: 20/100 files\rmplint: 30/100 files"
    progress.close()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_a_quick_run_leaves_no_trace():
    stream = Terminal()
    progress = Progress(stream, clock=Clock())
    progress(100, 100)
    progress.close()
    assert stream.getvalue() == ""


@pytest.mark.parametrize("output_format, quiet, stdin, stream, shown", [
    ("concise", False, False, Terminal(), True),
    ("concise", False, False, io.StringIO(), False),  # piped
    ("json", False, False, Terminal(), False),  # machine-readable
    ("sarif", False, False, Terminal(), False),
    ("concise", True, False, Terminal(), False),  # --quiet
    ("concise", False, True, Terminal(), False),  # stdin
])
def test_only_on_a_terminal_for_people(output_format, quiet, stdin, stream, shown):
    assert (terminal_progress(output_format, quiet, stdin, stream) is not None) == shown


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_runner_counts_every_file_once(tmp_path, monkeypatch, jobs):
    for i in range(24):
        text = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\n' if i % 3 else "x = 1\n"
        write(tmp_path / f"m{i:02d}.py", text)
    write(tmp_path / "bad.py", b"\x00\x01".decode())
    monkeypatch.chdir(tmp_path)
    seen: list[tuple[int, int]] = []
    run(["."], ConfigResolver(), RunOptions(jobs=jobs, cache=False), progress=lambda d, t: seen.append((d, t)))
    assert seen and all(total == 25 for _, total in seen)
    done = [d for d, _ in seen]
    assert done[-1] == 25 and all(0 <= d <= 25 for d in done)
