"""`--add-noqa`: suppress the current findings with `# noqa: CODE` comments.

Each finding gets its code on one line it spans (see `mplint.inputs.suppressions`): its first
line that already has a `# noqa:` comment, else its first line that a comment can end.
A comment cannot end a line inside a multi-line string or one continued with `\\`: for
those it goes where the string or continuation ends, as in ruff. Masked notebook magics
are never touched. Codes are merged into an existing `# noqa: E501` as
`# noqa: E501, MP101`; other comments stay as they are and the new directive follows
them (`x = 1  # type: ignore  # noqa: MP101`).

The new text is accepted only if it has the same syntax tree (so the code did not
change) and its suppressions cover every finding they were added for; otherwise the
file is left as it was, and the reason is given.
"""

from __future__ import annotations

import ast
import tokenize

from mplint.core.diagnostics import INTERNAL_ERROR, PARSE_ERROR, Finding
from mplint.inputs.source import Document
from mplint.inputs.suppressions import NOQA_COMMENT, comment_lines, parse_suppressions

_ENGINE_CODES = (PARSE_ERROR[0], INTERNAL_ERROR[0])


def add_noqa(doc: Document, findings: list[Finding]) -> tuple[str, int, list[str]]:
    """(new text, lines given a directive, why findings or the file were left alone)."""
    wanted = [f for f in findings if f.code not in _ENGINE_CODES and f.span_rows[0] > 0]
    if not wanted:
        return doc.text, 0, []
    try:
        lines = comment_lines(doc.text)
    except (tokenize.TokenError, SyntaxError):
        return doc.text, 0, ["no noqa comment added: the file does not tokenize"]
    comments = {row: (column, comment) for row, (column, comment, _) in lines.comments.items()}
    protected = _protected_rows(doc)
    by_row: dict[int, list[str]] = {}
    placed: list[Finding] = []
    skipped: list[str] = []
    for f in wanted:
        spanned = [r if r in lines.ends else lines.carried.get(r) for r in range(f.span_rows[0], f.span_rows[1] + 1)]
        rows = [r for r in dict.fromkeys(spanned) if r is not None and r not in protected]
        with_noqa = [r for r in rows if r in comments and NOQA_COMMENT.search(comments[r][1]) is not None]
        row = (with_noqa or rows or [None])[0]
        if row is None:
            skipped.append(f"{f.code} at {_where(f)}: no noqa comment added: no line it spans can take a comment")
            continue
        placed.append(f)
        codes = by_row.setdefault(row, [])
        if f.code not in codes:
            codes.append(f.code)
    if not by_row:
        return doc.text, 0, skipped
    text = _with_directives(doc.text, by_row, comments)
    problem = _check(doc, text, placed)
    if problem:
        return doc.text, 0, [f"no noqa comment added: {problem}"]
    return text, len(by_row), skipped


def _where(f: Finding) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{cell}{f.location.row}:{f.location.column}"


def _protected_rows(doc: Document) -> set[int]:
    """Rows whose end lies in a range fixes must not touch (notebook magics)."""
    rows: set[int] = set()
    for start, end in doc.protected:
        first, last = doc.row_of(start), doc.row_of(max(start, end - 1))
        rows.update(range(first, last + 1))
    return rows


def _merged(comment: str, codes: list[str]) -> str:
    match = NOQA_COMMENT.search(comment)
    assert match is not None and match.group("codes")
    present = [c.strip() for c in match.group("codes").split(",")]
    known = {c.upper() for c in present}
    merged = present + [c for c in codes if c.upper() not in known]
    return comment[: match.start()] + "# noqa: " + ", ".join(merged) + comment[match.end() :]


def _with_directives(text: str, by_row: dict[int, list[str]], comments: dict[int, tuple[int, str]]) -> str:
    lines = text.split("\n")  # rows as the tokenizer counts them; "\r" stays with its line
    for row, codes in by_row.items():
        line = lines[row - 1]
        ending = "\r" if line.endswith("\r") else ""
        body = line[: len(line) - len(ending)]
        start, comment = comments.get(row, (0, ""))
        if NOQA_COMMENT.search(comment) is not None:
            body = body[:start] + _merged(comment, sorted(codes)) + body[start + len(comment) :]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
        lines[row - 1] = body + ending
    return "\n".join(lines)


def _check(doc: Document, text: str, suppressed: list[Finding]) -> str | None:
    """Why `text` must not replace the document's text, or None."""
    flags = ast.PyCF_ONLY_AST | doc.compile_flags()
    try:
        before = ast.dump(compile(doc.text, doc.path, "exec", flags, dont_inherit=True))
        after = ast.dump(compile(text, doc.path, "exec", flags, dont_inherit=True))
    except (SyntaxError, ValueError) as exc:
        return f"the result would not parse ({exc})"
    if before != after:
        return "the comments would change the code"
    suppressions = parse_suppressions(text)
    missed = [f for f in suppressed if not suppressions.suppresses(f.code, *f.span_rows)]
    if missed:
        return f"a comment would not suppress {missed[0].code} at {_where(missed[0])}"
    return None
