"""Runs a check over paths: discovery, pre-filter, cache, worker processes, writes.

The parent reads each file once, decodes it and runs the text pre-filter; files that
can involve mixed precision (and are not cached) become jobs for worker processes,
which parse, lint, fix and write atomically. Results are merged and sorted, so the
output does not depend on scheduling. Nothing holds more than a bounded window of
files in memory.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from mplint.inputs.cache import Cache, Scan, file_digest, file_stat, findings_key
from mplint.core.codes import all_codes
from mplint.inputs.config import ConfigResolver, FileSettings, assumed_policy_for
from mplint.inputs import run_record
from mplint.core.diagnostics import INTERNAL_ERROR, PARSE_ERROR, Finding, Severity
from mplint.inputs.discovery import Found, PathProblem, discover, virtual_file
from mplint.core.gc_pause import paused_gc
from mplint.engine.prefilter import may_need_parse, mentions_keras, needs_parse, worth_parsing
from mplint.analysis import parsed_once
from mplint.inputs.documents import load_document
from mplint.inputs.source import FileTooLarge, SourceError, atomic_write, read_bytes

if TYPE_CHECKING:
    from mplint.project.index import ProjectIndex

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
    add_noqa: bool = False  # write `# noqa` comments for the findings instead of fixing


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
    digest: str | None = None  # of the content `cache_key` is for
    speculative: bool = False
    fixed_codes: dict[str, int] = field(default_factory=dict)  # code -> fixes applied
    output: bytes | None = None  # a virtual file's (stdin's) new bytes: never written
    noqa_added: int = 0
    inputs: tuple = ((), (), ())  # the files, folders and probes its check read (mplint.inputs.run_record)


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
    fixed_codes: dict[str, dict[str, int]] = field(default_factory=dict)  # file -> code -> fixes
    output: bytes | None = None  # stdin's fixed (or --add-noqa'd) bytes
    noqa_added: int = 0
    failing: int | None = None  # findings at or above `fail-on` (None: every finding fails the run)

    @property
    def internal_errors(self) -> list[Finding]:
        return [f for f in self.findings if f.code == INTERNAL_ERROR[0]]


@dataclass(frozen=True)
class Job:
    path: str
    filename: str
    data: bytes
    file_settings: FileSettings
    key_suffix: tuple[str, ...] | None  # None: no cache to key results for
    options: RunOptions
    speculative: bool = False  # sent while other files are still being read
    virtual: bool = False  # text from stdin: the result keeps new bytes instead of writing
    digest: str | None = None  # of `data`, when there is a cache
    project: bool = True  # read the project index for cross-file facts


def _source_error_finding(filename: str, exc: SourceError) -> Finding:
    code, name = PARSE_ERROR
    return Finding(code, name, exc.message, Severity.ERROR, filename, exc.location, exc.location,
                   span_rows=(exc.location.row, exc.location.row))


def _environment_key(path: str, target: str) -> str:
    from mplint.facts.file_history import history_key
    from mplint.facts.target import (
        environment_fingerprint, nearest_container_target, nearest_ngc_image, pins_fingerprint, project_root,
    )

    folder = os.path.dirname(os.path.abspath(path))
    ngc = nearest_ngc_image(folder)  # the TensorFlow build premise, whatever the target
    if target != "auto":
        return f"ngc={ngc}" if ngc else ""
    root = project_root(folder)
    return (f"{environment_fingerprint()}|{pins_fingerprint(root)}|{nearest_container_target(folder, root)!r}|{ngc}"
            f"|{history_key(folder)}")


def process(job: Job) -> FileResult:
    """Lint (and fix) one file; runs in a worker process."""
    with paused_gc():  # one file's trees and scans: see mplint.core.gc_pause
        result, read = run_record.recorded_while(lambda: _process(job))
    result.inputs = read
    return result


def _process(job: Job) -> FileResult:
    result = FileResult(job.filename, job.path, speculative=job.speculative)
    try:
        doc = load_document(job.path, job.data)
    except SourceError as exc:
        result.findings = [_source_error_finding(job.filename, exc)]
        return result
    options = job.options
    settings = job.file_settings
    project = None
    if job.project:
        from mplint.project.index import ProjectIndex

        index = ProjectIndex.for_path(job.path, cache=options.cache)
        if job.virtual:
            index.set_text(os.path.abspath(job.path), doc.text)
        project = index.context_for(job.path)
    assumed = settings.assumed_policy is not None or (
        project is not None and mentions_keras(doc.text) and bool(project.mixed_policies()[0]))
    if not worth_parsing(doc.text, assumed, doc.compile_flags(), unreadable_parts=bool(doc.source_diagnostics()),
                         codes=settings.codes):
        # The code holds nothing any rule looks for: no findings, nothing to fix, and
        # (in a run that parses nothing else) libcst is never imported.
        result.cache_key, result.digest = _unchanged_key(job), job.digest
        return result
    from mplint.engine.engine import check_document

    outcome = check_document(doc, settings, job.filename, fix=options.fix or options.diff,
                             unsafe=options.unsafe, project=project)  # type: ignore[arg-type]
    result.findings = outcome.findings
    if outcome.target or outcome.policy:
        result.details = f"{job.filename}: target {outcome.target}; policy {outcome.policy}; backend {outcome.backend}"
    cacheable = not any(f.code == INTERNAL_ERROR[0] for f in outcome.findings)
    text = outcome.text
    if options.add_noqa:
        from mplint.inputs.noqa_comments import add_noqa

        text, result.noqa_added, skipped = add_noqa(doc, outcome.findings)
        result.warnings.extend(f"{job.filename}: {reason}" for reason in skipped)
    if text == doc.text:
        if cacheable:
            result.cache_key, result.digest = _unchanged_key(job), job.digest
        return result
    if options.diff:
        result.fixed = outcome.fixed
        result.fixed_codes = outcome.fixed_codes
        result.diff = doc.diff(outcome.text, job.filename)
        return result
    try:
        data = doc.render(text)
        if job.virtual:
            result.output = data
        else:
            atomic_write(job.path, data)
    except SourceError as exc:
        reason = exc.message
    except UnicodeEncodeError:
        reason = f"the fixed text cannot be encoded as {doc.encoding}"
    except OSError as exc:
        reason = exc.strerror or str(exc)
    else:
        reason = None
    if reason is not None:
        what = "no noqa comment added" if options.add_noqa else "not fixed"
        result.warnings.append(f"{job.filename}: {what}: {reason.removeprefix('not rewritten: ')}")
        result.findings = outcome.initial
        result.noqa_added = 0
        return result
    result.fixed = outcome.fixed
    result.fixed_codes = outcome.fixed_codes
    if cacheable and job.key_suffix is not None:
        result.digest = file_digest(data)
        result.cache_key = findings_key(result.digest, *job.key_suffix)
    return result


def _unchanged_key(job: Job) -> str | None:
    """The cache key of a file whose check changed nothing (None: not cached)."""
    options = job.options
    if job.key_suffix is None or job.digest is None or options.fix or options.diff or options.add_noqa:
        return None
    return findings_key(job.digest, *job.key_suffix)


def _worker_init() -> None:
    """Workers leave Ctrl-C and SIGTERM to the parent, which stops handing out files,
    lets the ones in flight finish (each write is atomic) and exits: a signal to the
    whole process group never breaks the pool half-way."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _warm_up() -> None:
    """Runs once in each worker: import the engine (and the parser) while the parent
    is still reading files."""
    import mplint.engine.engine  # noqa: F401


class _Pool:
    """Worker processes with a bounded window of jobs in flight.

    Started by the first job (a run whose files are all cached starts none): the
    workers are forked before the parent has imported the parser, so they import it
    in parallel while the parent goes on reading and pre-filtering files.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._executor = None  # a ProcessPoolExecutor
        self._pending: set = set()

    def start(self) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        self._executor = ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context(method), initializer=_worker_init
        )
        for _ in range(self.workers):
            self._pending.add(self._executor.submit(_warm_up))
        # The workers have forked with the trees the project index kept for them; the
        # parent checks nothing itself, so it need not hold them (or keep more).
        parsed_once.forget()

    def submit(self, job: Job) -> list[FileResult]:
        from concurrent.futures import FIRST_COMPLETED, wait

        if self._executor is None:
            self.start()
        self._pending.add(self._executor.submit(process, job))
        done: list[FileResult] = []
        if len(self._pending) >= self.workers * 4:
            finished, self._pending = wait(self._pending, return_when=FIRST_COMPLETED)
            done.extend(r for r in (f.result() for f in finished) if r is not None)
        return done

    def drain(self) -> Iterator[FileResult]:
        """The results still to come, as they come."""
        from concurrent.futures import as_completed

        pending, self._pending = self._pending, set()
        for future in as_completed(pending):
            found = future.result()
            if found is not None:
                yield found

    def close(self, cancel: bool = False) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=cancel)


@dataclass
class _Scanned:
    """What the first pass learned about a file (no bytes kept: memory stays flat)."""

    item: Found
    needs_parse: bool = False
    mentions_keras: bool = False
    result: FileResult | None = None  # final already (unreadable, undecodable, skipped)
    digest: str | None = None  # of the bytes, when there is a cache


def run(paths: Iterable[str], resolver: ConfigResolver, options: RunOptions, stdin: bytes | None = None,
        progress: Callable[[int, int], None] | None = None) -> RunResult:
    """Check `paths`; with `stdin`, check those bytes as the content of the one path
    given (`-` when it has no name), never reading or writing that path. `progress` is
    told (files done, files in all) as the run goes.

    A plain check (no fix, diff, noqa, details or stdin, with the cache) answers from the
    record of the last such run when none of its inputs changed (`mplint.inputs.run_record`),
    and leaves a record of its own."""
    paths = list(paths)
    if stdin is not None or not options.cache or options.fix or options.diff or options.add_noqa or options.details:
        try:
            return _run(paths, resolver, options, stdin, progress)
        finally:
            run_record.finished_run()
    try:
        if not run_record.may_write():  # a server's command, a second run: use a record, record nothing
            root, key = _record_key(paths, resolver, options)
            kept = run_record.load(root, key)
            return _from_record(kept) if kept is not None else _run(paths, resolver, options, None, progress)
        with run_record.recording() as inputs:
            root, key = _record_key(paths, resolver, options)
            kept = run_record.load(root, key)
            if kept is not None:
                return _from_record(kept)
            result = _run(paths, resolver, options, None, progress, inputs)
        if resolver.explicit_file:
            inputs.add_files([resolver.explicit_file])
        if not result.problems and not result.internal_errors and not any("not written" in w for w in result.warnings):
            warning = run_record.save(root, key, inputs, _record_of(result))
            if warning:
                result.warnings.append(warning)
        return result
    finally:
        run_record.finished_run()


def _record_key(paths: list[str], resolver: ConfigResolver, options: RunOptions) -> tuple[str, str]:
    """(the folder the run's record is kept in, its key)."""
    from mplint.facts.target import environment_fingerprint

    root = resolver.for_path(paths[0]).root
    return root, run_record.run_key(paths, options.force_exclude, f"{resolver.fingerprint()}|{options.unsafe}",
                                    environment_fingerprint())


def _record_of(result: RunResult) -> dict:
    return {"files": result.files, "warnings": list(result.warnings),
            "findings": [[f.filename, f.cache_json()] for f in result.findings]}


def _from_record(record: dict) -> RunResult:
    return RunResult(findings=[Finding.from_json(data, filename) for filename, data in record["findings"]],
                     warnings=list(record["warnings"]), files=record["files"])


def _run(paths: list[str], resolver: ConfigResolver, options: RunOptions, stdin: bytes | None,
         progress: Callable[[int, int], None] | None, inputs: "run_record.Inputs | None" = None) -> RunResult:
    found: list[Found] = []
    result = RunResult()
    if stdin is None:
        items = discover(paths, resolver, force_exclude=options.force_exclude)
    else:
        items = virtual_file(paths[0], stdin, resolver, force_exclude=options.force_exclude)
    for item in items:
        if isinstance(item, PathProblem):
            if item.fatal:
                result.problems.append(item)
            else:
                result.warnings.append(f"{item.path}: {item.message}")
        else:
            found.append(item)
    result.files = len(found)
    workers = options.jobs or min(os.cpu_count() or 1, 8)
    pool = _Pool(workers) if workers > 1 and len(found) >= POOL_MIN_FILES else None
    cache = Cache(found[0].settings.root) if options.cache and found and stdin is None else None
    # Pass 0: the project index of each project the files belong to (cross-file facts:
    # a file is judged the same whether it is checked alone or with its project). A
    # module it parses that the engine checks next keeps its tree (mplint.analysis.parsed_once).
    parsed_once.expect([item.path for item in found if item.data is None])
    with paused_gc():  # see mplint.core.gc_pause
        projects = _project_indexes(found, resolver, options)
        if pool is not None:
            # Worker processes fork from this one: solving each project's policies here,
            # once, spares every worker from summarising the same modules again. Several
            # projects are first solved side by side (mplint.project.parallel_solve).
            from mplint.project.parallel_solve import solve_in_parallel

            unique = list({id(i): i for i in projects.values() if i is not None}.values())
            solve_in_parallel(unique, workers)
            for index in unique:
                index.solve()
    # With workers and nothing to write, a file that needs the engine is sent to it as
    # soon as it is read. --fix and --diff wait for every file to be read.
    speculate = pool is not None and not (options.fix or options.diff or options.add_noqa)
    results: list[FileResult] = []
    sent: set[str] = set()
    count = {"scanned": 0, "waiting": 0}  # files read; files read that still wait for the engine

    def finished(new: Iterable[FileResult]) -> None:
        for file_result in new:
            results.append(file_result)
            count["waiting"] -= 1
        if progress is not None:
            progress(count["scanned"] - count["waiting"], len(found))

    def dispatch(job_or_result: Job | FileResult) -> None:
        count["waiting"] += 1
        if isinstance(job_or_result, FileResult):
            finished([job_or_result])
        elif pool is not None:
            finished(pool.submit(job_or_result))
        else:
            finished([process(job_or_result)])

    # What exists now (modules, project indexes, kept trees) lives to the end of the run:
    # collections triggered by the passes below need not walk it again (each is a walk
    # of every tracked object; a warm run spent a tenth of its time in them).
    gc.freeze()
    try:
        # Pass 1: read, decode and pre-filter every file (a file the project runs under
        # a mixed policy needs the engine even without a mixed-precision token). A file
        # the cache has seen unchanged is not read: its scan comes from the cache.
        scanned = []
        for item in found:
            with paused_gc():
                scan, data = _scan(item, projects, cache)
            count["scanned"] += 1
            if speculate and scan.result is None and scan.needs_parse:
                sent.add(item.path)
                dispatch(_prepare(item, options, cache, projects, data, speculative=True, digest=scan.digest))
            elif scan.result is None and scan.needs_parse:
                count["waiting"] += 1  # until pass 2 gives it to the engine
            scanned.append(scan)
            finished([])
        # Pass 2: the engine, for the files that need it (and were not sent yet).
        for scan in scanned:
            path = scan.item.path
            if scan.result is not None:
                results.append(scan.result)
                continue
            if path in sent:
                continue
            if not scan.needs_parse:
                results.append(FileResult(path, path))
                continue
            count["waiting"] -= 1  # counted by dispatch from here on
            dispatch(_prepare(scan.item, options, cache, projects, digest=scan.digest))
        if pool is not None:
            for file_result in pool.drain():
                finished([file_result])
    except BaseException:
        if pool is not None:
            pool.close(cancel=True)
        raise
    else:
        if pool is not None:
            pool.close()
    finally:
        parsed_once.forget()
        gc.unfreeze()
    for index in {id(i): i for i in projects.values() if i is not None}.values():
        warning = index.save()
        if warning:
            result.warnings.append(warning)
        if inputs is not None:
            inputs.add_files(index.paths)  # a warm run stats them through the store
    if inputs is not None:
        inputs.add_files(os.path.abspath(item.path) for item in found)
        for file_result in results:
            inputs.merge(file_result.inputs)  # what worker processes read
    for file_result in results:
        result.findings.extend(file_result.findings)
        result.fixed += file_result.fixed
        if file_result.fixed and not options.diff and file_result.output is None:
            result.fixed_paths.append(file_result.path)
        if file_result.fixed_codes:
            result.fixed_codes[file_result.filename] = file_result.fixed_codes
        if file_result.output is not None:
            result.output = file_result.output
        result.noqa_added += file_result.noqa_added
        result.warnings.extend(file_result.warnings)
        result.problems.extend(file_result.problems)
        if file_result.diff:
            result.diffs.append(file_result.diff)
        if file_result.details:
            result.details.append(file_result.details)
        if cache is not None and file_result.cache_key is not None:
            cache.put(file_result.path, file_result.cache_key, file_result.findings, file_result.digest)
    if cache is not None:
        warning = cache.save()
        if warning:
            result.warnings.append(warning)
    result.findings.sort(key=Finding.sort_key)
    result.diffs.sort()
    result.details.sort()
    result.fixed_paths.sort()
    return result


def _read(item: Found) -> bytes | FileResult:
    if item.data is not None:
        return item.data
    result = FileResult(item.path, item.path)
    try:
        return read_bytes(item.path)
    except FileTooLarge as exc:
        result.warnings.append(str(exc))
    except IsADirectoryError:
        pass
    except OSError as exc:
        result.problems.append(PathProblem(item.path, f"cannot read: {exc.strerror or exc}"))
    return result


def _project_indexes(found: list[Found], resolver: ConfigResolver, options: RunOptions) -> dict[str, "ProjectIndex | None"]:
    """The project index of each file, by its path (None for stdin without a real path)."""
    from mplint.project.index import ProjectIndex
    from mplint.project.layout import project_root

    assumed_for = assumed_policy_for(resolver)
    by_folder: dict[str, ProjectIndex | None] = {}
    roots: set[str] = set()
    indexes: dict[str, ProjectIndex | None] = {}
    for item in found:
        folder = os.path.dirname(os.path.abspath(item.path))
        if folder not in by_folder:
            root = project_root(folder)
            by_folder[folder] = ProjectIndex.for_path(
                item.path, cache=options.cache, assumed_for=assumed_for, fresh=root not in roots
            )
            roots.add(root)
        indexes[item.path] = by_folder[folder]
    return indexes


def _index_of(item: Found, projects: dict[str, "ProjectIndex | None"]) -> "ProjectIndex | None":
    return projects.get(item.path)


def _scan(item: Found, projects: dict[str, "ProjectIndex | None"], cache: Cache | None) -> tuple[_Scanned, bytes | None]:
    """What pass 1 learns about a file, and its bytes (for an immediate job). A file the
    cache has seen with the same size and modification time is not read at all. A file
    that mentions Keras and that the project runs under a mixed policy needs the engine
    even without a mixed-precision token of its own."""
    settings = item.settings
    assumed = bool(settings.assume_policy) and settings.assumed_policy(settings.relpath(item.path)) is not None
    stat = file_stat(item.path) if cache is not None and item.data is None else None
    known = cache.scan_of(item.path, stat, assumed) if cache is not None else None
    data: bytes | None = None
    if known is not None:
        scan, digest = known
        scanned = _Scanned(item, scan.needs_parse, scan.mentions_keras, digest=digest)
    else:
        read = _read(item)
        if isinstance(read, FileResult):
            return _Scanned(item, result=read), None
        data = read
        digest = file_digest(data) if cache is not None else None
        scanned = _scan_bytes(item, data, assumed, digest)
        if scanned.result is None and cache is not None and digest is not None:
            cache.put_scan(item.path, stat, digest, Scan(assumed, scanned.needs_parse, scanned.mentions_keras))
    if scanned.result is None and not scanned.needs_parse and scanned.mentions_keras:
        index = _index_of(item, projects)
        context = index.context_for(item.path) if index is not None else None
        scanned.needs_parse = context is not None and bool(context.mixed_policies()[0])
    return scanned, data


def _scan_bytes(item: Found, data: bytes, assumed: bool, digest: str | None) -> _Scanned:
    """The scan of a file's bytes."""
    if not may_need_parse(data):
        return _Scanned(item, digest=digest)  # no token of interest: not even decoded
    try:
        doc = load_document(item.path, data)
    except SourceError as exc:
        return _Scanned(item, result=FileResult(item.path, item.path, [_source_error_finding(item.path, exc)]))
    keras = mentions_keras(doc.text)
    needed = needs_parse(doc.text, assume_policy=assumed, unreadable_parts=bool(doc.source_diagnostics()))
    return _Scanned(item, needs_parse=needed, mentions_keras=keras, digest=digest)


def _prepare(item: Found, options: RunOptions, cache: Cache | None, projects: dict[str, "ProjectIndex | None"],
             data: bytes | None = None, speculative: bool = False, digest: str | None = None) -> Job | FileResult:
    """A Job for the engine, or the cached result (found by the digest pass 1 learned,
    without reading the file again). The key of cached findings holds what the project
    index says the file depends on (policies brought in, modules it reads facts from, the
    project's Keras target)."""
    settings = item.settings
    file_settings = settings.for_file(item.path, all_codes(), options.details)
    if not file_settings.codes:
        return FileResult(item.path, item.path)
    index = _index_of(item, projects)
    in_project = index is not None and index.context_for(item.path) is not None
    key_suffix = None
    if cache is not None:
        key_suffix = (file_settings.fingerprint(), _environment_key(item.path, settings.target),
                      f"{index.target()!r}|{index.era_target()!r}|{index.dependency_key(item.path)}" if in_project else "")  # type: ignore[union-attr]
        if digest is not None and not options.details:
            cached = cache.get(item.path, findings_key(digest, *key_suffix), item.path)
            if cached is not None and (not (options.fix or options.diff) or not any(
                f.fix is not None and f.fix.applies(options.unsafe) for f in cached
            )):
                return FileResult(item.path, item.path, cached, speculative=speculative)
    if data is None:
        read = _read(item)
        if isinstance(read, FileResult):
            return read
        data = read
        if cache is not None:
            digest = file_digest(data)  # it may have changed since pass 1
    return Job(item.path, item.path, data, file_settings, key_suffix, options, speculative, item.data is not None,
               digest if cache is not None else None, in_project)
