"""The probe's reply channel: JSON lines appended to a file the parent named.

Never stdout: stdout and stderr belong to the user's code (which may print anything,
or nothing, or exit). Each line is flushed at once, so a child that dies halfway still
leaves the stages and checks it got through.
"""

from __future__ import annotations

import json


class Channel:
    def __init__(self, path: str) -> None:
        self._file = open(path, "a", encoding="utf-8")

    def send(self, event: str, **fields) -> None:
        fields["event"] = event
        self._file.write(json.dumps(fields, default=str) + "\n")
        self._file.flush()

    def stage(self, description: str) -> None:
        """What the child is doing now (the parent names it when the child times out or dies)."""
        self.send("stage", stage=description)

    def check(self, name: str, status: str, detail: str, measured: dict) -> None:
        self.send("check", name=name, status=status, detail=detail, measured=measured)

    def error(self, kind: str, message: str, traceback: str | None = None) -> None:
        self.send("error", kind=kind, message=message, traceback=traceback)

    def close(self) -> None:
        self._file.close()
