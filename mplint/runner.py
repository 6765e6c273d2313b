"""Runs a check over paths: discovery, pre-filter, cache, worker processes, writes.

The parent reads each file once, decodes it and runs the text pre-filter; files that
can involve mixed precision (and are not cached) become jobs for worker processes,
which parse, lint, fix and write atomically. Results are merged and sorted, so the
output does not depend on scheduling. Nothing holds more than a bounded window of
files in memory.
"""

from __future__ import annotations

import difflib
import os
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Iterable

from mplint.cache import Cache, content_key
from mplint.codes import all_codes
from mplint.config import ConfigResolver, Settings
from mplint.diagnostics import INTERNAL_ERROR, PARSE_ERROR, Finding, Location, Severity
from mplint.discovery import Found, PathProblem, discover
from mplint.prefilter import needs_parse
from mplint.source import Document, FileTooLarge, SourceError, atomic_write, decode_python, read_bytes

POOL_MIN_FILES = 16  # below this, starting worker processes costs more than it saves


@dataclass(frozen=True)
class RunOptions:
    fix: bool = False
    unsafe: bool = False
    diff: bool = False
    cache: bool = True
    details: bool = False
    force_exclude: bool = False
    jobs: int | None = None


@dataclass
class FileResult:
    filename: str
    path: str = ""
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0
    diff: str | None = None
    warnings: list[str] = field(default_factory=list)
    problems: list[PathProblem] = field(default_factory=list)
    details: str | None = None
    cache_key: str | None = None  # key to store `findings` under, if cacheable


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    problems: list[PathProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    fixed: int = 0
    diffs: list[str] = field(default_factory=list)
    files: int = 0
    details: list[str] = field(default_factory=list)
    fixed_paths: list[str] = field(default_factory=list)  # files rewritten by --fix

    @property
    def internal_errors(self) -> list[Finding]:
        return [f for f in self.findings if f.code == INTERNAL_ERROR[0]]


@dataclass(frozen=True)
class Job:
    path: str
    filename: str
    data: bytes
    file_settings: object  # engine.FileSettings (kept untyped: no engine import here)
    key_suffix: tuple[str, ...]
    options: RunOptions


def load_document(path: str, data: bytes) -> Document:
    if path.endswith(".ipynb"):
        from mplint.notebook import decode_notebook

        return decode_notebook(path, data)
    return decode_python(path, data)


def _source_error_finding(filename: str, exc: SourceError) -> Finding:
    code, name = PARSE_ERROR
    return Finding(code, name, exc.message, Severity.ERROR, filename, exc.location, exc.location,
                   span_rows=(exc.location.row, exc.location.row))


def _file_settings(settings: Settings, path: str, details: bool):
    from mplint.engine import FileSettings

    rel = settings.relpath(path)
    return FileSettings(
        codes=settings.codes_for(rel, all_codes()),
        target=settings.target,
        assumed_policy=settings.assumed_policy(rel),
        tensor_core_multiple=settings.tensor_core_multiple,
        details=details,
    )


def _environment_key(path: str, target: str) -> str:
    if target != "auto":
        return ""
    from mplint.facts.target import environment_fingerprint, project_pins, project_root

    pins = project_pins(project_root(os.path.dirname(os.path.abspath(path))))
    return f"{environment_fingerprint()}|{pins}"


def _diff(filename: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=filename, tofile=filename
        )
    )


def process(job: Job) -> FileResult:
    """Lint (and fix) one file; runs in a worker process."""
    from mplint.engine import check_document

    result = FileResult(job.filename, job.path)
    try:
        doc = load_document(job.path, job.data)
    except SourceError as exc:
        result.findings = [_source_error_finding(job.filename, exc)]
        return result
    options = job.options
    outcome = check_document(doc, job.file_settings, job.filename, fix=options.fix or options.diff,
                             unsafe=options.unsafe)  # type: ignore[arg-type]
    result.findings = outcome.findings
    if outcome.target or outcome.policy:
        result.details = f"{job.filename}: target {outcome.target}; policy {outcome.policy}"
    cacheable = not any(f.code == INTERNAL_ERROR[0] for f in outcome.findings)
    if outcome.text == doc.text:
        if cacheable and not (options.fix or options.diff):
            result.cache_key = content_key(job.data, *job.key_suffix)
        return result
    if options.diff:
        result.fixed = outcome.fixed
        if doc.path.endswith(".ipynb"):
            from mplint.notebook import NotebookDocument

            assert isinstance(doc, NotebookDocument)
            new_sources = doc.cell_sources(outcome.text)
            chunks = []
            for cell in doc.cells:
                new = new_sources.get(cell.number, cell.source)
                if new != cell.source:
                    chunks.append(_diff(f"{job.filename}:cell {cell.number}", cell.source + "\n", new + "\n"))
            result.diff = "".join(chunks)
        else:
            result.diff = _diff(job.filename, doc.text, outcome.text)
        return result
    try:
        data = doc.render(outcome.text)
        atomic_write(job.path, data)
    except (OSError, SourceError, UnicodeEncodeError) as exc:
        message = exc.message if isinstance(exc, SourceError) else (
            str(exc) if isinstance(exc, PermissionError) and str(exc).startswith(job.path) else f"{job.path}: {exc}"
        )
        result.warnings.append(f"{job.filename}: not fixed: {message.split(': ', 1)[-1]}")
        result.findings = outcome.initial
        return result
    result.fixed = outcome.fixed
    if cacheable:
        result.cache_key = content_key(data, *job.key_suffix)
    return result


class _Pool:
    """Worker processes, started on first use, with a bounded window of jobs in flight."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._executor: ProcessPoolExecutor | None = None
        self._pending: set[Future] = set()

    def submit(self, job: Job) -> list[FileResult]:
        if self._executor is None:
            import multiprocessing

            import mplint.engine  # noqa: F401  (import once, before forking)

            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
            self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context(method))
        self._pending.add(self._executor.submit(process, job))
        done: list[FileResult] = []
        if len(self._pending) >= self.workers * 4:
            finished, self._pending = wait(self._pending, return_when=FIRST_COMPLETED)
            done.extend(f.result() for f in finished)
        return done

    def drain(self) -> list[FileResult]:
        results = [f.result() for f in self._pending]
        self._pending = set()
        return results

    def close(self, cancel: bool = False) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=cancel)


def run(paths: Iterable[str], resolver: ConfigResolver, options: RunOptions) -> RunResult:
    paths = list(paths)
    found: list[Found] = []
    result = RunResult()
    for item in discover(paths, resolver, force_exclude=options.force_exclude):
        if isinstance(item, PathProblem):
            if item.fatal:
                result.problems.append(item)
            else:
                result.warnings.append(f"{item.path}: {item.message}")
        else:
            found.append(item)
    result.files = len(found)
    cache = None
    if options.cache and found:
        cache = Cache(found[0].settings.root)
    workers = options.jobs or min(os.cpu_count() or 1, 8)
    pool = _Pool(workers) if workers > 1 and len(found) >= POOL_MIN_FILES else None
    results: list[FileResult] = []
    try:
        for item in found:
            prepared = _prepare(item, options, cache)
            if isinstance(prepared, FileResult):
                results.append(prepared)
            elif pool is not None:
                results.extend(pool.submit(prepared))
            else:
                results.append(process(prepared))
        if pool is not None:
            results.extend(pool.drain())
    except BaseException:
        if pool is not None:
            pool.close(cancel=True)
        raise
    if pool is not None:
        pool.close()
    for file_result in results:
        result.findings.extend(file_result.findings)
        result.fixed += file_result.fixed
        if file_result.fixed and not options.diff:
            result.fixed_paths.append(file_result.path)
        result.warnings.extend(file_result.warnings)
        result.problems.extend(file_result.problems)
        if file_result.diff:
            result.diffs.append(file_result.diff)
        if file_result.details:
            result.details.append(file_result.details)
        if cache is not None and file_result.cache_key is not None:
            cache.put(file_result.path, file_result.cache_key, file_result.findings)
    if cache is not None:
        warning = cache.save()
        if warning:
            result.warnings.append(warning)
    result.findings.sort(key=Finding.sort_key)
    result.diffs.sort()
    result.details.sort()
    result.fixed_paths.sort()
    return result


def _prepare(item: Found, options: RunOptions, cache: Cache | None) -> Job | FileResult:
    """Read, decode and pre-filter a file in the parent; a Job if it needs the engine."""
    filename = item.path
    result = FileResult(filename, item.path)
    try:
        data = read_bytes(item.path)
    except FileTooLarge as exc:
        result.warnings.append(str(exc))
        return result
    except IsADirectoryError:
        return result
    except OSError as exc:
        result.problems.append(PathProblem(filename, f"cannot read: {exc.strerror or exc}"))
        return result
    try:
        doc = load_document(item.path, data)
    except SourceError as exc:
        result.findings = [_source_error_finding(filename, exc)]
        return result
    settings = item.settings
    rel = settings.relpath(item.path)
    assumed = settings.assumed_policy(rel) is not None
    if not needs_parse(doc.text, assume_policy=assumed):
        return result
    file_settings = _file_settings(settings, item.path, options.details)
    if not file_settings.codes:
        return result
    key_suffix = (repr(file_settings), _environment_key(item.path, settings.target))
    if cache is not None and not options.details:
        cached = cache.get(item.path, content_key(data, *key_suffix), filename)
        if cached is not None:
            if not (options.fix or options.diff) or not any(
                f.fix is not None and f.fix.applies(options.unsafe) for f in cached
            ):
                result.findings = cached
                return result
    return Job(item.path, filename, data, file_settings, key_suffix, options)
