"""Offsets <-> rows and columns in a text, for any newline style."""

from __future__ import annotations

import bisect
import re

_NEWLINE = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """Maps character offsets of a text to 1-based rows and columns and back."""

    __slots__ = ("starts", "length")

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]
        self.length = len(text)

    def row_col(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, self.length))
        row = bisect.bisect_right(self.starts, offset) - 1
        return row + 1, offset - self.starts[row] + 1

    def offset(self, row: int, column: int) -> int:
        """Offset of a 1-based row and column (clamped to the text)."""
        if row < 1:
            return 0
        if row > len(self.starts):
            return self.length
        return min(self.starts[row - 1] + column - 1, self.length)

    def line_start(self, row: int) -> int:
        return self.starts[row - 1]

    @property
    def row_count(self) -> int:
        return len(self.starts)


def split_lines_keepends(text: str) -> list[str]:
    """Like str.splitlines(keepends=True) but only for \\r\\n, \\r and \\n (the Python
    tokenizer's newlines), never form feeds or other Unicode line breaks."""
    lines = []
    start = 0
    for m in _NEWLINE.finditer(text):
        lines.append(text[start : m.end()])
        start = m.end()
    if start < len(text):
        lines.append(text[start:])
    return lines
