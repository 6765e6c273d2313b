"""A file as the engine reads it: a notebook's code cells (mplint.inputs.notebook) or Python
source (mplint.inputs.source). The one place that knows both kinds."""

from __future__ import annotations

from mplint.inputs.source import Document, decode_python


def load_document(path: str, data: bytes) -> Document:
    """A file's document: a notebook's code cells, or Python source."""
    if path.endswith(".ipynb"):
        from mplint.inputs.notebook import decode_notebook

        return decode_notebook(path, data)
    return decode_python(path, data)
