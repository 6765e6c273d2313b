"""The README's commands are the ones CI runs, and it documents every rule."""

from __future__ import annotations

import re

from mplint.core.codes import RULES
from tests.conftest import ROOT


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _sh_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", text, re.S)]


def test_ci_runs_the_readme_test_command():
    blocks = _sh_blocks(_readme())
    test_command = next(b for b in blocks if "pytest" in b)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci


def test_readme_try_it_command_runs_mplint_on_the_examples():
    blocks = _sh_blocks(_readme())
    try_it = blocks[0]
    assert "mplint examples/" in try_it and "--diff" in try_it


def test_readme_lists_every_rule():
    text = _readme()
    for code, (name, _) in RULES.items():
        assert code in text and name in text, f"README does not list {code} {name}"
