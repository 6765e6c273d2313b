"""The verifier's probe: runs inside the child interpreter, next to the user's TensorFlow.

It depends only on the standard library, TensorFlow/Keras and numpy, never on mplint's
own dependencies, so any `--python` that has TensorFlow can run it. The parent starts
it either as `python -m mplint.verify.probe REQUEST EVENTS` or, when mplint is not
importable there, by loading this folder as a package from its path (runner.py).

REQUEST is a JSON file (what to verify, how); EVENTS is the JSON-lines file the probe
answers in (stages, one line per check, an error, "done"). stdout and stderr stay the
user's. Network connections (other than to this machine) are refused while it runs.
"""

from __future__ import annotations

import json
import os
import sys

_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "")


def block_network() -> None:
    """Refuse outgoing connections to other machines: the verifier uses synthetic data only."""
    import socket

    def allowed(sock, address) -> bool:
        if getattr(socket, "AF_UNIX", None) is not None and sock.family == socket.AF_UNIX:
            return True
        host = address[0] if isinstance(address, tuple) else address
        return str(host) in _LOCAL_HOSTS or str(host).startswith("127.")

    def guard(original):
        def connect(self, address, *args):
            if not allowed(self, address):
                raise OSError(f"mplint verify: network access is disabled while verifying (connect to {address!r})")
            return original(self, address, *args)

        return connect

    socket.socket.connect = guard(socket.socket.connect)
    socket.socket.connect_ex = guard(socket.socket.connect_ex)
    original_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in _LOCAL_HOSTS and host is not None and not name.startswith("127.") and not _is_ip(name):
            raise socket.gaierror(f"mplint verify: network access is disabled while verifying (lookup of {name!r})")
        return original_getaddrinfo(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def main(argv: list | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        sys.stderr.write("usage: python -m mplint.verify.probe REQUEST.json EVENTS.jsonl\n")
        return 2
    from .channel import Channel
    from .errors import ProbeError, describe

    channel = Channel(args[1])
    with open(args[0], encoding="utf-8") as handle:
        request = json.load(handle)
    channel.stage("starting")
    block_network()
    try:
        from .session import run

        run(request, channel)
    except ProbeError as exc:
        channel.error(exc.kind, exc.message, exc.traceback)
    except SystemExit as exc:
        channel.error("user-exit", f"user code called sys.exit({exc.code!r})")
    except BaseException as exc:  # a bug in the verifier itself: say so
        import traceback

        channel.error("internal", f"the verifier failed: {describe(exc)}", traceback.format_exc())
    channel.send("done")
    channel.close()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: user atexit hooks or threads must not hold the report back.
    os._exit(0)
