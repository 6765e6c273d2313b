"""What is advertised is what `--fix` does: a finding shows a fix (`[*]`, the JSON `fix`
object, SARIF fixes, LSP quick fixes, "N fixable") only when `--fix` applies it, decided
when linting (mplint/engine/fix_vetting.py)."""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

import pytest
import pytest_lsp
from click.testing import CliRunner
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from mplint.frontends.cli import main
from mplint.engine.engine import check_document, lint
from mplint.engine.fix_vetting import apply_edits
from mplint.engine.runner import load_document
from tests.fixture_cases import cases
from tests.test_lsp import diagnostics_after, open_document, record_publications

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WITHHELD = FIXTURES / "MP404" / "global_norm_logged.py"  # two findings, no fix
GROUPED = FIXTURES / "MP404" / "clip_global_norm_keras3.py"  # two findings, one (unsafe) fix group


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_every_advertised_fix_is_applied(case):
    """Each finding offered with a fix (unsafe ones included) is gone after `--fix
    --unsafe-fixes`, and its fix alone gives code that compiles."""
    doc = load_document(str(case.input), case.input.read_bytes())
    settings = case.file_settings()
    advertised = [f for f in lint(doc, settings, case.input.name) if f.fix is not None]
    for finding in advertised:
        fixed = apply_edits(doc.text, list(finding.fix.edits))
        compile(fixed, str(case.input), "exec", doc.compile_flags())
    outcome = check_document(doc, settings, case.input.name, fix=True, unsafe=True)
    left = collections.Counter((f.code, f.message) for f in outcome.findings)
    for finding in advertised:
        assert left[(finding.code, finding.message)] == 0, f"advertised but not applied: {finding.code} {finding.message}"


def test_group_members_carry_the_whole_group():
    doc = load_document(str(GROUPED), GROUPED.read_bytes())
    (case,) = [c for c in cases("MP404") if c.input == GROUPED]
    first, second = lint(doc, case.file_settings(), GROUPED.name)
    assert first.fix.edits == second.fix.edits and first.fix.group == second.fix.group
    outcome = check_document(doc, case.file_settings(), GROUPED.name, fix=True, unsafe=True)
    assert apply_edits(doc.text, list(first.fix.edits)) == outcome.text
    assert outcome.fixed == 2 and outcome.fixed_codes == {"MP404": 2}


def _cli(*args: str) -> str:
    return CliRunner().invoke(main, ["check", "--no-cache", "--target", "keras3", *args], catch_exceptions=False).output


def test_a_withheld_fix_is_advertised_nowhere_on_the_command_line():
    text = _cli("--select", "MP404", "--unsafe-fixes", str(WITHHELD))
    assert "MP404" in text and "[*]" not in text and "fixable" not in text and "hidden fix" not in text
    data = json.loads(_cli("--select", "MP404", "--output-format", "json", str(WITHHELD)))
    assert [f["fix"] for f in data] == [None, None]
    sarif = json.loads(_cli("--select", "MP404", "--output-format", "sarif", str(WITHHELD)))
    results = sarif["runs"][0]["results"]
    assert len(results) == 2 and not any("fixes" in r for r in results)


def test_an_unsafe_group_is_counted_and_shown_as_one_fix_per_finding():
    text = _cli("--select", "MP404", str(GROUPED))
    assert "2 hidden fixes can be enabled with the `--unsafe-fixes` option" in text
    data = json.loads(_cli("--select", "MP404", "--output-format", "json", str(GROUPED)))
    assert [f["fix"]["applicability"] for f in data] == ["unsafe", "unsafe"]
    assert data[0]["fix"]["edits"] == data[1]["fix"]["edits"]


# -- the editor ------------------------------------------------------------------------------

@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "mplint", "lsp"]))
async def client(lsp_client: LanguageClient):
    record_publications(lsp_client)
    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_the_editor_offers_no_quick_fix_for_a_withheld_fix(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.py"
    (tmp_path / "mplint.toml").write_text("extended = true\n", encoding="utf-8")  # its target is assumed
    text = WITHHELD.read_text(encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    published = await diagnostics_after(client, lambda: open_document(client, path, text), uri)
    diagnostics = [d for d in published.diagnostics if d.code == "MP404"]
    assert len(diagnostics) == 2 and not any("fix available" in d.message for d in diagnostics)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=30, character=0)),
        context=types.CodeActionContext(diagnostics=list(published.diagnostics)),
    ))
    assert not [a for a in actions or [] if "MP404" in a.title]


def test_a_notebook_mplint_cannot_write_back_offers_no_fix(tmp_path):
    """A notebook in a JSON layout mplint cannot reproduce is never rewritten, so its
    findings show no fix (and say why) instead of a `[*]` that --fix would not apply."""
    source = "import tensorflow as tf\nlayer = tf.keras.layers.Dense(64, dtype='float16')\nlayer.fit()\n"
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": source.splitlines(keepends=True)}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "compact.ipynb"
    path.write_text(json.dumps(notebook, separators=(",", ":")), encoding="utf-8")
    (finding,) = json.loads(_cli("--select", "MP103", "--extended", "--unsafe-fixes", "--output-format", "json",
                                 str(path)))
    assert finding["fix"] is None and "cannot write this notebook back" in finding["detail"]
    readable = tmp_path / "standard.ipynb"
    readable.write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")
    (finding,) = json.loads(_cli("--select", "MP103", "--extended", "--unsafe-fixes", "--output-format", "json",
                                 str(readable)))
    assert finding["fix"] is not None


def test_fix_counts_agree_between_check_diff_and_fix(tmp_path):
    """#28 item 8: "N fixable", "Would fix N" and "(N fixed, ...)" name the same N, even
    where one fix's result is rewritten again in a later round (MP103's fix gives
    'mixed_float16', which MP104 then turns into 'mixed_bfloat16' on a TPU)."""
    import re
    import shutil
    import subprocess
    import sys

    examples = Path(__file__).resolve().parent.parent / "examples"
    work = tmp_path / "examples"
    shutil.copytree(examples, work)

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "mplint", "--no-cache", *args, "."], cwd=work,
                              capture_output=True, text=True, env={**os.environ, "MPLINT_NO_SERVER": "1"})
        return done.stdout + done.stderr

    checked = run("--unsafe-fixes")
    fixable = int(re.search(r"\[\*\] (\d+) fixable", checked).group(1))
    would = int(re.search(r"Would fix (\d+) finding", run("--diff", "--unsafe-fixes")).group(1))
    fixed = int(re.search(r"\((\d+) fixed, \d+ remaining\)", run("--fix", "--unsafe-fixes")).group(1))
    assert fixable == would == fixed
