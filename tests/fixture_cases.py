"""Fixture cases under fixtures/<CODE>/, shared by the fixture tests and the TF tests.

    fixtures/MP101/<case>.py          input
    fixtures/MP101/<case>.expected    findings, one per line: `row:col CODE [safe|unsafe] message`
                                      (empty file: the case must stay silent)
    fixtures/MP101/<case>.fixed.py    the text after `--fix --unsafe-fixes` (absent: no change)

A folder's `__init__.py` (the cases are modules of a package: library code) is no case.
An optional first-line directive configures the case:
    # fixture: target=keras2 assume-policy=mixed_float16 select=MP101,MP301 extended=1
(select defaults to the folder's code; extended=1 also reports the extended tier, the
default for the folder of a rule in the extended suite: `Rule.precision` below "high").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
_DIRECTIVE = re.compile(r"^# fixture:(.*)$", re.M)


@dataclass(frozen=True)
class Case:
    code: str
    name: str
    input: Path

    @property
    def id(self) -> str:
        return f"{self.code}/{self.name}"

    @property
    def expected_path(self) -> Path:
        return self.input.with_name(self.name + ".expected")

    @property
    def fixed_path(self) -> Path:
        return self.input.with_name(self.name + ".fixed" + self.input.suffix)

    def source(self) -> str:
        return self.input.read_bytes().decode("utf-8")

    def options(self) -> dict[str, str]:
        match = _DIRECTIVE.search(self.source().split("\n", 1)[0])
        options: dict[str, str] = {}
        if match:
            for item in match.group(1).split():
                key, _, value = item.partition("=")
                options[key] = value
        return options

    def select(self) -> frozenset[str]:
        from mplint.core.codes import all_codes
        from mplint.core.selection import is_enabled, parse_codes

        prefixes = parse_codes(self.options().get("select", self.code))
        return frozenset(c for c in all_codes() if is_enabled(c, prefixes, ()))

    def file_settings(self):
        from mplint.inputs.config import FileSettings

        options = self.options()
        return FileSettings(
            codes=self.select(),
            target=options.get("target", "keras3"),
            assumed_policy=options.get("assume-policy"),
            tensor_core_multiple=int(options.get("tensor-core-multiple", "8")),
            extended=options.get("extended", "1" if self._extended_suite() else "0") == "1",
        )

    def _extended_suite(self) -> bool:
        from mplint.catalogue.registry import rule_class
        from mplint.core.codes import RULES

        return self.code in RULES and rule_class(self.code).precision != "high"


def cases(code: str | None = None) -> list[Case]:
    found = []
    for folder in sorted(FIXTURES.iterdir()) if FIXTURES.is_dir() else []:
        if not folder.is_dir() or (code and folder.name != code):
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix not in (".py", ".ipynb") or ".fixed." in path.name or path.name == "__init__.py":
                continue
            found.append(Case(folder.name, path.name[: -len(path.suffix)], path))
    return found


def format_finding(finding) -> str:
    kind = f" [{finding.fix.applicability.value}]" if finding.fix is not None else ""
    cell = f"cell {finding.cell}:" if finding.cell is not None else ""
    return f"{cell}{finding.location.row}:{finding.location.column} {finding.code}{kind} {finding.message}"


def update_requested() -> bool:
    return os.environ.get("MPLINT_UPDATE_FIXTURES") == "1"
