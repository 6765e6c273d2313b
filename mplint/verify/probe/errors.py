"""Errors that stop a verification, and user tracebacks without the probe's frames."""

from __future__ import annotations

import os
import traceback

_PROBE_DIR = os.path.dirname(os.path.abspath(__file__))
TRACEBACK_LINES = 20


class ProbeError(Exception):
    """The verification cannot go on; `kind` says why (the parent reports it, exit 2)."""

    def __init__(self, kind: str, message: str, traceback_text: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.traceback = traceback_text


def _is_machinery(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PROBE_DIR) or filename.startswith("<frozen importlib")


def user_traceback(exc: BaseException, lines: int = TRACEBACK_LINES) -> str:
    """The exception's traceback, keeping only the user's frames (and library frames
    below them), last `lines` lines."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _is_machinery(f.filename)]
    text = ["Traceback (most recent call last):\n"]
    text += traceback.format_list(frames)
    text += traceback.format_exception_only(type(exc), exc)
    flat = "".join(text).rstrip("\n").splitlines()
    return "\n".join(flat[-lines:])


def describe(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()
    first = message[0] if message else ""
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
