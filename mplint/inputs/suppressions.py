"""`# noqa` suppressions.

- `# noqa` on any line a finding spans suppresses every code there; as in ruff, a line
  that cannot end with a comment (inside a multi-line string, or continued with `\\`)
  takes the `# noqa` of the line where that string or continuation ends;
- `# noqa: MP101, MP3` suppresses those codes or prefixes (other tools' codes, such as
  `# noqa: E501`, suppress nothing of mplint's);
- `# mplint: noqa` anywhere in the file, on a line of its own, suppresses the whole
  file; `# mplint: noqa: MP3` only those codes.

Comments are found with the tokenizer, so `"# noqa"` inside a string does not count.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

NOQA_COMMENT = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.I)
_FILE_NOQA = re.compile(r"#\s*mplint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.I)

ALL = ("",)  # prefix that matches every code


@dataclass
class Suppressions:
    lines: dict[int, tuple[str, ...]] = field(default_factory=dict)  # row -> code prefixes
    file: tuple[str, ...] = ()
    carried: dict[int, int] = field(default_factory=dict)  # row -> row whose noqa applies to it

    def suppresses(self, code: str, first_row: int, last_row: int) -> bool:
        if any(code.startswith(p) for p in self.file):
            return True
        for row in range(first_row, last_row + 1):
            for where in (row, self.carried.get(row)):
                prefixes = self.lines.get(where) if where is not None else None
                if prefixes and any(code.startswith(p) for p in prefixes):
                    return True
        return False


@dataclass
class CommentLines:
    """Where comments are and can go, by row (as the tokenizer counts rows)."""

    comments: dict[int, tuple[int, str, bool]] = field(default_factory=dict)  # row -> (column, text, alone)
    ends: set[int] = field(default_factory=set)  # rows whose end is outside strings and continuations
    carried: dict[int, int] = field(default_factory=dict)  # other rows -> the row where their construct ends


def comment_lines(text: str) -> CommentLines:
    """Comments and line ends from the tokenizer (raises tokenize.TokenError, SyntaxError)."""
    import bisect

    found = CommentLines()
    last_row = 0
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            found.comments[tok.start[0]] = (tok.start[1], tok.string, tok.line[: tok.start[1]].strip() == "")
        elif tok.type in (tokenize.NEWLINE, tokenize.NL):
            found.ends.add(tok.start[0])
        last_row = max(last_row, tok.end[0])
    ends = sorted(found.ends)
    for row in range(1, last_row + 1):
        if row not in found.ends:
            index = bisect.bisect_left(ends, row)
            if index < len(ends):
                found.carried[row] = ends[index]
    return found


def _codes(match: re.Match[str]) -> tuple[str, ...]:
    codes = match.group("codes")
    if not codes:
        return ALL
    return tuple(c.strip().upper() for c in codes.split(","))


def _comments(text: str) -> tuple[list[tuple[int, str, bool]], dict[int, int]]:
    """(row, comment, whether the comment is alone on its line), and the carried rows."""
    try:
        lines = comment_lines(text)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Fall back to a line scan: a comment-looking tail of each line.
        return [
            (i, line[line.index("#") :], line.strip().startswith("#"))
            for i, line in enumerate(text.splitlines(), 1)
            if "#" in line
        ], {}
    return [(row, comment, alone) for row, (_, comment, alone) in lines.comments.items()], lines.carried


def parse_suppressions(text: str) -> Suppressions:
    result = Suppressions()
    if "noqa" not in text and "NOQA" not in text.upper():
        return result
    file_codes: list[str] = []
    comments, carried = _comments(text)
    for row, comment, own_line in comments:
        file_match = _FILE_NOQA.search(comment)
        if file_match is not None and own_line:
            file_codes.extend(_codes(file_match))
            continue
        if file_match is not None:
            continue  # `# mplint: noqa` after code on a line is not a file-level switch
        match = NOQA_COMMENT.search(comment)
        if match is not None:
            result.lines[row] = _codes(match)
    result.file = tuple(file_codes)
    if result.lines:
        result.carried = {row: end for row, end in carried.items() if end in result.lines}
    return result
