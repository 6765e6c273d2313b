"""The `mplint` command's entry point: hand the run to a resident `mplint server` if one is
running, else run it here.

Importing the parser (libcst) takes longer than checking one file; a pre-commit run or an
editor's save pays it every time. `mplint server start` keeps a process with everything
imported; this entry point, importing nothing heavy, passes it the command line, the
working folder, the environment and its own stdin/stdout/stderr, and exits with the
server's exit code (Ctrl-C is forwarded to the server's child). It sends nothing before
the server's folder, socket and process are shown to be this user's own
(`mplint.frontends.server_trust`). Without a server (or with `MPLINT_NO_SERVER`
set, or for `mplint server ...` itself) the command runs in this process as always.
"""

from __future__ import annotations

import os
import sys

from mplint.frontends.server_address import socket_path


def main() -> None:
    argv = sys.argv[1:]
    if not os.environ.get("MPLINT_NO_SERVER") and argv[:1] != ["server"]:
        code = run_in_server(argv)
        if code is not None:
            sys.exit(code)
    from mplint.frontends.cli import main as cli_main

    cli_main()


def run_in_server(argv: list[str]) -> int | None:
    """Run `mplint argv` in the server; its exit code, or None if no server took it.

    Nothing is sent to a server whose folder, socket or process fails the checks of
    `mplint.frontends.server_trust` (one warning, then the command runs here)."""
    from mplint.frontends.server_trust import UntrustedServer, connect_checked, is_child_of

    path = socket_path()
    try:
        connected = connect_checked(path)
    except UntrustedServer as exc:
        print(f"mplint: warning: not using the server socket {path}: {exc}; running the command here "
              "(MPLINT_NO_SERVER=1 skips the server)", file=sys.stderr)
        return None
    if connected is None:
        return None
    connection, server_pid = connected
    import json
    import signal
    import socket

    request = json.dumps({
        "argv": argv,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": _umask(),
        "streams": [_stream_settings(s) for s in (sys.stdin, sys.stdout, sys.stderr)],
    }).encode()
    with connection:
        try:
            socket.send_fds(connection, [len(request).to_bytes(8, "big") + request], [0, 1, 2])
            replies = connection.makefile("rb")
            first = json.loads(replies.readline() or b"{}")
        except (OSError, ValueError):
            return None
        pid = first.get("pid") if isinstance(first, dict) else None
        if not isinstance(pid, int):
            return None  # the server declined (it is stopping, or mplint changed since it started)
        if is_child_of(pid, server_pid):  # signals go to the server's own child, never elsewhere
            forward = lambda signum, frame: _kill(pid, signum)  # noqa: E731
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, forward)
        try:
            last = json.loads(replies.readline() or b"{}")
        except (OSError, ValueError):
            last = {}
    code = last.get("exit") if isinstance(last, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) and 0 <= code <= 255 else 2


def _stream_settings(stream) -> dict:
    return {"encoding": getattr(stream, "encoding", None) or "utf-8", "errors": getattr(stream, "errors", None) or "strict"}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


if __name__ == "__main__":  # pragma: no cover
    main()
