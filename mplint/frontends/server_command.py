"""`mplint server start|status|stop`: the commands that start, ask and stop the resident
server (mplint.frontends.server). They send nothing to a socket that fails the checks of
mplint.frontends.server_trust."""

from __future__ import annotations

import json
import os
import sys
import time

import click

from mplint.frontends.server_address import server_folder, socket_path
from mplint.frontends.server_trust import UntrustedServer, connect_checked, folder_problem


def _ask(message: dict) -> dict | None:
    """Send a control message to the running server; its reply, or None if none runs.
    Nothing is sent to a server that fails the checks of `mplint.frontends.server_trust`."""
    path = socket_path()
    try:
        connected = connect_checked(path, timeout=5)
    except UntrustedServer as exc:
        click.echo(f"mplint: warning: not using the server socket {path}: {exc}", err=True)
        return None
    if connected is None:
        return None
    connection, _ = connected
    try:
        with connection:
            payload = json.dumps(message).encode()
            connection.sendall(len(payload).to_bytes(8, "big") + payload)
            reply = connection.makefile("rb").readline()
        return json.loads(reply) if reply else None
    except (OSError, ValueError):
        return None


@click.group("server")
def server_command() -> None:
    """Keep mplint loaded in the background, so each `mplint` command starts at once
    (pre-commit, editors, repeated runs)."""


@server_command.command("start")
@click.option("--idle-minutes", type=click.FloatRange(min=0.1), default=30.0, show_default=True,
              help="Exit after this long without a command.")
def start(idle_minutes: float) -> None:
    """Start the server in the background (if none is running for this mplint)."""
    import subprocess

    problem = folder_problem(server_folder())
    if problem:
        raise click.ClickException(problem)
    running = _ask({"status": True})
    if running is not None:
        click.echo(f"mplint server already running (pid {running['pid']})")
        return
    subprocess.Popen(
        [sys.executable, "-m", "mplint.frontends.server", "--idle-minutes", str(idle_minutes)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={k: v for k, v in os.environ.items() if k != "MPLINT_NO_SERVER"},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = _ask({"status": True})
        if status is not None:
            click.echo(f"mplint server started (pid {status['pid']}); `mplint server stop` stops it")
            return
        time.sleep(0.05)
    raise click.ClickException("the server did not start")


@server_command.command("status")
def status() -> None:
    """Say whether a server is running, how many commands it ran, and which projects it
    keeps warm."""
    reply = _ask({"status": True})
    if reply is None:
        click.echo("no mplint server running")
        raise click.exceptions.Exit(1)
    kept = reply.get("projects", [])
    click.echo(f"mplint server running (pid {reply['pid']}, {reply['served']} commands run, "
               f"{len(kept)} project{'s' if len(kept) != 1 else ''} kept warm{': ' if kept else ''}{', '.join(kept)})")


@server_command.command("stop")
def stop() -> None:
    """Stop the running server."""
    if _ask({"stop": True}) is None:
        click.echo("no mplint server running")
        return
    click.echo("mplint server stopped")
