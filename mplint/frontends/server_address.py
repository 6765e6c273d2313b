"""Where the resident server listens: one socket per user and mplint install.

Imported by the `mplint` entry point on every command (mplint.frontends.launch), by the server
(mplint.frontends.server) and by `mplint server start|status|stop` (mplint.frontends.server_command): only
the standard library's light modules here.
"""

from __future__ import annotations

import os
import sys


def socket_path() -> str:
    """Where the server for this Python environment and this mplint listens (one per user)."""
    import zlib

    here = os.path.dirname(os.path.abspath(__file__))
    from mplint import __version__

    python = os.path.realpath(sys.executable)
    name = zlib.crc32(f"{python}\0{sys.prefix}\0{here}\0{__version__}".encode())
    return os.path.join(server_folder(), f"{name:08x}.sock")


def server_folder() -> str:
    folder = os.environ.get("MPLINT_SERVER_DIR")
    if folder:
        return folder
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "mplint")
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"mplint-{os.getuid()}")
