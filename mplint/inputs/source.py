"""Reading source files into text and writing fixed text back, byte-faithfully.

A `Document` is what the engine analyses: one text, plus how to report positions in
it and how to turn a fixed text back into the file's bytes. Python files keep their
encoding (PEP 263 cookie or UTF-8), BOM, newline style and file mode; notebooks
(see `mplint.inputs.notebook`) keep everything but the changed cells' sources.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import stat
import tokenize
from dataclasses import dataclass, field

from mplint.core.diagnostics import Location
from mplint.core.textpos import LineIndex

MAX_FILE_BYTES = 5 * 1024 * 1024


class SourceError(Exception):
    """The file cannot be analysed; the message is a one-line diagnostic."""

    def __init__(self, message: str, location: Location = Location(1, 1)) -> None:
        super().__init__(message)
        self.message = message
        self.location = location


@dataclass
class Document:
    """Text to analyse, and how positions and fixes map back to the file."""

    path: str
    text: str
    encoding: str = "utf-8"
    bom: bool = False
    # Offsets ranges that fixes must never touch (notebook magics).
    protected: list[tuple[int, int]] = field(default_factory=list)
    _lines: LineIndex | None = field(default=None, repr=False)

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    def locate(self, offset: int) -> tuple[int | None, Location]:
        """(cell, location) of an offset of `self.text`; cell is None for .py files."""
        row, col = self.lines.row_col(offset)
        return None, Location(row, col)

    def row_of(self, offset: int) -> int:
        return self.lines.row_col(offset)[0]

    def with_text(self, text: str) -> "Document":
        """The same file with another text (after fixes); positions recomputed lazily."""
        return Document(self.path, text, self.encoding, self.bom)

    def diff(self, text: str, filename: str) -> str:
        """A unified diff from the document's text to `text`."""
        import difflib

        return "".join(
            difflib.unified_diff(
                self.text.splitlines(keepends=True), text.splitlines(keepends=True), fromfile=filename, tofile=filename
            )
        )

    def render(self, text: str) -> bytes:
        """The file's bytes for a fixed text."""
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data

    def compile_flags(self) -> int:
        return 0

    def source_diagnostics(self) -> list[tuple[int | None, Location, str]]:
        """Parts of the file that could not be checked: (cell, location, message)."""
        return []


def decode_python(path: str, data: bytes) -> Document:
    """Decode a Python file the way the interpreter would, or raise SourceError."""
    if b"\x00" in data[:8192]:
        raise SourceError("binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "invalid or missing encoding declaration" not in str(exc):
            raise SourceError(f"cannot decode: {exc}") from None
        encoding = "utf-8"  # no cookie and not UTF-8: the decode below says where
    bom = encoding == "utf-8-sig"
    body = data[len(codecs.BOM_UTF8) :] if bom else data
    codec = "utf-8" if bom else encoding
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        row = body.count(b"\n", 0, exc.start) + 1
        raise SourceError(
            f"cannot decode as {codec}: byte 0x{body[exc.start]:02x} at line {row} "
            f"(re-save as UTF-8 or declare the encoding with a coding cookie)",
            Location(row, 1),
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in coding cookie") from None
    return Document(path, text, encoding=codec, bom=bom)


def read_bytes(path: str) -> bytes:
    """Read a file, refusing oversized ones (raises OSError or SourceError)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        info = os.fstat(fd)
        size = info.st_size
        if size > MAX_FILE_BYTES:
            raise FileTooLarge(path, size)
        first = os.read(fd, size + 1)
        if len(first) <= size and stat.S_ISREG(info.st_mode):
            return first  # a short read of a regular file is its end: one read call, not two
        chunks = [first]
        while True:
            chunk = os.read(fd, max(size, 1 << 16))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


class FileTooLarge(Exception):
    def __init__(self, path: str, size: int) -> None:
        super().__init__(
            f"{path}: skipped: {size / 2**20:.1f} MiB is over the {MAX_FILE_BYTES / 2**20:.0f} MiB limit"
        )


def atomic_write(path: str, data: bytes) -> None:
    """Replace a file's content atomically: temp file in the same folder, fsync, rename.

    Keeps the mode (and, when allowed, the owner) of the original. A symlink is kept and
    its target is rewritten. A file that is not writable is left alone (PermissionError).
    """
    import tempfile

    target = os.path.realpath(path)
    info = os.stat(target)
    if not os.access(target, os.W_OK) or not (info.st_mode & stat.S_IWUSR):
        raise PermissionError(errno.EACCES, "file is read-only", path)
    folder = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".mplint-tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        try:
            os.chown(tmp, info.st_uid, info.st_gid)
        except OSError:
            pass
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
