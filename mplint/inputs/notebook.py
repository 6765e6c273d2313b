"""Jupyter notebooks as documents: code cells are linted together, cell by cell.

The engine sees one Python text: each code cell, preceded by a sentinel comment line
(`# mplint-cell 3`), with IPython syntax that starts a statement (line magics `%`,
shell lines `!`, `x = !cmd`, help `obj?`) replaced by a numbered marker
`pass  # mplint-magic 0`, and the body of a non-Python cell magic (`%%bash`) by marker
comments. Markers and sentinels are protected: a fix that would touch one is dropped
(the finding stays, without a fix). Positions are reported relative to the cell
(1-based cell number among all cells, markdown included). A fix writes back only the
sources of the cells it changed, with magics restored; outputs, execution counts,
metadata, ids and the file's JSON layout (indentation, key order, ASCII escaping,
newline style, BOM) are kept. A file whose JSON layout mplint cannot reproduce exactly
is reported but not rewritten.
"""

from __future__ import annotations

import ast
import codecs
import json
import re
from dataclasses import dataclass, field

from mplint.core.diagnostics import Location
from mplint.inputs.source import Document, SourceError
from mplint.core.textpos import LineIndex

SENTINEL = "# mplint-cell "
_SENTINEL_LINE = re.compile(r"^# mplint-cell (\d+)$", re.M)
# A masked magic line: `pass` keeps a block that holds only a magic valid Python.
_MAGIC_MARKER = "# mplint-magic "
_MASKED_LINE = re.compile(r"^([ \t]*)(?:pass  )?# mplint-magic (\d+)(?=\r?$)", re.M)
# Cell magics whose body is still Python.
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
# `x = !ls`, `a, b = %sx ls`: a magic whose output is assigned.
_ASSIGNED_MAGIC = re.compile(r"^[\w.\[\], ]+=\s*[%!]")
# IPython's automagics people type without `%` (`ls ./data`, `pip install x`, `cd ..`);
# a line counts only when it is not valid Python on its own.
_AUTOMAGIC = re.compile(
    r"^(?:ls|ll|cd|pwd|pip|conda|cat|cp|mv|rm|rmdir|mkdir|env|set_env|history|clear|less|more|man|"
    r"load_ext|reload_ext|matplotlib|run|time|timeit|who|whos|reset|pushd|popd|dirs|bookmark|sx|system)"
    r"(?:\s|$)"
)


class _Scanner:
    """Tracks, line by line, whether the next line continues a statement (open
    brackets, a multi-line string, a backslash), the way Python's tokenizer would.

    IPython only treats a line as a magic when it starts a statement, so a `%`, `!` or
    `?` inside a multi-line string or an open bracket is left alone.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.string: str | None = None  # the closing quote of an open string
        self.backslash = False

    @property
    def continues(self) -> bool:
        return self.depth > 0 or self.string is not None or self.backslash

    def feed(self, line: str) -> int:
        """Consume one line; returns where its code ends (a comment starts)."""
        line = line.rstrip("\r")
        code_end = len(line)
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if self.string is not None:
                if c == "\\":
                    i += 2
                elif line.startswith(self.string, i):
                    i += len(self.string)
                    self.string = None
                else:
                    i += 1
                continue
            if c == "#":
                code_end = i
                break
            if c in "\"'":
                quote = c * 3 if line.startswith(c * 3, i) else c
                self.string = quote
                i += len(quote)
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            i += 1
        ends_with_backslash = code_end == n and line.endswith("\\")
        if self.string is not None and len(self.string) == 1 and not ends_with_backslash:
            self.string = None  # an unterminated one-line string: a syntax error, not ours
        self.backslash = ends_with_backslash and self.string is None
        return code_end


def _is_automagic_line(stripped: str) -> bool:
    """`ls ./data`, `pip install x`: an automagic name, then arguments that do not make
    a Python statement (no assignment, no bracket left open, does not compile)."""
    if not _AUTOMAGIC.match(stripped) or re.match(r"^\w+\s*(?:[-+*/%&|^@<>]|//|\*\*|<<|>>)?=(?!=)", stripped):
        return False
    trial = _Scanner()
    trial.feed(stripped)
    if trial.continues:
        return False  # `history = model.fit(x,` goes on on the next line: Python
    try:
        compile(stripped, "<line>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except (SyntaxError, ValueError):
        return True
    return False


def _is_help_line(line: str, scanner: _Scanner) -> bool:
    """`obj?`, `obj??`, `?obj`: IPython's help syntax (`?` is no Python token)."""
    trial = _Scanner()
    trial.depth, trial.string, trial.backslash = scanner.depth, scanner.string, scanner.backslash
    code = line[: trial.feed(line)].strip()
    return code.endswith("?") and trial.string is None


def _mask_cell(source: str) -> tuple[str, list[str]]:
    """The cell's source with IPython syntax masked, and the original magic lines.

    A line magic, shell line or help line that starts a statement becomes
    `pass  # mplint-magic K` at the same indentation (so a block holding only a magic
    stays valid); every line of a non-Python cell magic (`%%bash`) becomes a comment
    `# mplint-magic K`. K indexes the returned originals, which `cell_sources` puts back.
    """
    lines = source.split("\n")
    originals: list[str] = []
    first = lines[0].lstrip() if lines else ""
    cell_magic = first.startswith("%%")
    whole_cell = cell_magic and (first[2:].split(None, 1) or [""])[0] not in _PYTHON_CELL_MAGICS
    scanner = _Scanner()
    out = []
    continued = False  # the previous magic line ended with a backslash
    for i, line in enumerate(lines):
        stripped = line.strip()
        magic = False
        if continued:
            magic = True
        elif stripped and (whole_cell or (i == 0 and cell_magic)):
            magic = True
        elif stripped and not scanner.continues and not stripped.startswith("#"):
            magic = (
                stripped[0] in "%!?"
                or bool(_ASSIGNED_MAGIC.match(stripped))
                or _is_help_line(line, scanner)
                or _is_automagic_line(stripped)
            )
        if not magic:
            scanner.feed(line)
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        # A continuation line of a magic (`!cmd \`) is only a comment: it may be indented.
        statement = "" if whole_cell or continued else "pass  "
        continued = line.rstrip("\r").endswith("\\")
        out.append(f"{indent}{statement}{_MAGIC_MARKER}{len(originals)}" + ("\r" if line.endswith("\r") else ""))
        originals.append(line.rstrip("\r") if line.endswith("\r") else line)
    return "\n".join(out), originals


@dataclass
class _Cell:
    number: int  # 1-based among all cells
    index: int  # position in nb["cells"]
    source: str  # original source text
    masked: str
    magic_lines: list[str]  # the original magic lines, by marker index
    dedent: str = ""  # indentation IPython strips from an indented cell (checked, not fixed)
    dedented_rows: frozenset[int] = frozenset()  # the cell rows (1-based) it was stripped from
    error: tuple[Location, str] | None = None  # a cell that is not Python: not checked

    @property
    def fixable(self) -> bool:
        return not self.dedent and self.error is None


def _syntax_error(text: str) -> tuple[Location, str] | None:
    try:
        compile(text, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        return Location(exc.lineno or 1, exc.offset or 1), f"SyntaxError: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return Location(1, 1), f"cannot parse: {exc}"
    return None


def _leading_indent(text: str) -> str:
    """The indentation IPython's `leading_indent` transformer removes: the first
    non-blank line's (it is then stripped from every line that starts with it)."""
    for line in text.split("\n"):
        if line.strip():
            return line[: len(line) - len(line.lstrip())]
    return ""


def _checked_cell(number: int, index: int, source: str) -> _Cell:
    """A cell as the engine will see it: magics masked; an indented cell dedented the
    way IPython runs it; a cell that still is not Python left out with its error."""
    masked, magic_lines = _mask_cell(source)
    error = _syntax_error(masked)
    if error is None:
        return _Cell(number, index, source, masked, magic_lines)
    prefix = _leading_indent(masked)
    if prefix:
        lines = masked.split("\n")
        rows = frozenset(i for i, line in enumerate(lines, 1) if line.startswith(prefix))
        dedented = "\n".join(line[len(prefix):] if i in rows else line for i, line in enumerate(lines, 1))
        if _syntax_error(dedented) is None:
            return _Cell(number, index, source, dedented, magic_lines, dedent=prefix, dedented_rows=rows)
    return _Cell(number, index, source, "# mplint: cell not checked", magic_lines, error=error)


@dataclass
class NotebookDocument(Document):
    notebook: dict = field(default_factory=dict)
    layout: dict = field(default_factory=dict)
    cells: list[_Cell] = field(default_factory=list)
    _rows: list[tuple[int, int]] = field(default_factory=list)  # (virtual row of sentinel, cell number)

    def _index_sentinels(self) -> None:
        lines = LineIndex(self.text)
        sentinels = list(_SENTINEL_LINE.finditer(self.text))
        self._rows = [(lines.row_col(m.start())[0], int(m.group(1))) for m in sentinels]
        self.protected = [(m.start(), m.end() + 1) for m in sentinels]
        self.protected += _marker_ranges(self.text)
        unfixable = {c.number for c in self.cells if not c.fixable}
        for i, m in enumerate(sentinels):
            if int(m.group(1)) in unfixable:
                end = sentinels[i + 1].start() if i + 1 < len(sentinels) else len(self.text)
                self.protected.append((m.start(), end))
        self.protected.sort()

    def locate(self, offset: int) -> tuple[int | None, Location]:
        row, col = self.lines.row_col(offset)
        cell_number, sentinel_row = None, 0
        for sentinel, number in self._rows:
            if sentinel < row or (sentinel == row and not cell_number):
                cell_number, sentinel_row = number, sentinel
            else:
                break
        if cell_number is None:
            return None, Location(row, col)
        cell = self._cell(cell_number)
        cell_row = max(1, row - sentinel_row)
        shift = len(cell.dedent) if cell is not None and cell_row in cell.dedented_rows else 0
        return cell_number, Location(cell_row, col + shift)

    def _cell(self, number: int) -> "_Cell | None":
        return next((c for c in self.cells if c.number == number), None)

    def source_diagnostics(self) -> list[tuple[int | None, Location, str]]:
        return [
            (c.number, c.error[0], f"{c.error[1]} (cell {c.number} is not Python; not checked)")
            for c in self.cells
            if c.error is not None
        ]

    def with_text(self, text: str) -> "NotebookDocument":
        doc = NotebookDocument(
            self.path, text, self.encoding, self.bom, notebook=self.notebook, layout=self.layout,
            cells=self.cells,
        )
        doc._index_sentinels()
        return doc

    def compile_flags(self) -> int:
        return ast.PyCF_ALLOW_TOP_LEVEL_AWAIT

    def cell_sources(self, text: str) -> dict[int, str]:
        """Each cell's new source in `text` (magics restored), by cell number."""
        matches = list(_SENTINEL_LINE.finditer(text))
        by_number = {c.number: c for c in self.cells}
        sources: dict[int, str] = {}
        for i, m in enumerate(matches):
            cell = by_number.get(int(m.group(1)))
            if cell is None:
                continue
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            body = text[m.end() + 1 : end]
            if body.endswith("\n"):
                body = body[:-1]
            if not cell.fixable:
                sources[cell.number] = cell.source  # never rewritten
                continue
            body = _unmask(body, cell.magic_lines, f"cell {cell.number}")
            sources[cell.number] = body
        return sources

    def diff(self, text: str, filename: str) -> str:
        """Unified diffs of the cells `text` changes (`nb.ipynb:cell 3`)."""
        import difflib

        sources = self.cell_sources(text)
        chunks = []
        for cell in self.cells:
            new = sources.get(cell.number, cell.source)
            if new != cell.source:
                label = f"{filename}:cell {cell.number}"
                chunks.extend(difflib.unified_diff(
                    (cell.source + "\n").splitlines(keepends=True), (new + "\n").splitlines(keepends=True),
                    fromfile=label, tofile=label,
                ))
        return "".join(chunks)

    def render(self, text: str) -> bytes:
        if not self.layout.get("faithful", True):
            raise SourceError(
                "not rewritten: the notebook's JSON layout is not Jupyter's standard one, "
                "so writing it back would change more than the fixed cells"
            )
        sources = self.cell_sources(text)
        notebook = json.loads(json.dumps(self.notebook))  # deep copy, same key order
        for cell in self.cells:
            new = sources.get(cell.number, cell.source)
            if new == cell.source:
                continue
            raw = notebook["cells"][cell.index]
            raw["source"] = _split_source(new) if isinstance(raw.get("source"), list) else new
        data = _dump(notebook, self.layout).encode("utf-8")
        return codecs.BOM_UTF8 + data if self.bom else data


def _unmask(body: str, magic_lines: list[str], where: str) -> str:
    """Put a cell's magic lines back in place of their markers (each exactly once)."""
    used: list[int] = []

    def restore(match: re.Match[str]) -> str:
        index = int(match.group(2))
        if index >= len(magic_lines):
            raise SourceError(f"not rewritten: {where}: a masked IPython line was changed")
        used.append(index)
        return magic_lines[index]

    body = _MASKED_LINE.sub(restore, body)
    if sorted(used) != list(range(len(magic_lines))):
        raise SourceError(f"not rewritten: {where}: a masked IPython line was moved or removed")
    return body


def _marker_ranges(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _MASKED_LINE.finditer(text)]


@dataclass
class CellDocument(Document):
    """One notebook cell on its own (as an editor holds it), IPython syntax masked."""

    magic_lines: list[str] = field(default_factory=list)

    def with_text(self, text: str) -> "CellDocument":
        return CellDocument(self.path, text, protected=_marker_ranges(text), magic_lines=self.magic_lines)

    def compile_flags(self) -> int:
        return ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def mask_cell(path: str, source: str) -> CellDocument:
    """A document for one cell's source; rows and columns of its Python lines are
    those of the source (only magic lines change)."""
    masked, magic_lines = _mask_cell(source)
    return CellDocument(path, masked, protected=_marker_ranges(masked), magic_lines=magic_lines)


def unmask_cell(source: str, fixed: str) -> str:
    """The fixed text of a cell masked by `mask_cell(path, source)`, magics restored."""
    return _unmask(fixed, _mask_cell(source)[1], "notebook cell")


def _split_source(source: str) -> list[str]:
    lines = source.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _detect_layout(raw: str) -> dict:
    indent = None
    match = re.search(r"\n( +)\"", raw)
    if match:
        indent = len(match.group(1))
    elif "\n" not in raw.strip():
        indent = None
    newline = "\r\n" if "\r\n" in raw else "\n"
    return {
        "indent": indent,
        "ensure_ascii": not any(ord(ch) > 127 for ch in raw),
        "newline": newline,
        "trailing_newline": raw.endswith(newline),
    }


def _dump(notebook: dict, layout: dict) -> str:
    """The notebook as JSON in the file's layout (JSON strings hold no raw newlines,
    so the newline style can be swapped in afterwards)."""
    text = json.dumps(notebook, indent=layout["indent"], ensure_ascii=layout["ensure_ascii"])
    text += "\n" if layout["trailing_newline"] else ""
    return text.replace("\n", layout["newline"]) if layout["newline"] != "\n" else text


def _table(value: object, key: str) -> dict:
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def decode_notebook(path: str, data: bytes) -> NotebookDocument:
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(f"notebook is not valid UTF-8 (byte 0x{data[exc.start]:02x})") from None
    try:
        notebook = json.loads(raw)
    except json.JSONDecodeError as exc:
        # json's `msg` can end in "at" (its position follows in str(exc)): say where, in full.
        raise SourceError(f"broken notebook: invalid JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno}, "
                          f"column {exc.colno}", Location(exc.lineno, exc.colno)) from None
    if isinstance(notebook, dict) and "worksheets" in notebook and "cells" not in notebook:
        raise SourceError("broken notebook: nbformat 3 notebooks are not supported (open and save it in Jupyter)")
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise SourceError("broken notebook: no 'cells' list")
    metadata = _table(notebook, "metadata")
    language = _table(metadata, "language_info").get("name") or _table(metadata, "kernelspec").get("language")
    layout = _detect_layout(raw)
    layout["faithful"] = _dump(notebook, layout) == raw
    cells: list[_Cell] = []
    parts: list[str] = []
    if language is None or str(language).lower().startswith("python"):
        for index, cell in enumerate(notebook["cells"]):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            if isinstance(source, list):
                if not all(isinstance(s, str) for s in source):
                    raise SourceError(f"broken notebook: cell {index + 1} has a non-text source")
                source = "".join(source)
            elif not isinstance(source, str):
                raise SourceError(f"broken notebook: cell {index + 1} has a non-text source")
            cell = _checked_cell(index + 1, index, source)
            cells.append(cell)
            parts.append(f"{SENTINEL}{cell.number}\n{cell.masked}\n")
    bom = data.startswith(codecs.BOM_UTF8)
    doc = NotebookDocument(path, "".join(parts), bom=bom, notebook=notebook, layout=layout,
                           cells=cells)
    doc._index_sentinels()
    return doc


class FileLocator:
    """Maps cell-relative positions to line and column of the `.ipynb` file itself, for
    reports whose consumers only know files (GitHub annotations, SARIF regions).

    Works when mplint can reproduce the file's JSON layout exactly: each source string
    is found in the file by dumping the notebook with unique tokens in their place.
    Columns count characters of the JSON text (escapes included).
    """

    def __init__(self, doc: NotebookDocument) -> None:
        self._cells: dict[int, list[tuple[int, str, int, int]]] = {}  # number -> (offset, piece, line, col)
        if not doc.layout.get("faithful"):
            return
        self._ensure_ascii = doc.layout["ensure_ascii"]
        notebook = json.loads(json.dumps(doc.notebook))
        token, dumped = "mplint-locate-", json.dumps(doc.notebook)
        while token in dumped:
            token += "x"
        pieces: dict[str, tuple[int, int, str]] = {}
        for cell in doc.cells:
            raw = notebook["cells"][cell.index]
            source = raw.get("source", "")
            parts = source if isinstance(source, list) else [source]
            names = []
            for j, part in enumerate(parts):
                name = f"{token}{cell.number}-{j}"
                pieces[name] = (cell.number, j, part)
                names.append(name)
            raw["source"] = names if isinstance(source, list) else names[0]
        text = _dump(notebook, doc.layout)
        found: dict[str, tuple[int, int]] = {}
        for row, line in enumerate(text.split(doc.layout["newline"]), 1):
            at = line.find('"' + token)
            if at >= 0:
                name = line[at + 1 : line.index('"', at + 1)]
                found[name] = (row, at + 2)  # 1-based column of the string's first character
        offsets: dict[int, int] = {}
        for name, (number, _, part) in pieces.items():
            if name not in found:
                self._cells.clear()
                return
            start = offsets.get(number, 0)
            self._cells.setdefault(number, []).append((start, part, *found[name]))
            offsets[number] = start + len(part)

    def locate(self, cell: int, row: int, column: int) -> tuple[int, int] | None:
        """(line, column) in the file of a 1-based cell row and column, if known."""
        pieces = self._cells.get(cell)
        if not pieces:
            return None
        source = "".join(piece for _, piece, _, _ in pieces)
        lines = LineIndex(source)
        if row > lines.row_count:
            return None
        offset = lines.offset(row, column)
        for start, piece, line, col in reversed(pieces):
            if start <= offset:
                prefix = piece[: offset - start]
                escaped = json.dumps(prefix, ensure_ascii=self._ensure_ascii)[1:-1]
                return line, col + len(escaped)
        return None


def file_locator(path: str) -> FileLocator | None:
    """A FileLocator for the notebook at `path` as it is now on disk, or None."""
    from mplint.inputs.source import read_bytes

    try:
        return FileLocator(decode_notebook(path, read_bytes(path)))
    except (OSError, SourceError, ValueError, KeyError, TypeError):
        return None
