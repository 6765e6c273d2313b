"""`mplint lsp` end to end: a real LSP client (pytest-lsp) drives the server process."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from mplint.catalogue import ruledocs

# One server for the module (starting one costs a few seconds); every test uses its own files.
pytestmark = pytest.mark.asyncio(loop_scope="module")

FLOAT16_MODEL = (
    "import tensorflow as tf\n"
    "\n"
    "emoji = '\U0001f680'; layer = tf.keras.layers.Dense(64, dtype='float16')\n"
    "layer.fit()\n"
)
MIXED_MODEL = FLOAT16_MODEL.replace("'float16'", "'mixed_float16'")
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
EXTENDED = "extended = true\n"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[sys.executable, "-m", "mplint", "lsp"]))
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("workspace")
    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="project")],
    )
    record_publications(lsp_client)
    result = await lsp_client.initialize_session(params)
    assert result.server_info.name == "mplint"
    yield
    await lsp_client.shutdown_session()


def open_document(client: LanguageClient, path: Path, text: str, language: str = "python", uri: str | None = None):
    uri = uri or path.as_uri()
    opened.append(uri)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))
    return uri


def change_document(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def record_publications(client: LanguageClient) -> None:
    """Keep every publishDiagnostics the client receives, in order (pytest-lsp keeps
    only the latest diagnostics per document, without their version)."""
    client.published = []
    handle = client.protocol._handle_notification

    def recording(method_name, params):
        if method_name == PUBLISH:
            client.published.append(params)
        return handle(method_name, params)

    client.protocol._handle_notification = recording


async def diagnostics_after(client: LanguageClient, send, uri: str) -> types.PublishDiagnosticsParams:
    """Send something, then wait for the next publishDiagnostics of `uri` (the server
    is shared by the module's tests: other documents' notifications are skipped)."""
    seen = len(client.published)
    send()
    deadline = asyncio.get_running_loop().time() + 30
    while asyncio.get_running_loop().time() < deadline:
        for published in client.published[seen:]:
            if published.uri == uri:
                return published
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics published for {uri}")


@pytest.fixture(autouse=True)
def _close_documents(client: LanguageClient):
    opened.clear()
    yield
    for uri in opened:
        client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


opened: list[str] = []


def extended_tier(folder: Path) -> None:
    """MP103, the sample finding, is an extended-tier rule: the server takes no flags,
    so the folder's configuration (the nearest one, as `mplint check` reads it) reports that tier."""
    (folder / "mplint.toml").write_text(EXTENDED, encoding="utf-8")


def offset(text: str, position: types.Position) -> int:
    """Offset of an LSP position (UTF-16 code units, the client's default encoding)."""
    lines = re.split(r"(?<=\r\n)|(?<=\n)(?<!\r\n)|(?<=\r)(?!\n)", text)
    start = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for i, char in enumerate(line):
        if units >= position.character:
            return start + i
        units += 2 if ord(char) > 0xFFFF else 1
    return start + len(line)


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(((offset(text, e.range.start), offset(text, e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    edit = action.edit
    if edit.document_changes:
        (change,) = edit.document_changes
        assert change.text_document.uri == uri
        return list(change.edits)
    return list(edit.changes[uri])


async def test_diagnostics_on_open_carry_code_link_and_utf16_range(client: LanguageClient, tmp_path: Path):
    extended_tier(tmp_path)
    path = tmp_path / "model.py"
    path.write_text(FLOAT16_MODEL, encoding="utf-8")
    published = await diagnostics_after(client, lambda: open_document(client, path, FLOAT16_MODEL), path.as_uri())
    assert published.version == 1
    (diagnostic,) = published.diagnostics
    assert diagnostic.code == "MP103"
    assert diagnostic.source == "mplint"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.message.startswith("layer dtype 'float16' keeps the variables in float16")
    assert "unsafe fix" in diagnostic.message
    assert diagnostic.message.splitlines()[0].endswith("(extended suite) (unsafe fix available)")
    href = diagnostic.code_description.href
    assert href.endswith("/docs/rules/MP103.md")
    assert href == ruledocs.rule_doc_url("MP103")  # the one URL base SARIF uses too
    if href.startswith("file://"):
        assert Path(href[len("file://"):]).is_file()
    # The emoji is two UTF-16 code units: the range starts at `tf.keras...`, in client units.
    line = FLOAT16_MODEL.splitlines()[2]
    assert diagnostic.range.start == types.Position(line=2, character=line.index("tf.keras") + 1)
    start = offset(FLOAT16_MODEL, diagnostic.range.start)
    end = offset(FLOAT16_MODEL, diagnostic.range.end)
    assert FLOAT16_MODEL[start:end] == "tf.keras.layers.Dense(64, dtype='float16')"


async def test_quick_fix_edit_is_correct_and_diagnostics_clear_after_it(client: LanguageClient, tmp_path: Path):
    extended_tier(tmp_path)
    path = tmp_path / "model.py"
    path.write_text(FLOAT16_MODEL, encoding="utf-8")
    uri = path.as_uri()
    published = await diagnostics_after(client, lambda: open_document(client, path, FLOAT16_MODEL), uri)
    (diagnostic,) = published.diagnostics
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic]),
    ))
    quick_fixes = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    (action,) = quick_fixes
    assert action.title == "mplint: Use the 'mixed_float16' policy (MP103) [unsafe: may change behaviour]"
    assert not action.is_preferred
    assert [d.code for d in action.diagnostics] == ["MP103"]
    # Only unsafe fixes here: no "fix all safe" action.
    assert not [a for a in actions if a.kind and a.kind.startswith("source.fixAll")]
    fixed = apply_edits(FLOAT16_MODEL, edits_of(action, uri))
    assert fixed == MIXED_MODEL

    published = await diagnostics_after(client, lambda: change_document(client, uri, 2, fixed), uri)
    assert published.version == 2
    assert list(published.diagnostics) == []


async def test_changes_are_debounced(client: LanguageClient, tmp_path: Path):
    extended_tier(tmp_path)
    path = tmp_path / "model.py"
    uri = path.as_uri()
    await diagnostics_after(client, lambda: open_document(client, path, MIXED_MODEL), uri)

    def type_quickly():
        change_document(client, uri, 2, MIXED_MODEL + "x = 1\n")
        change_document(client, uri, 3, MIXED_MODEL + "x = 12\n")
        change_document(client, uri, 4, FLOAT16_MODEL)

    published = await diagnostics_after(client, type_quickly, uri)
    assert published.version == 4  # the first check after the burst is of the last text
    assert [d.code for d in published.diagnostics] == ["MP103"]


async def test_save_checks_again(client: LanguageClient, tmp_path: Path):
    extended_tier(tmp_path)
    path = tmp_path / "model.py"
    path.write_text(MIXED_MODEL, encoding="utf-8")
    uri = path.as_uri()
    published = await diagnostics_after(client, lambda: open_document(client, path, MIXED_MODEL), uri)
    assert list(published.diagnostics) == []
    path.write_text(FLOAT16_MODEL, encoding="utf-8")
    change_document(client, uri, 2, FLOAT16_MODEL)
    published = await diagnostics_after(client, lambda: client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))), uri)
    # Saving checks at once: the debounced check of the change would come later.
    assert published.version == 2 and [d.code for d in published.diagnostics] == ["MP103"]


async def test_noqa_and_nearest_config_are_honoured(client: LanguageClient, tmp_path: Path):
    extended_tier(tmp_path)
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    (quiet / "pyproject.toml").write_text('[tool.mplint]\nextended = true\nignore = ["MP103"]\n', encoding="utf-8")
    path = quiet / "model.py"
    path.write_text(FLOAT16_MODEL, encoding="utf-8")
    published = await diagnostics_after(client, lambda: open_document(client, path, FLOAT16_MODEL), path.as_uri())
    assert list(published.diagnostics) == []

    noqa = FLOAT16_MODEL.replace("'float16')\n", "'float16')  # noqa: MP103\n")
    other = tmp_path / "noqa.py"
    published = await diagnostics_after(client, lambda: open_document(client, other, noqa), other.as_uri())
    assert list(published.diagnostics) == []

    # Editing the config and saving it re-checks the open documents.
    (quiet / "pyproject.toml").write_text('[tool.mplint]\nextended = true\nselect = ["MP1"]\n', encoding="utf-8")
    config_uri = (quiet / "pyproject.toml").as_uri()
    published = await diagnostics_after(client, lambda: client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=config_uri))), path.as_uri())
    assert [d.code for d in published.diagnostics] == ["MP103"]


async def test_changed_pins_change_the_keras_target(client: LanguageClient, tmp_path: Path):
    """The target read from a project's pins follows an edit of its requirements."""
    project = tmp_path / "pinned"
    project.mkdir()
    requirements = project / "requirements.txt"
    requirements.write_text("tensorflow==2.15.0\n", encoding="utf-8")
    source = (FIXTURES / "MP404" / "keras2_api_under_keras3.py").read_text(encoding="utf-8")
    path = project / "train.py"
    path.write_text(source, encoding="utf-8")
    published = await diagnostics_after(client, lambda: open_document(client, path, source), path.as_uri())
    assert list(published.diagnostics) == []  # Keras 2: get_scaled_loss is right

    requirements.write_text("tensorflow==2.21.0\n", encoding="utf-8")
    published = await diagnostics_after(client, lambda: client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
            uri=requirements.as_uri(), type=types.FileChangeType.Changed)])), path.as_uri())
    assert [d.code for d in published.diagnostics] == ["MP404", "MP404"]


async def test_config_error_is_shown_once_not_crashing(client: LanguageClient, tmp_path: Path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "mplint.toml").write_text('selectt = ["MP1"]\n', encoding="utf-8")
    path = broken / "model.py"
    shown = len(client.messages)
    published = await diagnostics_after(client, lambda: open_document(client, path, FLOAT16_MODEL), path.as_uri())
    assert list(published.diagnostics) == []
    (message,) = client.messages[shown:]
    assert message.type == types.MessageType.Error
    assert "unknown key 'selectt'" in message.message


async def test_only_filter_and_notebook_cells(client: LanguageClient, tmp_path: Path):
    extended_tier(tmp_path)
    cell_text = "%time x = 1\n!nvidia-smi\n" + FLOAT16_MODEL
    uri = (tmp_path / "nb.ipynb").as_uri().replace("file:", "vscode-notebook-cell:", 1) + "#W1sZmlsZQ%3D%3D"
    published = await diagnostics_after(
        client, lambda: open_document(client, tmp_path / "nb.ipynb", cell_text, uri=uri), uri)
    (diagnostic,) = published.diagnostics
    assert diagnostic.code == "MP103" and diagnostic.range.start.line == 4
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.SourceFixAll]),
    ))
    assert list(actions) == []  # no quick fixes when only fix-all is asked for, and nothing safe to fix
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.QuickFix]),
    ))
    (action,) = actions
    assert apply_edits(cell_text, edits_of(action, uri)) == cell_text.replace("'float16'", "'mixed_float16'")


async def test_other_languages_are_ignored(client: LanguageClient, tmp_path: Path):
    extended_tier(tmp_path)
    open_document(client, tmp_path / "notes.md", "float16 everywhere\n", language="markdown")
    path = tmp_path / "model.py"
    published = await diagnostics_after(client, lambda: open_document(client, path, FLOAT16_MODEL), path.as_uri())
    assert [d.code for d in published.diagnostics] == ["MP103"]
    assert (tmp_path / "notes.md").as_uri() not in client.diagnostics


async def test_percent_encoded_uris_round_trip(client: LanguageClient, tmp_path: Path):
    extended_tier(tmp_path)
    path = tmp_path / "my model #1.py"
    uri = path.as_uri()
    assert "%20" in uri and "%23" in uri
    published = await diagnostics_after(client, lambda: open_document(client, path, FLOAT16_MODEL), uri)
    assert [d.code for d in published.diagnostics] == ["MP103"]
    published = await diagnostics_after(client, lambda: change_document(client, uri, 2, MIXED_MODEL), uri)
    assert list(published.diagnostics) == []
    published = await diagnostics_after(client, lambda: client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))), uri)
    assert list(published.diagnostics) == []


async def test_project_facts_and_edits_in_other_buffers(client: LanguageClient, tmp_path: Path):
    """The policy a script sets reaches a module it calls into; editing the script's
    buffer (unsaved) checks the open module again."""
    import shutil

    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "projects" / "policy_from_script", root, ignore=shutil.ignore_patterns("expected.txt"))
    layers = root / "trainer" / "layers.py"
    uri = layers.as_uri()
    published = await diagnostics_after(client, lambda: open_document(client, layers, layers.read_text()), uri)
    assert [d.code for d in published.diagnostics] == ["MP301"]
    train = root / "train.py"
    text = train.read_text()
    train_uri = open_document(client, train, text)
    without_policy = text.replace('keras.mixed_precision.set_global_policy("mixed_float16")', "pass")
    published = await diagnostics_after(client, lambda: change_document(client, train_uri, 2, without_policy), uri)
    assert list(published.diagnostics) == []


async def test_hover_shows_the_finding_its_detail_and_the_rule_text(client: LanguageClient, tmp_path: Path):
    """No documentation site is needed: the hover carries what `mplint rule CODE` prints."""
    from mplint.catalogue.ruledocs import rule_text

    extended_tier(tmp_path)
    path = tmp_path / "model.py"
    path.write_text(FLOAT16_MODEL, encoding="utf-8")
    uri = path.as_uri()
    published = await diagnostics_after(client, lambda: open_document(client, path, FLOAT16_MODEL), uri)
    (diagnostic,) = published.diagnostics
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=diagnostic.range.start))
    assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
    text = hover.contents.value
    assert text.startswith("**MP103** (warning): layer dtype 'float16' keeps the variables in float16")
    assert rule_text("MP103") in text and "## Why is this bad?" in text
    elsewhere = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=0, character=0)))
    assert elsewhere is None
