"""`mplint lsp`'s "fix all safe" code action, end to end with a real LSP client.

No shipped rule has a safe fix yet, so the server here also loads the engine's test
rules (tests/support/rules.py: MP990 renames `old_name`, safely; MP994 upper-cases
`lower_me`, unsafely). Everything else is the real server.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.test_lsp import apply_edits, diagnostics_after, edits_of, open_document, record_publications

ROOT = Path(__file__).resolve().parent.parent
SERVER = (
    "import sys; sys.path.insert(0, sys.argv[1]);"
    "from mplint.core import codes; from tests.support.rules import TEST_RULES; codes.RULES.update(TEST_RULES);"
    "from mplint.frontends.lsp import serve; serve()"
)
TEXT = (
    "POLICY = 'mixed_float16'\n"
    "old_name = 1\n"
    "lower_me = old_name + 1\n"
    "print(old_name, lower_me)\n"
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[sys.executable, "-c", SERVER, str(ROOT)]))
async def client(lsp_client: LanguageClient):
    record_publications(lsp_client)
    await lsp_client.initialize_session(types.InitializeParams(capabilities=client_capabilities("neovim")))
    yield
    await lsp_client.shutdown_session()


async def test_fix_all_safe_applies_every_safe_fix_and_no_unsafe_one(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.py"
    uri = path.as_uri()
    published = await diagnostics_after(client, lambda: open_document(client, path, TEXT), uri)
    codes = sorted(d.code for d in published.diagnostics)
    assert codes == ["MP990", "MP990", "MP990", "MP994", "MP994"]
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=4, character=0))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=whole,
        context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
    (fix_all,) = actions
    assert fix_all.kind == "source.fixAll.mplint"
    fixed = apply_edits(TEXT, edits_of(fix_all, uri))
    assert fixed == TEXT.replace("old_name", "new_name")  # `lower_me` (unsafe) stays

    # Quick fixes: safe ones are preferred, the unsafe one says so.
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=whole,
        context=types.CodeActionContext(diagnostics=list(published.diagnostics),
                                        only=[types.CodeActionKind.QuickFix])))
    titles = sorted((a.title, a.is_preferred) for a in actions)
    # Each rename is one fix group: any of its quick fixes renames every use.
    assert titles == [
        ("mplint: Rename to new_name (with the rename of `old_name`: 3 findings) (MP990)", True),
        ("mplint: Rename to new_name (with the rename of `old_name`: 3 findings) (MP990)", True),
        ("mplint: Rename to new_name (with the rename of `old_name`: 3 findings) (MP990)", True),
        ("mplint: Upper-case (with the rename of `lower_me`: 2 findings) (MP994) [unsafe: may change behaviour]", False),
        ("mplint: Upper-case (with the rename of `lower_me`: 2 findings) (MP994) [unsafe: may change behaviour]", False),
    ]
    quick = next(a for a in actions if "MP990" in a.title)
    assert apply_edits(TEXT, edits_of(quick, uri)) == TEXT.replace("old_name", "new_name")
