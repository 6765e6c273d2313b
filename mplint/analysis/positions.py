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


def render(module: cst.Module, node: cst.CSTNode, indent: tuple[str, ...] = ()) -> str:
    """Source text of `node` as it would be generated at a place with this indentation."""
    state = CodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        indent_tokens=list(indent),
    )
    node._codegen(state)
    return "".join(state.tokens)
