"""Progress of a long run on a terminal: `mplint: 1200/2000 files` on stderr, rewritten
in place, shown only once a run has taken `DELAY` seconds, and erased before the report.

Never shown when stderr is not a terminal, for machine-readable output formats, with
`--quiet`, or for stdin.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

DELAY = 1.0  # seconds before anything is shown
INTERVAL = 0.1  # seconds between redraws


class Progress:
    def __init__(self, stream: TextIO, delay: float = DELAY, clock=time.monotonic) -> None:
        self.stream = stream
        self.delay = delay
        self._clock = clock
        self._start = clock()
        self._drawn_at: float | None = None
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if now - self._start < self.delay:
            return
        if self._drawn_at is not None and now - self._drawn_at < INTERVAL and done < total:
            return
        self._drawn_at = now
        self._shown = True
        self.stream.write(f"\rmplint: {done}/{total} files")
        self.stream.flush()

    def close(self) -> None:
        """Erase the line, if one was drawn."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False


def terminal_progress(output_format: str, quiet: bool, reads_stdin: bool, stream: TextIO | None = None) -> Progress | None:
    """A Progress on stderr, when this run should show one."""
    from mplint.frontends.reporters import HUMAN_FORMATS

    stream = stream if stream is not None else sys.stderr
    if quiet or reads_stdin or output_format not in HUMAN_FORMATS:
        return None
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return Progress(stream)
