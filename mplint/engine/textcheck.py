"""Checking a text held in memory, for integrations that are handed the text rather
than a path to read (the language server, the flake8 plugin).

It applies what `mplint check` applies to a named file: the nearest configuration of
the file's folder (select/ignore/per-file-ignores/target/assume-policy), the config
`exclude` globs (like `--force-exclude`), the text pre-filter and `# noqa`; then the
same engine, with the project index of the file's project (`mplint.project.index`), so
what other modules say (the policy their callers set, constants, re-exports, the Keras
target) counts exactly as in `mplint check`. The text held here stands in for the file
on disk in that index (an editor's unsaved buffer). Notebook cells held by an editor
(one cell, IPython syntax included) are checked with their magics masked, as in
`.ipynb` files.
"""

from __future__ import annotations

import os

from mplint.core.codes import all_codes
from mplint.inputs.config import ConfigResolver
from mplint.engine.engine import Outcome, check_document
from mplint.engine.prefilter import mentions_keras, worth_parsing
from mplint.inputs.source import Document


def is_excluded(path: str, resolver: ConfigResolver) -> bool:
    """Whether the config excludes `path` (default excludes such as `.venv` included)."""
    if not path or not os.path.exists(path):
        return False
    from mplint.inputs.discovery import Found, discover

    return not any(isinstance(item, Found) for item in discover([path], resolver, force_exclude=True))


def project_key(path: str) -> str:
    """What the findings of `path` depend on in other files of its project (buffers
    held by `check_text` included): when it changes, the file must be checked again."""
    if not path:
        return ""
    from mplint.project.index import ProjectIndex

    return ProjectIndex.for_path(path).dependency_key(path)


def forget_text(path: str) -> None:
    """The editor closed `path`: the project index reads it from disk again."""
    if path:
        from mplint.project.index import ProjectIndex

        ProjectIndex.for_path(path).set_text(path, None)


def check_text(
    path: str,
    text: str,
    resolver: ConfigResolver | None = None,
    *,
    fix: bool = False,
    unsafe: bool = False,
    notebook_cell: bool = False,
) -> Outcome | None:
    """Findings (and with `fix`, the fixed text) for `text` as the content of `path`.

    None when the configuration excludes the file or enables no rule. Raises
    `mplint.inputs.config.ConfigError` for a broken configuration.
    """
    resolver = resolver or ConfigResolver()
    config_path = path or os.path.join(os.getcwd(), "untitled.py")
    if is_excluded(path, resolver):
        return None
    settings = resolver.for_path(config_path)
    engine_settings = settings.for_file(config_path, all_codes())
    if not engine_settings.codes:
        return None
    doc = Document(path, text)
    if notebook_cell:
        from mplint.inputs.notebook import mask_cell

        doc = mask_cell(path, text)
    assumed = engine_settings.assumed_policy is not None
    project = None
    if path and not notebook_cell:
        from mplint.project.index import ProjectIndex

        def assumed_for(other: str) -> str | None:
            other_settings = resolver.for_path(other)  # type: ignore[union-attr]
            return other_settings.assumed_policy(other_settings.relpath(other)) if other_settings.assume_policy else None

        index = ProjectIndex.for_path(path, assumed_for=assumed_for)
        index.set_text(path, doc.text)
        project = index.context_for(path)
    if not assumed and project is not None and mentions_keras(doc.text):
        assumed = bool(project.mixed_policies()[0])  # the project runs it under a mixed policy
    if not worth_parsing(doc.text, assumed, doc.compile_flags(), unreadable_parts=bool(doc.source_diagnostics()),
                         codes=engine_settings.codes):
        return Outcome([], text)
    outcome = check_document(doc, engine_settings, path or "untitled.py", fix=fix, unsafe=unsafe, project=project)
    if notebook_cell and outcome.text != doc.text:
        from mplint.inputs.notebook import unmask_cell

        outcome.text = unmask_cell(text, outcome.text)
    elif outcome.text == doc.text:
        outcome.text = text
    return outcome
