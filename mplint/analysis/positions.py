"""Positions of chosen nodes, computed in one code-generation pass.

libcst's PositionProvider records every node (about two parses' worth of work). Rules
report a handful of nodes, so this tracks only those: it counts characters while the
module regenerates its own text (identical to the source, libcst round-trips) and
notes the offsets where the wanted nodes start and end. It also notes the indentation
in force at each wanted node, so a replacement node can be rendered in place.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional

import libcst as cst
from libcst._nodes.internal import CodegenState


LARGE_TEXT = 200_000  # characters: above this, nothing is searched for in the whole text


@dataclass(frozen=True)
class Span:
    """Offsets into the module text. `full_*` include whitespace the node owns."""

    start: int
    end: int
    full_start: int
    full_end: int
    indent: tuple[str, ...]


@dataclass
class _TrackingState(CodegenState):
    wanted: set[int] = field(default_factory=set)
    offset: int = 0
    full: dict[int, tuple[int, int, tuple[str, ...]]] = field(default_factory=dict)
    syntactic: dict[int, tuple[int, int]] = field(default_factory=dict)
    _starts: list[int] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self.offset += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self.offset += len(value)

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.offset -= len(self.tokens.pop())

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self._starts.append(self.offset)
            self.full[id(node)] = (self.offset, -1, tuple(self.indent_tokens))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            start = self._starts.pop()
            self.full[id(node)] = (start, self.offset, self.full[id(node)][2])

    @contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: Optional[cst.CSTNode] = None,
        end_node: Optional[cst.CSTNode] = None,
    ) -> Iterator[None]:
        if id(node) not in self.wanted:
            yield
            return
        # The node's range may be hoisted from children: track those too.
        if start_node is not None:
            self.wanted.add(id(start_node))
        if end_node is not None:
            self.wanted.add(id(end_node))
        start = self.offset
        try:
            yield
        finally:
            end = self.offset
            if start_node is not None and id(start_node) in self.syntactic:
                start = self.syntactic[id(start_node)][0]
            if end_node is not None and id(end_node) in self.syntactic:
                end = self.syntactic[id(end_node)][1]
            self.syntactic[id(node)] = (start, end)


def compute_spans(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, Span]:
    """Spans (by node id) of the given nodes of `module`."""
    wanted = {id(n) for n in nodes}
    if not wanted:
        return {}
    state = _TrackingState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        wanted=set(wanted),
    )
    module._codegen(state)
    text_length = state.offset
    spans: dict[int, Span] = {}
    for node_id in wanted:
        full = state.full.get(node_id)
        if full is None:
            continue
        full_start, full_end, indent = full
        full_end = min(full_end, text_length)
        start, end = state.syntactic.get(node_id, (full_start, full_end))
        spans[node_id] = Span(start, min(end, text_length), full_start, full_end, indent)
    return spans


class PositionFinder:
    """Spans of nodes of one module, generating as little code as possible.

    Generating a whole module's code costs about as much as parsing it. Only the
    top-level statements that hold wanted nodes are generated, then placed in the
    source: where the statement's text occurs exactly once (and at the start of a
    line), that is where it is; otherwise Python's own (fast) parser tells the line it
    starts on. Each placement is checked against the source text; if anything
    disagrees, the whole module is generated instead.
    """

    def __init__(self, module: cst.Module, text: str, index) -> None:
        self.module = module
        self.text = text
        self._index = index  # the module's ModuleIndex
        self._starts: list[int] | None | bool = False  # syntactic starts, from `ast`
        self._positions: dict[int, int] | None = None  # top-level statement id -> index in the body

    def spans(self, nodes: Iterable[cst.CSTNode]) -> dict[int, Span]:
        """Spans by node id. Nodes inside a statement line are placed with just that
        line when its text is unique in the file; the rest through their top-level
        statement."""
        nodes = list(nodes)
        if not nodes:
            return {}
        spans: dict[int, Span] = {}
        by_line: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
        rest: list[cst.CSTNode] = []
        for node in nodes:
            line = self._index.statement_of(node)
            if isinstance(line, cst.SimpleStatementLine) and self._index.parent_of(line) is not self.module:
                by_line.setdefault(id(line), (line, []))[1].append(node)
            else:
                rest.append(node)
        for line, wanted in by_line.values():
            placed = self._line_spans(line, wanted)
            if placed is None:
                rest.extend(wanted)
            else:
                spans.update(placed)
        if rest:
            spans.update(self._top_level_spans(rest))
        return spans

    def _line_spans(self, line: cst.SimpleStatementLine, wanted: list[cst.CSTNode]) -> dict[int, Span] | None:
        """Generate one nested statement line (at its block's indentation) and place it
        where its text occurs exactly once, at the start of a line: in the whole text, or
        (a large text, or a line repeated elsewhere) in its top-level statement."""
        indent = [
            block.indent if block.indent is not None else self.module.default_indent
            for block in reversed(list(self._index.ancestors(line)))
            if isinstance(block, cst.IndentedBlock)
        ]
        state = _TrackingState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            indent_tokens=indent,
            wanted={id(n) for n in wanted},
        )
        line._codegen(state)
        code = "".join(state.tokens)
        whole = (0, len(self.text))
        window = self._window(line) if len(self.text) > LARGE_TEXT else whole
        at = self._unique_line(code, *window)
        if at is None and window == whole:
            window = self._window(line)
            at = self._unique_line(code, *window) if window != whole else None
        return None if at is None else _shifted(state, wanted, at)

    def _unique_line(self, code: str, start: int, end: int) -> int | None:
        """Where `code` occurs in text[start:end], if exactly once and at a line start."""
        text = self.text
        at = text.find(code, start, end)
        if at < 0 or text.find(code, at + 1, end) >= 0 or not (at == 0 or text[at - 1] in "\r\n"):
            return None
        return at

    def _window(self, node: cst.CSTNode) -> tuple[int, int]:
        """Offsets between which the top-level statement holding `node` lies (from the
        start of its syntax to the start of the next one's); the whole text if unknown."""
        starts = self._statement_starts()
        top = self._index.top_level_statement(node)
        if starts is None or top is None:
            return 0, len(self.text)
        if self._positions is None:
            self._positions = {id(statement): i for i, statement in enumerate(self.module.body)}
        position = self._positions[id(top)]
        return starts[position], starts[position + 1] if position + 1 < len(starts) else len(self.text)

    def _top_level_spans(self, nodes: list[cst.CSTNode]) -> dict[int, Span]:
        by_statement: dict[int, list[cst.CSTNode]] = {}
        for node in nodes:
            top = self._index.top_level_statement(node)
            if top is None:
                return compute_spans(self.module, nodes)
            by_statement.setdefault(id(top), []).append(node)
        spans: dict[int, Span] = {}
        for position, statement in enumerate(self.module.body):
            wanted = by_statement.get(id(statement))
            if not wanted:
                continue
            placed = self._statement_spans(position, statement, wanted)
            if placed is None:
                return compute_spans(self.module, nodes)
            spans.update(placed)
        return spans

    def _statement_spans(self, position: int, statement: cst.CSTNode, wanted: list[cst.CSTNode]) -> dict[int, Span] | None:
        state = _TrackingState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            wanted={id(n) for n in wanted} | {id(statement)},
        )
        statement._codegen(state)
        code = "".join(state.tokens)
        shift = self._place(position, statement, code, state)
        if shift is None:
            return None
        return _shifted(state, wanted, shift)

    def _place(self, position: int, statement: cst.CSTNode, code: str, state: _TrackingState) -> int | None:
        """Offset of the statement's generated text in the source, or None: where the
        text occurs once, else where Python's parser says the statement starts (first,
        in a large text, where searching the whole text per statement adds up)."""
        if len(self.text) > LARGE_TEXT:
            return self._place_by_start(position, statement, code, state) or self._unique_line(code, 0, len(self.text))
        at = self._unique_line(code, 0, len(self.text))
        return at if at is not None else self._place_by_start(position, statement, code, state)

    def _place_by_start(self, position: int, statement: cst.CSTNode, code: str, state: _TrackingState) -> int | None:
        starts = self._statement_starts()
        syntactic = state.syntactic.get(id(statement))
        if starts is None or syntactic is None:
            return None
        shift = starts[position] - syntactic[0]
        if shift < 0 or self.text[shift : shift + len(code)] != code:
            return None
        return shift

    def _statement_starts(self) -> list[int] | None:
        """Offset where each top-level statement's syntax starts, per Python's parser."""
        if self._starts is False:
            self._starts = _top_level_starts(self.module, self.text)
        return self._starts  # type: ignore[return-value]


def _shifted(state: _TrackingState, wanted: list[cst.CSTNode], shift: int) -> dict[int, Span] | None:
    """The tracked spans of `wanted`, moved by `shift` characters."""
    found: dict[int, Span] = {}
    for node in wanted:
        full = state.full.get(id(node))
        if full is None:
            return None
        full_start, full_end, indent = full
        begin, end = state.syntactic.get(id(node), (full_start, full_end))
        found[id(node)] = Span(begin + shift, end + shift, full_start + shift, full_end + shift, indent)
    return found


def _top_level_starts(module: cst.Module, text: str) -> list[int] | None:
    from mplint.inputs.code_scan import top_level_statements
    from mplint.core.textpos import LineIndex

    body = top_level_statements(text)  # Python's parser; the pre-filter's, for the same text
    if body is None:
        return None
    lines = LineIndex(text)
    starts: list[int] = []
    position = 0
    for statement in module.body:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        if position + count > len(body):
            return None
        _, _, _, row, column = body[position]
        starts.append(lines.offset(row, column + 1))
        position += count
    return starts if position == len(body) else None


def render(module: cst.Module, node: cst.CSTNode, indent: tuple[str, ...] = ()) -> str:
    """Source text of `node` as it would be generated at a place with this indentation."""
    state = CodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        indent_tokens=list(indent),
    )
    node._codegen(state)
    return "".join(state.tokens)
