"""The commands and outputs shown in README.md and docs/ are those of the real CLI.

- Every `mplint ...` command shown (shell blocks, CI and editor snippets, inline code)
  parses with the real command line: options exist, choices are valid. Those whose
  paths exist (the bundled examples, the files a document shows) also run, without a
  usage or internal error.
- Every transcript (a ```console block: `$ command` lines, each followed by its output)
  runs in a folder holding the repository's pyproject.toml, `examples/` and the
  document's files (```python NAME blocks),
  and must print exactly what is shown (`...` stands for any lines).
- The README lists every option of `mplint check` and every output format, and nothing
  that does not exist.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from mplint.frontends.cli import check, main
from mplint.frontends.reporters import FORMATS
from tests.conftest import MPLINT_EXE, ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
_SHELL = ("sh", "bash", "shell")


@dataclass
class Block:
    document: Path
    line: int
    language: str
    title: str  # ```python model.py: the file's name
    text: str


def blocks(document: Path) -> list[Block]:
    text = document.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        info = match["info"].split()
        indent = match["indent"]
        body = "".join(line[len(indent):] if line.startswith(indent) else line
                       for line in match["body"].splitlines(keepends=True))
        found.append(Block(document, text.count("\n", 0, match.start()) + 1, info[0] if info else "",
                           info[1] if len(info) > 1 else "", body))
    return found


def _where(block: Block) -> str:
    return f"{block.document.relative_to(ROOT)}:{block.line}"


# -- commands ------------------------------------------------------------------------------

def _mplint_commands(line: str) -> list[list[str]]:
    """The mplint invocations in one shell line (split at pipes, `&&`, `;`, subshells;
    a redirection is kept as the word `<redirect>`)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return []
    commands, current = [], []
    for word in [*words, ";"]:
        if word and all(ch in "();|&<>" for ch in word):
            if current and Path(current[0]).name == "mplint":
                commands.append(current[1:])
            current = ["<redirect>"] if word in ("<", ">") and current else []
            continue
        current.append(word)
    return commands


def shown_commands() -> list[tuple[str, list[str]]]:
    """(where, arguments) of every mplint command in the documents."""
    found: list[tuple[str, list[str]]] = []
    for document in DOCUMENTS:
        for block in blocks(document):
            for offset, line in enumerate(block.text.splitlines(), 1):
                where = f"{block.document.relative_to(ROOT)}:{block.line + offset}"
                if block.language in _SHELL:
                    found += [(where, args) for args in _mplint_commands(line)]
                elif block.language == "yaml":
                    command = re.sub(r"^\s*(-\s+)?(run:|entry:)?\s*", "", line)
                    found += [(where, args) for args in _mplint_commands(command)]
                elif block.language == "console" and line.startswith("$ "):
                    found += [(where, args) for args in _mplint_commands(line[2:])]
        text = document.read_text(encoding="utf-8")
        prose = _FENCE.sub("", text)
        for match in re.finditer(r"`(mplint [^`]+)`", prose):
            # Prose names commands too (`mplint verify`): their arguments may be left out.
            where = f"{document.relative_to(ROOT)}:{text.count(chr(10), 0, text.find(match[0])) + 1} (prose)"
            found += [(where, args) for args in _mplint_commands(match[1])]
    return found


def parse(args: list[str]) -> click.Context:
    """Parse `mplint ARGS` as the CLI would, without running it (click.UsageError if wrong)."""
    ctx = main.make_context("mplint", list(args))
    name, command, rest = main.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
    return command.make_context(name, rest, parent=ctx)


def test_the_documents_show_commands():
    commands = shown_commands()
    assert len(commands) > 40
    assert any(args[:1] == ["verify"] for _, args in commands) and any("--fix" in args for _, args in commands)


@pytest.mark.parametrize("where,args", shown_commands(), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_shown_command_parses(where, args):
    try:
        parse(args)
    except click.MissingParameter:
        if not where.endswith("(prose)"):
            raise
    except click.UsageError as exc:
        pytest.fail(f"{where}: `mplint {' '.join(args)}` does not parse: {exc.format_message()}")


def _seeded(tmp_path: Path, document: Path) -> Path:
    """A folder like the repository's root (pyproject.toml, the bundled examples) with
    the document's files."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for block in blocks(document):
        if block.title:
            (tmp_path / block.title).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / block.title).write_text(block.text, encoding="utf-8")
    return tmp_path


def _runnable() -> list[tuple[str, list[str]]]:
    """Shown commands whose paths are the examples, the documents' files or none."""
    files = {"examples", "examples/"} | {b.title for d in DOCUMENTS for b in blocks(d) if b.title}
    runnable = []
    for where, args in shown_commands():
        if not args or args[0] in ("lsp", "server", "verify", "--help", "-h") or "<redirect>" in args:
            continue
        if any(re.fullmatch(r"[A-Z]+", arg) for arg in args) or (where.endswith("(prose)") and args == ["rule"]):
            continue  # a placeholder (`mplint rule CODE`), or a name in a sentence
        ctx = parse(args)
        paths = ctx.params.get("paths") or ()
        if "rule" == ctx.command.name or (paths and all(p.rstrip("/") in files or p in files for p in paths)):
            runnable.append((where, args))
    return runnable


@pytest.mark.parametrize("where,args", _runnable(), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_shown_command_runs(where, args, tmp_path):
    document = ROOT / where.split(":")[0]
    folder = _seeded(tmp_path, document)
    proc = subprocess.run([str(MPLINT_EXE), *args], cwd=folder, capture_output=True, text=True, timeout=300,
                          env=_environment())
    assert proc.returncode in (0, 1), f"{where}: `mplint {' '.join(args)}` exited {proc.returncode}: {proc.stderr}"
    assert "error" not in proc.stderr, f"{where}: {proc.stderr}"


# -- transcripts ---------------------------------------------------------------------------

def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "MPLINT_OUTPUT_FORMAT",
                                                              "MPLINT_OUTPUT_FILE")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["COLUMNS"] = "200"
    return env


def transcripts() -> list[tuple[Block, str, str]]:
    """(block, command, expected output) of every `$ command` in ```console blocks
    (and ```text blocks that start with one)."""
    found = []
    for document in DOCUMENTS:
        for block in blocks(document):
            if block.language != "console" and not (block.language == "text" and block.text.startswith("$ ")):
                continue
            command, output = None, []
            for line in block.text.splitlines():
                if line.startswith("$ "):
                    if command is not None:
                        found.append((block, command, "\n".join(output)))
                    command, output = line[2:], []
                else:
                    output.append(line)
            if command is not None:
                found.append((block, command, "\n".join(output)))
    return found


def _matches(expected: str, actual: str) -> bool:
    """Line by line; a line `...` stands for any number of lines, and `...` within a line
    for any text on that line (a number that varies with the CPU: float16 rounding)."""
    pattern = "\n".join(".*?" if line.strip() == "..." else "[^\n]*?".join(map(re.escape, line.split("...")))
                        for line in expected.splitlines())
    return re.fullmatch(pattern, actual.rstrip("\n"), re.S) is not None


def test_the_documents_show_transcripts():
    assert len(transcripts()) >= 4


def _transcript_params():
    for block, command, expected in transcripts():
        # `mplint verify` runs TensorFlow in a child process (about 15 s).
        marks = [pytest.mark.tensorflow, pytest.mark.slow] if "mplint verify" in command else []
        yield pytest.param(block, command, expected, marks=marks, id=f"{_where(block)} {command}")


@pytest.mark.parametrize("block,command,expected", list(_transcript_params()))
def test_transcript_matches_the_real_output(block, command, expected, tmp_path):
    folder = _seeded(tmp_path, block.document)
    proc = subprocess.run(["bash", "-c", command], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300, env=_environment())
    assert _matches(expected, proc.stdout), (
        f"{_where(block)}: `{command}` prints\n{proc.stdout}\nbut the document shows\n{expected}")


# -- lists that must be complete ---------------------------------------------------------------

def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(title)
    end = text.find("\n## ", start + 1)
    return text[start:end]


def test_readme_lists_every_check_option_and_no_other():
    documented: set[str] = set()
    for row in re.findall(r"^\| (`-.*?) \|", _section("## Using it"), re.M):
        documented |= set(re.findall(r"`(--?[a-z][a-z0-9-]*)", row))
    real = {opt for param in check.params if isinstance(param, click.Option) for opt in param.opts}
    real |= {"-h", "--help"}
    assert documented == real, (f"not in the README: {sorted(real - documented)}; "
                                f"not options: {sorted(documented - real)}")


def test_readme_lists_every_output_format():
    rows = re.findall(r"^\| `([a-z-]+)` \|", _section("Output formats:"), re.M)
    assert set(rows) | {"text"} == set(FORMATS)
    choices = next(p for p in check.params if p.name == "output_format").type.choices
    assert tuple(choices) == FORMATS


def test_every_option_named_in_the_documents_exists():
    """A `--flag` in prose or code anywhere in the documents is an option of some command."""
    commands = [main, *main.commands.values()]
    commands += [sub for command in commands if isinstance(command, click.Group) and command is not main
                 for sub in command.commands.values()]
    real = {opt for command in commands for param in command.params
            if isinstance(param, click.Option) for opt in param.opts}
    real |= {"--help", "--version"}
    other_tools = {"--freeze", "--bleeding-edge", "--units", "--filters", "--batch", "--steps", "--json",
                   "--preset", "--jit", "--depth", "--repeats", "--multiple", "--policy", "--select",
                   "--extend-ignore", "--amp"}
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for option in set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", text)):
            assert option in real or option in other_tools, f"{document.relative_to(ROOT)} names {option}"


@pytest.mark.tensorflow
@pytest.mark.slow
def test_readme_fixed_verify_example_passes_every_check(tmp_path):
    """The README: after `mplint --fix`, the verify run ends in `result: ok (...)`."""
    claim = re.search(r"the same run\s+ends in `(result: ok[^`]*)`", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert claim, "the README's sentence about the fixed verify example changed: update this test"
    folder = _seeded(tmp_path, ROOT / "README.md")
    proc = subprocess.run([str(MPLINT_EXE), "check", "-n", "--fix", "--verify", "examples/verify_model.py"],
                          cwd=folder, capture_output=True, text=True, timeout=300, env=_environment())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert claim[1] in proc.stdout, proc.stdout


def test_readme_describes_the_mp101_fix_of_the_verify_example(tmp_path):
    """The README says what `--fix` does to examples/verify_model.py: it must be so."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    claim = re.search(r"After `mplint --fix` \(MP101 gives the output layer `([^`]+)`\)", text)
    assert claim, "the README's sentence about the verify example's fix changed: update this test"
    folder = _seeded(tmp_path, ROOT / "README.md")
    diff = subprocess.run([str(MPLINT_EXE), "check", "-n", "--diff", "examples/verify_model.py"], cwd=folder,
                          capture_output=True, text=True).stdout
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert len(added) == len(removed) == 1, diff
    assert added[0].replace(f", {claim[1]}", "")[1:] == removed[0][1:], diff
