"""What `mplint check` does with its options: one run, its output and its exit code.

Modes, as in ruff:
- report (default, and `--fix`): the findings in the output format, then a summary;
- `--fix-only`: apply fixes, report only what was fixed, exit 0 for what remains;
- `--diff`: like `--fix-only` but write nothing: the diffs on stdout, the summary on
  stderr, exit 1 only if there is a diff;
- `--add-noqa`: write `# noqa: CODE` comments for every finding, report nothing else;
- `--statistics`: a count per rule instead of the findings.

With `-` or `--stdin-filename`, the text comes from stdin and is checked as the named
file (its configuration, per-file-ignores and Keras target); with a fix, the fixed text
goes to stdout and the report to stderr (or `--output-file`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import IO

import click

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
NO_FILES = "No Python files found under the given path(s)"


@dataclass(frozen=True)
class CheckRequest:
    """The options of one `mplint check`, as parsed by click."""

    paths: tuple[str, ...]
    fix: bool = False
    unsafe_fixes: bool = False
    show_fixes: bool = False
    diff: bool = False
    fix_only: bool = False
    watch: bool = False
    add_noqa: bool = False
    statistics: bool = False
    output_format: str = "concise"
    output_file: str | None = None
    color: str = "auto"
    select: str | None = None
    extend_select: tuple[str, ...] = ()
    ignore: str | None = None
    per_file_ignores: tuple[str, ...] = ()
    extend_per_file_ignores: tuple[str, ...] = ()
    target: str | None = None
    extended: bool = False
    fail_on: str | None = None
    min_severity: str | None = None
    config_file: str | None = None
    force_exclude: bool = False
    stdin_filename: str | None = None
    no_cache: bool = False
    exit_zero: bool = False
    exit_non_zero_on_fix: bool = False
    show_settings: bool = False
    quiet: bool = False
    verbose: bool = False
    jobs: int | None = None
    verify: bool = False

    @property
    def reads_stdin(self) -> bool:
        return self.stdin_filename is not None or self.paths == ("-",)

    @property
    def applies_fixes(self) -> bool:
        return self.fix or self.fix_only


class UsageError(Exception):
    """Options that do not go together; the CLI exits 2 with the message."""


def validate(request: CheckRequest) -> None:
    """Raise UsageError for options that do not go together (ruff's conflicts)."""
    conflicts = [
        ("add_noqa", "fix"), ("add_noqa", "fix_only"), ("add_noqa", "diff"), ("add_noqa", "statistics"),
        ("diff", "show_fixes"), ("statistics", "diff"), ("statistics", "fix_only"), ("watch", "add_noqa"),
        ("watch", "verify"),
    ]
    for a, b in conflicts:
        if getattr(request, a) and getattr(request, b):
            raise UsageError(f"--{a.replace('_', '-')} cannot be used with --{b.replace('_', '-')}")
    if request.verify and (not request.applies_fixes or request.diff):
        raise UsageError("--verify needs --fix (and no --diff); to verify without fixing run `mplint verify FILE`")
    if request.statistics and request.output_format not in ("concise", "text", "grouped", "json"):
        raise UsageError(f"--statistics prints text or json, not {request.output_format}")
    if "-" in request.paths and len(request.paths) > 1 and request.stdin_filename is None:
        raise UsageError("`-` (standard input) cannot be combined with other paths")
    if request.reads_stdin and (request.watch or request.add_noqa or request.verify):
        option = "--watch" if request.watch else "--add-noqa" if request.add_noqa else "--verify"
        raise UsageError(f"{option} cannot be used with standard input")


def resolver_for(request: CheckRequest):
    """The configuration resolver with the command line's overrides (ConfigError if bad)."""
    from mplint.inputs.config import ConfigResolver, per_file_ignores_option, validated_codes

    overrides: dict = {}
    if request.select is not None:
        overrides["select"] = validated_codes(request.select, "--select")
    if request.extend_select:
        overrides["add_select"] = validated_codes(",".join(request.extend_select), "--extend-select")
    if request.ignore is not None:
        overrides["add_ignore"] = validated_codes(request.ignore, "--ignore")
    if request.per_file_ignores:
        overrides["per_file_ignores"] = per_file_ignores_option(request.per_file_ignores, "--per-file-ignores")
    if request.extend_per_file_ignores:
        overrides["add_per_file_ignores"] = per_file_ignores_option(
            request.extend_per_file_ignores, "--extend-per-file-ignores")
    if request.target is not None:
        overrides["target"] = request.target
    if request.extended:
        overrides["extended"] = True
    if request.fail_on is not None:
        overrides["fail_on"] = request.fail_on
    if request.min_severity is not None:
        overrides["min_severity"] = request.min_severity
    return ConfigResolver(request.config_file, overrides)


def check_paths(request: CheckRequest) -> list[str]:
    if request.stdin_filename is not None:
        for path in request.paths:
            if path != "-":
                click.echo(f"warning: Ignoring file {path} in favor of standard input.", err=True)
        return [request.stdin_filename]
    return list(request.paths) or ["."]


def execute(request: CheckRequest, resolver) -> int:
    """Run one check and print its output; returns the exit code."""
    from mplint.engine.runner import RunOptions, run

    paths = check_paths(request)
    stdin = click.get_binary_stream("stdin").read() if request.reads_stdin else None
    options = RunOptions(
        fix=request.applies_fixes and not request.diff, unsafe=request.unsafe_fixes, diff=request.diff,
        cache=not (request.no_cache or request.add_noqa), details=request.verbose,
        force_exclude=request.force_exclude, jobs=request.jobs, add_noqa=request.add_noqa,
    )
    from mplint.frontends.progress import terminal_progress

    progress = terminal_progress(request.output_format, request.quiet, stdin is not None)
    try:
        result = run(paths, resolver, options, stdin=stdin, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    _apply_severities(result, resolver.for_path(paths[0]))
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if result.files == 0 and not result.problems and stdin is None:
        click.echo(f"warning: {NO_FILES}", err=True)
    for problem in result.problems:
        click.echo(f"mplint: error: {problem.path}: {problem.message}", err=True)
    if request.verbose:
        for line in result.details:
            click.echo(line, err=True)
        for finding in result.findings:
            where = f"{finding.filename}:{finding.location.row}:{finding.location.column}"
            if finding.detail:
                click.echo(f"{where}: {finding.code} why: {finding.detail}", err=True)
            if finding.premises:
                click.echo(f"{where}: {finding.code} rests on ({finding.tier} tier):", err=True)
                for premise in finding.premises:
                    click.echo(f"    {premise.describe()}", err=True)
    if stdin is not None and options.fix:
        click.get_binary_stream("stdout").write(result.output if result.output is not None else stdin)
    _print_report(request, result, fixed_text_on_stdout=stdin is not None and options.fix)
    code = exit_code(request, result)
    if request.verify:
        from mplint.verify.command import verify_fixed_files

        to_stderr = request.output_format not in ("concise", "text") or request.output_file is not None
        from mplint.verify.runner import worst_exit_code

        code = worst_exit_code([code, verify_fixed_files(result.fixed_paths, to_stderr=to_stderr)])
    return code


def _apply_severities(result, settings) -> None:
    """Keep the findings at or above `min-severity` (engine errors always), and note which
    of them fail the run (`fail-on`)."""
    from mplint.inputs.config import SEVERITIES
    from mplint.core.diagnostics import INTERNAL_ERROR, PARSE_ERROR

    rank = {name: i for i, name in enumerate(SEVERITIES)}
    engine = (PARSE_ERROR[0], INTERNAL_ERROR[0])
    shown = rank[settings.min_severity]
    result.findings = [f for f in result.findings if f.code in engine or rank[f.severity.value] >= shown]
    failing = rank[settings.fail_on]
    result.failing = sum(1 for f in result.findings if f.code in engine or rank[f.severity.value] >= failing)


def _print_report(request: CheckRequest, result, fixed_text_on_stdout: bool) -> None:
    from mplint.frontends.reporters import HUMAN_FORMATS, ReportContext, get_reporter
    from mplint.frontends.reporters.style import Style, use_color

    human = request.output_format in HUMAN_FORMATS
    if request.add_noqa:
        if result.noqa_added and not request.quiet:
            noun = "directive" if result.noqa_added == 1 else "directives"
            click.echo(f"Added {result.noqa_added} noqa {noun}.", err=True)
        return
    if request.diff:
        for chunk in result.diffs:
            click.echo(chunk, nl=False)
        if human and not request.quiet:
            _emit(_fix_only_text(request, result, sys.stderr), request, sys.stderr, err=True)
        return
    to_stderr = fixed_text_on_stdout and request.output_file is None
    stream = None if request.output_file is not None else (sys.stderr if to_stderr else sys.stdout)
    color = human and use_color(request.color, stream)
    context = ReportContext(fix=request.applies_fixes, unsafe=request.unsafe_fixes, quiet=request.quiet,
                            show_fixes=request.show_fixes, style=Style(color))
    if request.fix_only:
        text = _fix_only_text(request, result, stream) if human and not request.quiet else ""
    elif request.statistics:
        from mplint.frontends.reporters.statistics import render

        text = render(result, context, request.output_format)
    else:
        text = get_reporter(request.output_format)(result, context)
    _emit(text, request, stream, err=to_stderr, color=color)


def _fix_only_text(request: CheckRequest, result, stream: IO | None) -> str:
    from mplint.frontends.reporters import ReportContext
    from mplint.frontends.reporters.style import Style, use_color
    from mplint.frontends.reporters.text import fix_only_summary, fixes_applied

    style = Style(use_color(request.color, stream))
    context = ReportContext(fix=True, unsafe=request.unsafe_fixes, diff=request.diff, style=style)
    lines = (fixes_applied(result, style) if request.show_fixes else []) + fix_only_summary(result, context)
    return "\n".join(lines) + ("\n" if lines else "")


def _emit(text: str, request: CheckRequest, stream: IO | None, err: bool = False, color: bool = False) -> None:
    """Write report text to --output-file (created with its folders) or the stream."""
    if request.output_file is not None and stream is None:
        folder = os.path.dirname(os.path.abspath(request.output_file))
        os.makedirs(folder, exist_ok=True)
        with open(request.output_file, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        return
    if text:
        click.echo(text, nl=False, err=err, color=color)


def exit_code(request: CheckRequest, result) -> int:
    """ruff's rules: errors first (2), then --exit-zero, then by mode."""
    if result.problems or result.internal_errors:
        return EXIT_ERROR
    if request.exit_zero or request.add_noqa:
        return EXIT_OK
    if request.diff:
        return EXIT_FINDINGS if result.diffs else EXIT_OK
    if request.fix_only:
        return EXIT_FINDINGS if request.exit_non_zero_on_fix and result.fixed else EXIT_OK
    failing = len(result.findings) if result.failing is None else result.failing
    if failing or (request.exit_non_zero_on_fix and result.fixed):
        return EXIT_FINDINGS
    return EXIT_OK
