"""libcst parsing at less cost: the same tree, built faster and in bounded memory.

libcst stays the parser of record; this module changes only what a parse costs.

- **Python checks first.** When Python's own parser (`ast`, about ten times faster)
  accepts the text, libcst builds its tree without validating every node again (its
  nodes' `__post_init__` validation is a quarter of a parse, redundant for the parser's
  own output: libcst's source says as much) and without the cyclic garbage collector
  walking the half-built tree (a libcst tree holds no cycles). Text Python rejects is
  parsed the plain way, so libcst raises exactly as before.
- **Large modules in chunks.** The native parser holds a whole file's tokens and
  intermediate tree (about 800 MB for a 50,000-line module). A module of more than
  `CHUNK_LINES` lines is cut between top-level statements, where a whole parse puts the
  lines in between into the next statement's `leading_lines` (after a simple statement,
  or where only empty lines separate two statements), parsed chunk by chunk with the
  whole file's configuration, and assembled into the Module a whole parse gives.
- **Re-parsing only what changed.** The chunks of the last chunked parse are kept: the
  fix loop's next parse of the fixed text parses again only the chunks a fix touched.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import libcst as cst

from mplint.inputs.code_scan import Statements, top_level_statements
from mplint.core.gc_pause import paused_gc

CHUNK_LINES = 400  # a chunk is cut at the first place allowed after this many lines

_last_chunks: dict[str, cst.Module] = {}  # chunk text -> its parse, from the last chunked parse


def parse(text: str, flags: int = 0) -> cst.Module:
    """The libcst Module of `text` (raises what `libcst.parse_module` raises). `flags`
    are the compile flags Python's parser needs for the text (top-level `await`)."""
    statements = top_level_statements(text, flags)
    if statements is None:  # Python rejects it: libcst says why, as always
        _last_chunks.clear()
        return cst.parse_module(text)
    with _building_parser_output():
        cuts = _cuts(text, statements) if "\r" not in text else []
        if cuts:
            try:
                return _parse_chunks(text, cuts)
            except (cst.ParserSyntaxError, ValueError, AssertionError):
                pass  # a cut libcst does not take (a continuation line): parse it whole
        _last_chunks.clear()
        return cst.parse_module(text)


@contextmanager
def _building_parser_output() -> Iterator[None]:
    """No node validation and no cyclic GC while libcst builds a tree from text Python
    has accepted."""
    try:
        from libcst._nodes.base import CSTNode
    except ImportError:  # another libcst layout: build as usual
        CSTNode = None
    validate = CSTNode.__dict__.get("__post_init__") if CSTNode is not None else None
    if validate is not None:
        CSTNode.__post_init__ = _built_by_the_parser  # type: ignore[union-attr]
    try:
        with paused_gc():
            yield
    finally:
        if validate is not None:
            CSTNode.__post_init__ = validate  # type: ignore[union-attr]


def _built_by_the_parser(self) -> None:
    """Stands in for libcst's node validation while the parser builds nodes."""


def _cuts(text: str, statements: Statements) -> list[int]:
    """1-based lines where a new chunk starts (none for a small module)."""
    if not statements or statements[-1][1] <= CHUNK_LINES:
        return []
    lines = text.split("\n")
    cuts: list[int] = []
    chunk_start = 1
    for (_, end, compound, _, _), (start, *_) in zip(statements, statements[1:]):
        if end + 1 - chunk_start < CHUNK_LINES or start <= end:
            continue
        if compound and any(lines[row - 1] for row in range(end + 1, start)):
            continue  # comments after a block may belong to the block: not a place to cut
        cuts.append(end + 1)
        chunk_start = end + 1
    return cuts


def _parse_chunks(text: str, cuts: list[int]) -> cst.Module:
    from libcst._parser.detect_config import detect_config

    whole = detect_config(text, partial=cst.PartialParserConfig(), detect_trailing_newline=True,
                          detect_default_newline=True).config
    config = cst.PartialParserConfig(
        python_version=f"{whole.version.major}.{whole.version.minor}",
        encoding=whole.encoding,
        future_imports=whole.future_imports,
        default_indent=whole.default_indent,
        default_newline=whole.default_newline,
    )
    offsets = [0]
    row = 1
    position = 0
    for cut in cuts:
        while row < cut:
            position = text.index("\n", position) + 1
            row += 1
        offsets.append(position)
    offsets.append(len(text))
    previous, kept = _last_chunks, {}
    body: list[cst.BaseStatement] = []
    modules: list[cst.Module] = []
    for start, end in zip(offsets, offsets[1:]):
        chunk = text[start:end]
        module = previous.pop(chunk, None)  # each earlier chunk is used once: no node twice in a tree
        if module is None:
            module = cst.parse_module(chunk, config=config)
        kept[chunk] = module
        statements = list(module.body)
        if modules and module.header:
            # A whole parse gives the lines before a statement to its leading_lines.
            statements[0] = statements[0].with_changes(leading_lines=(*module.header, *statements[0].leading_lines))
        if module.footer and end != len(text):
            raise AssertionError("a chunk ends in lines that belong to the next statement")
        modules.append(module)
        body.extend(statements)
    _last_chunks.clear()
    _last_chunks.update(kept)
    return cst.Module(
        body=body,
        header=modules[0].header,
        footer=modules[-1].footer,
        encoding=whole.encoding,
        default_indent=whole.default_indent,
        default_newline=whole.default_newline,
        has_trailing_newline=modules[-1].has_trailing_newline,
    )
