"""`mplint server`: a resident process that runs `mplint` commands without paying for
the imports each time (libcst's alone takes longer than checking one file).

    mplint server start [--idle-minutes 30]   # in the background, one per user and install
    mplint server status
    mplint server stop

(the commands: mplint.frontends.server_command; this module is the server loop, run as
`python -m mplint.frontends.server`.)

Each command the `mplint` entry point hands over (see `mplint.frontends.launch`) runs in a child
forked from the server: the child takes the client's working folder, environment, umask
and stdin/stdout/stderr (passed as file descriptors, so a terminal is still a terminal),
runs the ordinary command line and reports its exit code. The caches of a run (project
roots, pins, installed versions) live and die in its child. What the server keeps is
the project index of the projects its commands check (mplint.project.resident): before
it forks a command, it refreshes that index from the files on disk (by content hash),
so the command pays for the files edited since the last one, not for the project; it
warms the project it was started in before its first command. The server declines a
command (the client then runs it itself) once mplint's code has changed since it
started, and exits after `--idle-minutes` without a command.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time

from mplint.frontends.server_address import socket_path
from mplint.frontends.server_trust import SOCKET_UMASK, UntrustedServer, check_peer, folder_problem

REFRESH_SECONDS = 2.0  # how often an idle server looks for edited files (a stat per project file)
PRELOAD = ("mplint.frontends.cli", "mplint.frontends.check_command", "mplint.engine.runner", "mplint.engine.engine", "mplint.inputs.parsing",
           "mplint.inputs.code_scan", "mplint.catalogue.rule_evidence", "mplint.frontends.reporters.text", "mplint.frontends.reporters.json_format",
           "mplint.frontends.reporters.sarif", "mplint.frontends.reporters.github", "mplint.facts.target", "mplint.inputs.notebook",
           "mplint.project.index", "mplint.project.resident", "mplint.facts.summary", "mplint.facts.module")


def code_stamp() -> str:
    """Changes when any of mplint's (or its rules') modules do."""
    import mplint
    import mplint_rules

    stamps = []
    for package in (mplint, mplint_rules):
        for folder in package.__path__:
            for current, _, names in os.walk(folder):
                for name in sorted(names):
                    if name.endswith(".py"):
                        info = os.stat(os.path.join(current, name))
                        stamps.append(f"{name}:{info.st_size}:{info.st_mtime_ns}")
    return "|".join(sorted(stamps))


def preload() -> None:
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    from mplint.catalogue.registry import all_rules
    from mplint.inputs.source import decode_python  # noqa: F401

    all_rules()
    import packaging.requirements  # noqa: F401  (the Keras target's pins)
    import pathspec  # noqa: F401


def serve(idle_minutes: float) -> None:
    """The server loop (in the foreground)."""
    from mplint.inputs import run_record

    run_record.disable()  # its commands see what it kept warm: they may read run records, not write them
    preload()
    stamp = code_stamp()
    path = socket_path()
    folder = os.path.dirname(path)
    problem = folder_problem(folder)
    if problem:
        raise SystemExit(problem)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    mask = os.umask(SOCKET_UMASK)  # the socket is born 0600: no window with wider permissions
    try:
        listener.bind(path)
    finally:
        os.umask(mask)
    listener.listen(64)
    listener.settimeout(1.0)
    _warm_for({"argv": ["check"], "cwd": os.getcwd(), "env": dict(os.environ)})  # its first command finds it warm
    served = 0
    last = refreshed = time.monotonic()
    try:
        while time.monotonic() - last < idle_minutes * 60:
            _reap()
            try:
                connection, _ = listener.accept()
            except socket.timeout:
                if time.monotonic() - refreshed >= REFRESH_SECONDS:
                    _refresh_kept()
                    refreshed = time.monotonic()
                continue
            last = time.monotonic()
            with connection:
                connection.settimeout(10)
                try:
                    check_peer(connection, path)
                except UntrustedServer:
                    continue  # a client of another user: it gets nothing, not even an answer
                try:
                    request, fds = _receive(connection)
                except (OSError, ValueError) as exc:
                    _reply(connection, {"error": f"bad request: {exc}"})
                    continue
                try:
                    if request.get("stop"):
                        _reply(connection, {"stopped": True})
                        return
                    if request.get("status"):
                        _reply(connection, {"pid": os.getpid(), "served": served, "projects": _kept_projects()})
                        continue
                    if code_stamp() != stamp:
                        _reply(connection, {"declined": "mplint changed since the server started"})
                        return
                    served += 1
                    _warm_for(request)
                    if os.fork() == 0:
                        listener.close()
                        _child(connection, request, fds)  # never returns
                    _forget_trees()  # the child has what was parsed for it
                finally:
                    for fd in fds:
                        os.close(fd)
    finally:
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass


_last_context: dict = {}  # the folder and environment of the last command warmed for


def _warm_for(request: dict) -> None:
    """Bring the indexes of the projects a command names up to date here, before the
    command forks (mplint.project.resident), with the client's folder and environment.
    Never fatal: on any error the indexes are dropped and the command builds its own."""
    from mplint.project import resident

    argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env")
    if not isinstance(argv, list) or not isinstance(cwd, str) or not isinstance(env, dict):
        return
    paths = resident.command_paths(argv, cwd)
    if paths is not None:
        _last_context.update(cwd=cwd, env=env)
        _as_client(cwd, env, lambda: resident.warm(paths, cwd))


def _refresh_kept() -> None:
    """Idle: read the files edited since the last command into the kept indexes, so the
    next command does not wait for them."""
    from mplint.project import resident

    if _last_context:
        cwd, env = _last_context["cwd"], _last_context["env"]
        _as_client(cwd, env, lambda: resident.refresh_kept(cwd))


def _as_client(cwd: str, env: dict, work) -> None:
    """Run `work` with a client's environment (the server's own is restored after);
    an error drops every kept index and tree, never the server."""
    from mplint.project import resident

    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        work()
    except Exception:
        resident.forget()
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        try:
            os.chdir(saved_cwd)
        except OSError:
            os.chdir("/")


def _kept_projects() -> list[str]:
    from mplint.project import index as index_module

    return sorted(index.root for index in index_module._INDEXES.values() if index.current)


def _forget_trees() -> None:
    from mplint.analysis import parsed_once

    parsed_once.forget()


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    message, fds, _, _ = socket.recv_fds(connection, 1 << 16, 8)
    if len(message) < 8:
        raise ValueError("short message")
    size = int.from_bytes(message[:8], "big")
    body = bytearray(message[8:])
    while len(body) < size:
        chunk = connection.recv(size - len(body))
        if not chunk:
            raise ValueError("truncated request")
        body += chunk
    return json.loads(body), list(fds)


def _reply(connection: socket.socket, message: dict) -> None:
    try:
        connection.sendall(json.dumps(message).encode() + b"\n")
    except OSError:
        pass


def _reap() -> None:
    """Collect the children that have finished (each reports its exit code itself)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _child(connection: socket.socket, request: dict, fds: list[int]) -> None:
    """Run one command as the client would have, then exit."""
    code = 2
    try:
        os.setpgid(0, 0)  # the client forwards signals to this process alone
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(request.get("umask", 0o022))
        _standard_streams(request.get("streams") or [{}, {}, {}])
        connection.settimeout(None)
        _reply(connection, {"pid": os.getpid()})
        code = _run(request["argv"])
    except BaseException as exc:  # a failure of the server itself: say so on the client's stderr
        print(f"mplint server: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        _reply(connection, {"exit": code})
        os._exit(code)


def _standard_streams(settings: list[dict]) -> None:
    """sys.stdin/stdout/stderr for the client's descriptors, as Python would have made them."""
    import io

    made = []
    for fd, mode in ((0, "rb"), (1, "wb"), (2, "wb")):
        options = settings[fd] if fd < len(settings) else {}
        made.append(io.TextIOWrapper(
            os.fdopen(fd, mode, closefd=False), encoding=options.get("encoding") or "utf-8",
            errors=options.get("errors") or "strict", line_buffering=fd == 2 or (fd == 1 and os.isatty(fd)),
        ))
    sys.stdin, sys.stdout, sys.stderr = made
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = made


def _run(argv: list[str]) -> int:
    from mplint.frontends.cli import main

    sys.argv = ["mplint", *argv]
    try:
        main.main(args=argv, prog_name="mplint", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m mplint.frontends.server")
    parser.add_argument("--idle-minutes", type=float, default=30.0)
    serve(parser.parse_args().idle_minutes)
