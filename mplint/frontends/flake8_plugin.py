"""A report-only flake8 plugin: `flake8` reports mplint's findings as `MP...` codes.

Installing mplint registers it (entry point `flake8.extension`, prefix `MP`), so a
setup that already runs flake8 (CI, an editor's flake8 integration) gets mplint's
findings with no extra configuration. It never fixes anything: run `mplint --fix`.

mplint's own configuration still applies (the nearest pyproject.toml/mplint.toml of
the file: select, ignore, per-file-ignores, exclude, target, assume-policy), then
flake8's (`--select`, `--extend-ignore`, `# noqa`) on top. mplint's engine codes
appear as MP000 (a file mplint could not parse) and MP900 (an internal error).
"""

from __future__ import annotations

import ast
import os
from typing import Iterator

from mplint import __version__


class MplintFlake8:
    name = "mplint"
    version = __version__

    def __init__(self, tree: ast.AST, filename: str, lines: list[str]) -> None:
        # flake8 passes the AST (required for a tree plugin; unused: mplint parses with
        # libcst), the file name ("stdin" for `flake8 -`) and the decoded lines.
        self.filename = filename
        self.lines = lines

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from mplint.inputs.config import ConfigError
        from mplint.engine.textcheck import check_text

        path = "" if self.filename in ("stdin", "-", None) else os.path.abspath(self.filename)
        try:
            outcome = check_text(path, "".join(self.lines))
        except ConfigError as exc:
            yield 1, 0, f"MP000 mplint configuration error: {exc}", type(self)
            return
        if outcome is None:
            return
        for finding in outcome.findings:
            yield finding.location.row, finding.location.column - 1, f"{finding.code} {finding.message}", type(self)
