"""Where a finding is, as the file-based formats report it.

Paths are given relative to a base folder (the working directory, or a CI's project
folder) when they are below it, `/`-separated. Notebook findings have rows and columns
inside a cell; formats that point into the `.ipynb` file itself (github, sarif, pylint,
junit, gitlab) place them on the line of the JSON file that holds that source text when
mplint can map it (`mplint.inputs.notebook.FileLocator`), and name the cell in the message.
"""

from __future__ import annotations

import os

from mplint.core.diagnostics import Finding


def relative_path(filename: str, base: str | None = None) -> str:
    """`filename` relative to `base` (default: the working directory) when below it."""
    path = filename
    if os.path.isabs(path) or base is not None:
        try:
            relative = os.path.relpath(os.path.abspath(path), base or os.getcwd())
        except ValueError:
            relative = path
        if not relative.startswith(".."):
            path = relative
    return path.replace(os.sep, "/")


def message_with_cell(f: Finding, lead: str = "") -> str:
    """`lead` and the message, after the cell position for a notebook finding."""
    if f.cell is None:
        return f"{lead}{f.message}"
    return f"cell {f.cell}:{f.location.row}:{f.location.column}: {lead}{f.message}"


class FilePositions:
    """(line, column) of findings in their files; one notebook locator per notebook."""

    def __init__(self) -> None:
        self._locators: dict[str, object] = {}

    def _locate(self, f: Finding, row: int, column: int) -> tuple[int, int] | None:
        if f.cell is None:
            return row, column
        if f.filename not in self._locators:
            from mplint.inputs.notebook import file_locator

            self._locators[f.filename] = file_locator(f.filename)
        locator = self._locators[f.filename]
        return locator.locate(f.cell, row, column) if locator is not None else None  # type: ignore[attr-defined]

    def start(self, f: Finding) -> tuple[int, int] | None:
        return self._locate(f, f.location.row, f.location.column)

    def end(self, f: Finding) -> tuple[int, int] | None:
        return self._locate(f, f.end_location.row, f.end_location.column)
