"""`mplint check --watch`: check, then check again whenever a watched file changes.

File events come from watchfiles (the `watch` extra), not polling. Python files,
notebooks and the files that decide settings (pyproject.toml, mplint.toml, setup.cfg,
requirements*.txt) are watched under the given paths; the configuration is read again
for each run. Each run prints its report as `mplint check` would (the screen is cleared
first on a terminal). Ctrl-C stops watching.
"""

from __future__ import annotations

import os
import time

import click

from mplint.facts.target import is_requirements_file
from mplint.frontends.check_command import CheckRequest, check_paths, execute, resolver_for

_SETTINGS_FILES = ("pyproject.toml", "mplint.toml", "setup.cfg")


def _relevant(path: str) -> bool:
    name = os.path.basename(path)
    return (name.endswith((".py", ".ipynb")) or name in _SETTINGS_FILES
            or is_requirements_file(name))


def _note(message: str) -> None:
    click.echo(f"[{time.strftime('%H:%M:%S')}] {message}", err=True)


def watch(request: CheckRequest, resolver) -> int:
    """Runs until interrupted; returns the exit code for a usage problem only."""
    try:
        import watchfiles
    except ImportError:
        click.echo("mplint: error: --watch needs watchfiles: pip install 'mplint[watch]'", err=True)
        return 2
    paths = check_paths(request)
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        click.echo(f"mplint: error: {missing[0]}: no such file or directory", err=True)
        return 2
    _note("Starting linter in watch mode...")
    execute(request, resolver)
    watched = [os.path.abspath(p) for p in paths]
    for changes in watchfiles.watch(*watched, watch_filter=lambda _change, path: _relevant(path)):
        click.clear()
        _note("File change detected...")
        execute(request, resolver_for(request))
    return 0
