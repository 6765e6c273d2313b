"""Jupyter notebooks as documents: code cells are linted together, cell by cell.

The engine sees one Python text: each code cell, preceded by a sentinel comment line
(`# mplint-cell 3`), IPython magics and shell lines (`%`, `%%`, `!`, `x = !cmd`,
`obj?`) turned into comments of the same length. Positions are reported relative to
the cell (1-based cell number among all cells). A fix writes back only the sources of
the cells it changed, with magics restored; outputs, execution counts, metadata, ids
and the file's JSON layout (indentation, key order, ASCII escaping) are kept.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field

from mplint.diagnostics import Location
from mplint.source import Document, SourceError
from mplint.textpos import LineIndex

SENTINEL = "# mplint-cell "
_SENTINEL_LINE = re.compile(r"^# mplint-cell (\d+)$", re.M)
# Cell magics whose body is still Python.
_PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug"}
_MAGIC_LINE = re.compile(r"^\s*(?:[%!]|[\w.\[\], ]+=\s*[%!])|\?\s*$")


def _mask_cell(source: str) -> tuple[str, list[tuple[str, str]]]:
    """The cell's source with magic lines commented out, and (masked, original) pairs."""
    lines = source.split("\n")
    masked: list[tuple[str, str]] = []
    whole_cell = False
    first = lines[0].lstrip() if lines else ""
    if first.startswith("%%"):
        magic = first[2:].split(None, 1)[0] if len(first) > 2 else ""
        whole_cell = magic not in _PYTHON_CELL_MAGICS
    out = []
    for i, line in enumerate(lines):
        if (whole_cell or (i == 0 and first.startswith("%%")) or _MAGIC_LINE.search(line)) and line.strip():
            stripped = line.lstrip()
            commented = line[: len(line) - len(stripped)] + "#" + stripped[1:]
            masked.append((commented, line))
            out.append(commented)
        else:
            out.append(line)
    return "\n".join(out), masked


@dataclass
class _Cell:
    number: int  # 1-based among all cells
    index: int  # position in nb["cells"]
    source: str  # original source text
    masked: str
    magic_lines: list[tuple[str, str]]


@dataclass
class NotebookDocument(Document):
    notebook: dict = field(default_factory=dict)
    layout: dict = field(default_factory=dict)
    cells: list[_Cell] = field(default_factory=list)
    _rows: list[tuple[int, int]] = field(default_factory=list)  # (virtual row of sentinel, cell number)

    def _index_sentinels(self) -> None:
        lines = LineIndex(self.text)
        self._rows = [
            (lines.row_col(m.start())[0], int(m.group(1))) for m in _SENTINEL_LINE.finditer(self.text)
        ]
        self.protected = [(m.start(), m.end() + 1) for m in _SENTINEL_LINE.finditer(self.text)]
        for cell_text_start, cell in self._cell_spans():
            for masked, _ in cell.magic_lines:
                at = self.text.find(masked, cell_text_start)
                if at >= 0:
                    self.protected.append((at, at + len(masked)))

    def _cell_spans(self):
        by_number = {c.number: c for c in self.cells}
        for m in _SENTINEL_LINE.finditer(self.text):
            cell = by_number.get(int(m.group(1)))
            if cell is not None:
                yield m.end() + 1, cell

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
        return cell_number, Location(max(1, row - sentinel_row), col)

    def with_text(self, text: str) -> "NotebookDocument":
        doc = NotebookDocument(
            self.path, text, self.encoding, self.bom, notebook=self.notebook, layout=self.layout, cells=self.cells
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
            for masked, original in cell.magic_lines:
                body = body.replace(masked, original, 1)
            sources[cell.number] = body
        return sources

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
        return _dump(notebook, self.layout).encode("utf-8")


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
    return {
        "indent": indent,
        "ensure_ascii": not any(ord(ch) > 127 for ch in raw),
        "trailing_newline": raw.endswith("\n"),
    }


def _dump(notebook: dict, layout: dict) -> str:
    text = json.dumps(notebook, indent=layout["indent"], ensure_ascii=layout["ensure_ascii"])
    return text + ("\n" if layout["trailing_newline"] else "")


def decode_notebook(path: str, data: bytes) -> NotebookDocument:
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(f"notebook is not valid UTF-8 (byte 0x{data[exc.start]:02x})") from None
    try:
        notebook = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise SourceError(f"broken notebook: invalid JSON: {exc.msg}", Location(exc.lineno, exc.colno)) from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise SourceError("broken notebook: no 'cells' list")
    language = (
        notebook.get("metadata", {}).get("language_info", {}).get("name")
        or notebook.get("metadata", {}).get("kernelspec", {}).get("language")
        or "python"
    )
    layout = _detect_layout(raw)
    layout["faithful"] = _dump(notebook, layout) == raw
    cells: list[_Cell] = []
    parts: list[str] = []
    if str(language).lower() == "python":
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
            masked, magic_lines = _mask_cell(source)
            number = index + 1
            cells.append(_Cell(number, index, source, masked, magic_lines))
            parts.append(f"{SENTINEL}{number}\n{masked}\n")
    doc = NotebookDocument(path, "".join(parts), notebook=notebook, layout=layout, cells=cells)
    doc._index_sentinels()
    return doc
