"""A module's `ast` tree, parsed once per text.

The pre-filter's code scan (`mplint.inputs.code_scan`) and the project scan
(`mplint.project.scan`) read the same file's text one after the other; the last text
parsed keeps its tree, so the second reader does not parse it again. One entry only:
a tree is large, and the readers of a file follow each other.
"""

from __future__ import annotations

import ast

_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)

_last: tuple[str, int, ast.Module | None] | None = None


def python_tree(text: str, flags: int = 0) -> ast.Module | None:
    """The text's tree under the compile `flags`, or None where Python rejects it."""
    global _last
    last = _last
    if last is not None and last[1] == flags and (last[0] is text or last[0] == text):
        return last[2]
    try:
        tree = compile(text, "<mplint>", "exec", ast.PyCF_ONLY_AST | flags, dont_inherit=True)
    except _PARSE_ERRORS:
        tree = None
    _last = (text, flags, tree)
    return tree


def forget() -> None:
    """Drop the kept tree (its text is done with)."""
    global _last
    _last = None
