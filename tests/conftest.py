from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from mplint.core import codes
from mplint.frontends.cli import main

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(monkeypatch):
    """Run the CLI in-process (monkeypatches apply): cli(args, cwd=...) -> CliResult."""

    def run(args: list[str], cwd: Path | None = None) -> CliResult:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        return CliResult(result.exit_code, result.stdout, result.stderr)

    return run


@pytest.fixture
def mplint_process():
    """Run `python -m mplint` in a subprocess: the real thing, exit codes and streams."""

    def run(args: list[str], cwd: Path, env: dict | None = None, timeout: float = 120) -> CliResult:
        full_env = dict(os.environ, **(env or {}))
        proc = subprocess.run(
            [sys.executable, "-m", "mplint", *args], cwd=cwd, capture_output=True, text=True,
            env=full_env, timeout=timeout,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


MPLINT_EXE = Path(sys.executable).with_name("mplint")  # the installed console script


@pytest.fixture
def mplint_exe():
    """Run the installed `mplint` command: mplint_exe(args, cwd, stdin=..., env=...)."""

    def run(args: list[str], cwd: Path, env: dict | None = None, stdin: str | None = None,
            timeout: float = 120) -> CliResult:
        full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        full_env.update(env or {})
        proc = subprocess.run(
            [str(MPLINT_EXE), *args], cwd=cwd, capture_output=True, text=True, env=full_env,
            input=stdin if stdin is not None else "", timeout=timeout,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def test_rules(monkeypatch):
    """Register the engine-test rules (tests/support/rules.py) as MP99x."""
    from tests.support.rules import TEST_RULES

    for code, entry in TEST_RULES.items():
        monkeypatch.setitem(codes.RULES, code, entry)
    return TEST_RULES


def write(path: Path, text: str, newline: str = "\n", encoding: str = "utf-8") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", newline).encode(encoding))
    return path
