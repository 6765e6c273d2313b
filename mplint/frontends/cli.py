"""The `mplint` command line (click).

    mplint [check] [PATHS...] [--fix] [--unsafe-fixes] [--diff] ...
    mplint rule CODE | --all

Exit codes: 0 nothing left to report; 1 findings remain (or `--diff` would change
something); 2 usage, configuration or internal error, or a path that could not be read.
Importing this module never imports TensorFlow, nor the parser.
"""

from __future__ import annotations

import json
import signal

import click

from mplint import __version__
from mplint.frontends.reporters import FORMATS
from mplint.frontends.reporters.style import CHOICES

EXIT_ERROR = 2


class _DefaultGroup(click.Group):
    """A group whose default command is `check`: `mplint --fix src/` works."""

    default_command = "check"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="mplint", message="%(prog)s %(version)s")
def main() -> None:
    """mplint: find and fix TensorFlow/Keras mixed-precision mistakes.

    Runs `check` when no command is given: `mplint src/`, `mplint --fix .`
    """


def _fail(message: str) -> "click.exceptions.Exit":
    click.echo(f"mplint: error: {message}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def _terminate(signum, frame):  # pragma: no cover - exercised by the interrupt test
    raise SystemExit(128 + signum)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--fix", is_flag=True, help="Apply safe fixes (and unsafe ones with --unsafe-fixes).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (with --fix) or offer fixes that may change behaviour.")
@click.option("--show-fixes", is_flag=True, help="After --fix, list the fixes applied per file and rule.")
@click.option("--diff", is_flag=True,
              help="Print a diff of the fixes instead of writing them (implies --fix-only); exit 1 only if there is one.")
@click.option("--fix-only", is_flag=True,
              help="Apply fixes and report only what was fixed; exit 0 for findings that remain.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` comments for every finding (adopt mplint on a large code base).")
@click.option("-w", "--watch", is_flag=True, help="Check again whenever a file changes (needs the `watch` extra: watchfiles).")
@click.option("--select", metavar="CODES", help="Comma-separated rule codes or prefixes to enable (MP1, MP301); replaces the config's.")
@click.option("--extend-select", metavar="CODES", multiple=True, help="Rule codes or prefixes to enable on top of the selection.")
@click.option("--ignore", metavar="CODES", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--per-file-ignores", metavar="PATTERN:CODE", multiple=True,
              help="Comma-separated PATTERN:CODE pairs ('tests/**:MP3'); replaces the config's per-file-ignores.")
@click.option("--extend-per-file-ignores", metavar="PATTERN:CODE", multiple=True,
              help="Like --per-file-ignores, but added to the config's.")
@click.option("--output-format", type=click.Choice(FORMATS), default="concise", show_default=True,
              envvar="MPLINT_OUTPUT_FORMAT", help="Report format (env: MPLINT_OUTPUT_FORMAT); `text` is `concise`.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), envvar="MPLINT_OUTPUT_FILE",
              help="Write the report to this file instead of stdout (env: MPLINT_OUTPUT_FILE).")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--color", type=click.Choice(CHOICES), default="auto", show_default=True,
              help="Colour the text formats: auto = only on a terminal (NO_COLOR and FORCE_COLOR respected).")
@click.option("--stdin-filename", metavar="PATH",
              help="Read the code from stdin and check it as PATH (its config, per-file-ignores, Keras target).")
@click.option("-e", "--exit-zero", is_flag=True, help="Exit 0 even if findings remain (errors still exit 2).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 if any file was fixed, even if no finding remains.")
@click.option("-n", "--no-cache", is_flag=True, envvar="MPLINT_NO_CACHE", help="Do not read or write the .mplint_cache (env: MPLINT_NO_CACHE).")
@click.option("--config", "config_file", type=click.Path(), help="Use this config file instead of discovering one.")
@click.option("--target", type=click.Choice(["auto", "keras2", "keras3"]), help="Keras API the fixes are written for.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]),
              help="The lowest severity that makes the run exit 1 (default: warning; infos never fail it).")
@click.option("--min-severity", type=click.Choice(["error", "warning", "info"]),
              help="The lowest severity reported (default: info, everything).")
@click.option("--extended", is_flag=True,
              help="Also report the extended tier: findings resting on an assumed or conflicting premise.")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to files named on the command line too.")
@click.option("--show-settings", is_flag=True, help="Print the settings used for the first path and exit.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("-v", "--verbose", is_flag=True, help="Also print the Keras target and policy used for each parsed file.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: CPU count).")
@click.option("--verify", is_flag=True, help="With --fix: run `mplint verify` on each fixed file with a model entry point.")
def check(**options) -> None:
    """Check PATHS (default: the current directory; `-`: stdin) for mixed-precision mistakes."""
    from mplint.frontends.check_command import CheckRequest, UsageError, execute, resolver_for, validate
    from mplint.inputs.config import ConfigError

    request = CheckRequest(**options)
    try:
        validate(request)
        resolver = resolver_for(request)
        if request.show_settings:
            from mplint.frontends.check_command import check_paths

            settings = resolver.for_path(check_paths(request)[0])
            click.echo(json.dumps(settings.describe(), indent=2, default=list))
            return
        if request.watch:
            from mplint.frontends.watch import watch

            code = watch(request, resolver)
        elif request.applies_fixes and not request.diff:
            # Let SIGTERM unwind like Ctrl-C: writes in flight finish or are undone.
            signal.signal(signal.SIGTERM, _terminate)
            code = execute(request, resolver)
        else:
            code = execute(request, resolver)
    except (UsageError, ConfigError) as exc:
        raise _fail(str(exc))
    except (KeyboardInterrupt, SystemExit) as exc:
        code = exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 130
        click.echo("mplint: interrupted; every file is either unchanged or fully fixed", err=True)
        raise click.exceptions.Exit(code)
    except Exception as exc:  # a bug in mplint itself: say so, exit 2
        import traceback

        click.echo(f"mplint: internal error: {type(exc).__name__}: {exc}", err=True)
        click.echo(traceback.format_exc(), err=True)
        raise click.exceptions.Exit(EXIT_ERROR)
    raise click.exceptions.Exit(code)


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule: code, name, severity, fix availability.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule(code, show_all, output_format) -> None:
    """Print the documentation of rule CODE (e.g. `mplint rule MP101`)."""
    from mplint.core.codes import RULES
    from mplint.catalogue.registry import rule_class

    if show_all:
        rows = []
        for rule_code in sorted(RULES):
            cls = rule_class(rule_code)
            rows.append({
                "code": rule_code, "name": cls.name, "severity": cls.severity.value,
                "fix": cls.fix_availability.value, "summary": cls.summary(),
            })
        if output_format == "json":
            click.echo(json.dumps(rows, indent=2))
        else:
            width = max((len(r["name"]) for r in rows), default=4)
            click.echo(f"{'code':6} {'name':{width}} {'severity':8} fix")
            for r in rows:
                click.echo(f"{r['code']:6} {r['name']:{width}} {r['severity']:8} {r['fix']}")
        return
    if not code:
        raise _fail("give a rule code (mplint rule MP101) or --all")
    code = code.upper()
    from mplint.catalogue.ruledocs import ENGINE_DOCS

    if code in ENGINE_DOCS:
        click.echo(ENGINE_DOCS[code])
        return
    if code not in RULES:
        raise _fail(f"unknown rule code {code} (see `mplint rule --all`)")
    cls = rule_class(code)
    if output_format == "json":
        click.echo(json.dumps({
            "code": code, "name": cls.name, "severity": cls.severity.value,
            "fix": cls.fix_availability.value, "documentation": cls.doc(),
        }, indent=2))
        return
    from mplint.catalogue.ruledocs import rule_text

    click.echo(rule_text(code))


@main.command("lsp")
def lsp_command() -> None:
    """Run the mplint language server on stdin/stdout (needs the `lsp` extra: pygls)."""
    try:
        from mplint.frontends.lsp import serve
    except ImportError as exc:
        raise _fail(f"the language server needs pygls: pip install 'mplint[lsp]' ({exc})")
    serve()


from mplint.verify.command import verify as _verify  # noqa: E402  (click only: no TensorFlow, no libcst)

main.add_command(_verify)

from mplint.frontends.server_command import server_command as _server  # noqa: E402  (socket and click only)

main.add_command(_server)

if __name__ == "__main__":  # pragma: no cover
    main()
