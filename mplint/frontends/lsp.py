"""`mplint lsp`: a language server over stdio (pygls), for editors.

- Diagnostics when a Python document is opened and saved, and while it is edited
  (debounced: a check runs once typing has paused for `DEBOUNCE_SECONDS`). Each
  diagnostic's `code` is the rule code and `codeDescription.href` the rule's
  documentation page (see `mplint.catalogue.ruledocs`), `source` is "mplint".
- Hover over a finding: its message, its detail (the why) and the rule's documentation,
  the text of `mplint rule CODE`.
- Code actions: a quick fix per finding that has one (unsafe fixes say so in their
  title and are never "preferred"), and "fix all safe" (kind `source.fixAll.mplint`,
  so `"editor.codeActionsOnSave": {"source.fixAll": "explicit"}` runs it).
- The project index (`mplint.project.index`) of each document's project, with the
  open buffers standing in for their files: a document is judged as `mplint check`
  judges it in its project, and open documents are checked again when an edit
  elsewhere (another buffer, a file changed on disk) changes what they depend on.
- Configuration as on the command line: the nearest pyproject.toml/mplint.toml of
  the document's folder (re-read on every check, so edits to it apply at once), its
  `exclude` globs, and `# noqa` comments.
- Notebook cells sent by editors as documents (`vscode-notebook-cell:` URIs) are
  checked with IPython magics masked; other non-Python documents are ignored.

Documents are synchronised in full (the client sends the whole text on change), so
positions never depend on pygls' own line splitting; positions are converted to the
encoding the client negotiated (UTF-16 by default).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from mplint import __version__
from mplint.core.diagnostics import Applicability, Finding, Severity
from mplint.core.textpos import split_lines_keepends

DEBOUNCE_SECONDS = 0.3
FIX_ALL_KIND = types.CodeActionKind.SourceFixAll.value + ".mplint"
QUICK_FIX_KIND = types.CodeActionKind.QuickFix.value
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
_NOTEBOOK_CELL_SCHEMES = ("vscode-notebook-cell",)

log = logging.getLogger(__name__)


class _Checked:
    """The findings of one document version, and what they depended on elsewhere in
    its project (another open buffer or file changing that checks it again)."""

    def __init__(self, version: int | None, text: str, findings: list[Finding], project: str = "") -> None:
        self.version = version
        self.text = text
        self.findings = findings
        self.project = project


class MplintLanguageServer(LanguageServer):
    def __init__(self, debounce: float = DEBOUNCE_SECONDS) -> None:
        super().__init__("mplint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.debounce = debounce
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self._checked: dict[str, _Checked] = {}
        self._shown_errors: set[str] = set()
        # Open documents by the URI the client uses (pygls keys them unquoted).
        self.open_uris: set[str] = set()

    # -- which documents, which path ----------------------------------------------
    @staticmethod
    def _path_of(uri: str) -> tuple[str, bool] | None:
        """(filesystem path used for configuration, is a notebook cell), or None."""
        parsed = urlparse(uri)
        if parsed.scheme == "file":
            from pygls.uris import to_fs_path

            return to_fs_path(uri) or "", False
        if parsed.scheme in _NOTEBOOK_CELL_SCHEMES:
            return unquote(parsed.path), True
        if parsed.scheme == "untitled":
            return "", False
        return None

    def _wanted(self, uri: str) -> tuple[str, bool] | None:
        where = self._path_of(uri)
        if where is None:
            return None
        document = self.workspace.get_text_document(uri)
        path, cell = where
        language = (document.language_id or "").lower()
        if language == "python" or (not language and path.endswith(".py")):
            return path, cell
        return None

    # -- checking -----------------------------------------------------------------------
    def check(self, uri: str, *, fix: bool = False, unsafe: bool = False):
        """The engine's outcome for the document's current text, or None."""
        from mplint.inputs.config import ConfigError
        from mplint.engine.textcheck import check_text

        wanted = self._wanted(uri)
        if wanted is None:
            return None
        path, cell = wanted
        document = self.workspace.get_text_document(uri)
        try:
            return check_text(path, document.source, fix=fix, unsafe=unsafe, notebook_cell=cell)
        except ConfigError as exc:
            message = f"mplint: configuration error: {exc}"
            if message not in self._shown_errors:
                self._shown_errors.add(message)
                self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))
            return None

    def findings(self, uri: str) -> list[Finding]:
        """Findings of the current version (checked again only if it changed)."""
        document = self.workspace.get_text_document(uri)
        checked = self._checked.get(uri)
        if checked is not None and checked.version == document.version and checked.text == document.source \
                and checked.project == self._project_key(uri):
            return checked.findings
        outcome = self.check(uri)
        findings = outcome.findings if outcome is not None else []
        self._checked[uri] = _Checked(document.version, document.source, findings, self._project_key(uri))
        return findings

    def _project_key(self, uri: str) -> str:
        from mplint.engine.textcheck import project_key

        wanted = self._wanted(uri)
        if wanted is None or wanted[1] or not wanted[0]:
            return ""
        return project_key(wanted[0])

    def publish_affected(self, changed: str) -> None:
        """Check the other open documents again whose project facts the change of
        `changed` altered (a script that sets the policy, a module they import)."""
        for uri in sorted(self.open_uris - {changed}):
            checked = self._checked.get(uri)
            if checked is not None and self._wanted(uri) is not None and checked.project != self._project_key(uri):
                self.publish(uri)

    def publish(self, uri: str) -> None:
        self._pending.pop(uri, None)
        if uri not in self.open_uris or self._wanted(uri) is None:
            return
        document = self.workspace.get_text_document(uri)
        findings = self.findings(uri)
        lines = _lines(document.source)
        diagnostics = [self.diagnostic(f, lines, document) for f in findings]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics)
        )
        self.publish_affected(uri)

    def schedule(self, uri: str) -> None:
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        loop = asyncio.get_running_loop()
        self._pending[uri] = loop.call_later(self.debounce, self.publish, uri)

    def forget(self, uri: str) -> None:
        from mplint.engine.textcheck import forget_text

        wanted = self._wanted(uri)
        self.open_uris.discard(uri)
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self._checked.pop(uri, None)
        if wanted is not None and not wanted[1]:
            forget_text(wanted[0])  # the file on disk counts again
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def recheck_open_documents(self) -> None:
        from mplint.facts.target import forget_project_files

        forget_project_files()  # the Keras target may follow new pins
        self._checked.clear()
        self._shown_errors.clear()
        for uri in sorted(self.open_uris):
            self.publish(uri)

    # -- conversions ----------------------------------------------------------------------
    def diagnostic(self, f: Finding, lines: list[str], document) -> types.Diagnostic:
        from mplint.catalogue.ruledocs import rule_doc_url

        url = rule_doc_url(f.code)
        message = f.message
        if f.fix is not None and f.fix.applicability is Applicability.UNSAFE:
            message += " (unsafe fix available)"
        elif f.fix is not None:
            message += " (fix available)"
        if f.detail:
            message += f"\n\n{f.detail}"  # the why, on hover; the first line stays one sentence
        return types.Diagnostic(
            range=_range(lines, document, f.location.row, f.location.column, f.end_location.row,
                         f.end_location.column),
            message=message,
            severity=_SEVERITY[f.severity],
            code=f.code,
            code_description=types.CodeDescription(href=url) if url else None,
            source="mplint",
        )

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        """Over a finding: its message, its detail and the rule's documentation (the text of
        `mplint rule CODE`), so the why is at hand where no documentation site is."""
        from mplint.catalogue.ruledocs import rule_text

        uri = params.text_document.uri
        if uri not in self.open_uris or self._wanted(uri) is None:
            return None
        document = self.workspace.get_text_document(uri)
        lines = _lines(document.source)
        here = types.Range(start=params.position, end=params.position)
        parts: list[str] = []
        hit: types.Range | None = None
        for f in self.findings(uri):
            diagnostic = self.diagnostic(f, lines, document)
            if not _overlaps(diagnostic.range, here):
                continue
            hit = hit or diagnostic.range
            parts.append(f"**{f.code}** ({f.severity.value}): {f.message}" + (f"\n\n{f.detail}" if f.detail else ""))
            parts.append(rule_text(f.code) or "")
        if not parts:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)),
                           range=hit)

    def workspace_edit(self, uri: str, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        document = self.workspace.get_text_document(uri)
        capabilities = self.client_capabilities.workspace
        versioned = bool(
            capabilities and capabilities.workspace_edit and capabilities.workspace_edit.document_changes
        )
        if versioned:
            identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=document.version)
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=identifier, edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        if uri not in self.open_uris or self._wanted(uri) is None:
            return []
        document = self.workspace.get_text_document(uri)
        only = params.context.only
        actions: list[types.CodeAction] = []
        findings = self.findings(uri)
        lines = _lines(document.source)
        if _wants(only, QUICK_FIX_KIND):
            for f in findings:
                if f.fix is None:
                    continue
                diagnostic = self.diagnostic(f, lines, document)
                if not _overlaps(diagnostic.range, params.range):
                    continue
                unsafe = f.fix.applicability is Applicability.UNSAFE
                title = f"mplint: {f.fix.message} ({f.code})" + (" [unsafe: may change behaviour]" if unsafe else "")
                edits = [
                    types.TextEdit(
                        range=_range(lines, document, e.location.row, e.location.column, e.end_location.row,
                                     e.end_location.column),
                        new_text=e.content,
                    )
                    for e in f.fix.edits
                ]
                actions.append(types.CodeAction(
                    title=title,
                    kind=QUICK_FIX_KIND,
                    diagnostics=[diagnostic],
                    edit=self.workspace_edit(uri, edits),
                    is_preferred=not unsafe,
                ))
        if _wants(only, FIX_ALL_KIND) and any(f.fix is not None and f.fix.applies(False) for f in findings):
            outcome = self.check(uri, fix=True, unsafe=False)
            if outcome is not None and outcome.text != document.source:
                actions.append(types.CodeAction(
                    title="mplint: fix all safe fixes",
                    kind=FIX_ALL_KIND,
                    edit=self.workspace_edit(uri, [_whole_edit(document, document.source, outcome.text)]),
                ))
        return actions


# -- helpers ---------------------------------------------------------------------------------

def _lines(text: str) -> list[str]:
    """The document's lines without their line endings (LSP's \\n, \\r\\n, \\r)."""
    return [line.rstrip("\r\n") for line in split_lines_keepends(text)]


def _position(lines: list[str], document, row: int, column: int) -> types.Position:
    line = row - 1
    if line >= len(lines):
        return types.Position(line=len(lines), character=0)
    prefix = lines[line][: column - 1]
    return types.Position(line=line, character=document.position_codec.client_num_units(prefix))


def _range(lines: list[str], document, row: int, column: int, end_row: int, end_column: int) -> types.Range:
    return types.Range(start=_position(lines, document, row, column),
                       end=_position(lines, document, end_row, end_column))


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _wants(only: list[Any] | None, kind: str) -> bool:
    """Whether a request's `only` filter admits actions of `kind` (kinds nest by dots)."""
    if not only:
        return True
    for requested in only:
        value = getattr(requested, "value", requested)
        if kind == value or kind.startswith(value + "."):
            return True
    return False


def _whole_edit(document, old: str, new: str) -> types.TextEdit:
    """One edit that turns `old` into `new`: the changed middle, common ends kept."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    lines = _lines(old)
    from mplint.core.textpos import LineIndex

    index = LineIndex(old)
    start_row, start_col = index.row_col(start)
    end_row, end_col = index.row_col(end_old)
    return types.TextEdit(
        range=_range(lines, document, start_row, start_col, end_row, end_col),
        new_text=new[start:end_new],
    )


def _is_settings_file(uri: str) -> bool:
    """mplint's configuration, or a project file the Keras target is read from
    (requirements, pyproject.toml, setup.cfg)."""
    from mplint.facts.target import is_project_file

    path = unquote(urlparse(uri).path)
    return path.endswith("/mplint.toml") or is_project_file(path)


def create_server(debounce: float = DEBOUNCE_SECONDS) -> MplintLanguageServer:
    server = MplintLanguageServer(debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MplintLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.open_uris.add(params.text_document.uri)
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MplintLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: MplintLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if _is_settings_file(uri):
            ls.recheck_open_documents()
        else:
            ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MplintLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files_changed(ls: MplintLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_is_settings_file(change.uri) for change in params.changes):
            ls.recheck_open_documents()
            return
        from mplint.engine.textcheck import forget_text

        changed = [c.uri for c in params.changes if c.uri.endswith((".py", ".ipynb")) and c.uri not in ls.open_uris]
        for uri in changed:  # edited outside the editor (git checkout, a script): read again
            where = ls._path_of(uri)
            if where is not None and where[0]:
                forget_text(where[0])
        if changed:
            ls.publish_affected("")

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]),
    )
    def code_action(ls: MplintLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: MplintLanguageServer, params: types.HoverParams) -> types.Hover | None:
        return ls.hover(params)

    return server


def serve() -> None:
    """Run the server on stdin/stdout until the client says exit."""
    from mplint.inputs import run_record

    run_record.disable()  # a long-running process: see mplint.inputs.run_record
    logging.basicConfig(level=logging.WARNING, format="mplint lsp: %(message)s")
    create_server().start_io()
