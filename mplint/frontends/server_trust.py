"""Whom the `mplint` client and `mplint server` trust: the checks made before anything
crosses the server's socket.

The client hands the server its environment (tokens, keys), its working folder, its
command line and its terminal, and takes back an exit code and a pid to signal. The
socket's path is predictable, and where `XDG_RUNTIME_DIR` is unset its folder lies in the
world-writable temp folder, so another local user can create the folder first and listen
there. Nothing is sent until all of these hold:

- the folder is a real folder (not a link), owned by this uid, with no group or other
  permission bits;
- the socket is a socket (not a link), owned by this uid;
- once connected, the process listening runs as this uid (`SO_PEERCRED` on Linux,
  `LOCAL_PEERCRED` on macOS and the BSDs). Where the platform cannot say, the peer is not
  trusted.

The server makes the same folder checks before it binds, binds under a umask that gives
the socket no group or other bits from the start, and answers only peers of its own uid.

This module imports only the standard library's light modules: the client runs it on
every command before deciding whether to import anything heavy.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
import sys

SOCKET_UMASK = 0o177  # the socket file is created 0600: no moment with wider permissions


class UntrustedServer(Exception):
    """Something at the server's path failed a check; the message names the path and why."""


def _own(path: str, is_kind, kind: str) -> os.stat_result:
    """The `lstat` of `path`, which must be a `kind` (not a link) owned by this uid."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise UntrustedServer(f"{path}: cannot be checked ({exc.strerror})") from None
    if not is_kind(info.st_mode):
        raise UntrustedServer(f"{path}: not a {kind}")
    if info.st_uid != os.getuid():
        raise UntrustedServer(f"{path}: owned by uid {info.st_uid}, not by this user (uid {os.getuid()})")
    return info


def check_folder(folder: str) -> None:
    """Raise UntrustedServer unless `folder` is a private folder of this uid."""
    info = _own(folder, stat.S_ISDIR, "folder (a link or a file)")
    if info.st_mode & 0o077:
        raise UntrustedServer(f"{folder}: open to other users (mode {stat.S_IMODE(info.st_mode):04o}, want 0700)")


def check_socket_file(path: str) -> None:
    """Raise UntrustedServer unless `path` is a socket owned by this uid."""
    _own(path, stat.S_ISSOCK, "socket")


def peer_credentials(connection: socket.socket) -> tuple[int | None, int | None]:
    """(pid, uid) of the process at the other end of a connected Unix socket; None where
    the platform does not say."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid_t pid; uid_t uid; gid_t gid;}
        raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _ = struct.unpack("3i", raw)
        return pid, uid
    if sys.platform == "darwin" or "bsd" in sys.platform:
        # LOCAL_PEERCRED (SOL_LOCAL 0, option 1): struct xucred {u_int cr_version; uid_t cr_uid; short
        # cr_ngroups; gid_t cr_groups[16];}; LOCAL_PEERPID (2) is macOS only.
        raw = connection.getsockopt(0, 1, struct.calcsize("IIh16I"))
        _, uid = struct.unpack_from("II", raw)
        pid = None
        if sys.platform == "darwin":
            try:
                pid = struct.unpack("i", connection.getsockopt(0, 2, 4))[0]
            except OSError:
                pid = None
        return pid, uid
    return None, None


def check_peer(connection: socket.socket, path: str) -> int | None:
    """Raise UntrustedServer unless the peer runs as this uid; its pid where known."""
    try:
        pid, uid = peer_credentials(connection)
    except OSError as exc:
        raise UntrustedServer(f"{path}: the peer's user cannot be read ({exc.strerror})") from None
    if uid is None:
        raise UntrustedServer(f"{path}: this platform cannot tell who listens there")
    if uid != os.getuid():
        raise UntrustedServer(f"{path}: the process listening runs as uid {uid}, not as this user (uid {os.getuid()})")
    return pid


def connect_checked(path: str, timeout: float | None = None) -> tuple[socket.socket, int | None] | None:
    """A connection to the server at `path` whose folder, socket and peer passed every
    check, with the server's pid where the platform gives it; None where nothing listens
    (no socket, or a stale one). Raises UntrustedServer where a check fails: the caller
    must then send nothing."""
    if not os.path.lexists(path):
        return None
    check_folder(os.path.dirname(path) or ".")
    check_socket_file(path)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if timeout is not None:
            connection.settimeout(timeout)
        connection.connect(path)
    except OSError:
        connection.close()
        return None
    try:
        pid = check_peer(connection, path)
    except UntrustedServer:
        connection.close()
        raise
    return connection, pid


def is_child_of(pid: int, parent: int | None) -> bool:
    """Whether `pid` is a process of this uid started by `parent` (the verified server):
    the only process the client may signal. Where the system cannot say (no /proc), only
    the uid is checked, through the process group the server's child leads."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1 or pid == os.getpid():
        return False
    proc = f"/proc/{pid}"
    if os.path.isdir("/proc/self"):
        try:
            if os.stat(proc).st_uid != os.getuid():
                return False
            with open(f"{proc}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            return parent is not None and int(fields[1]) == parent
        except (OSError, IndexError, ValueError):
            return False
    try:
        return os.getpgid(pid) == pid  # the server's child leads its own group
    except OSError:
        return False


def folder_problem(folder: str) -> str | None:
    """Create the server's folder 0700, or accept an existing one only if it is this user's
    and closed to others; else what is wrong with it."""
    try:
        os.makedirs(folder, mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return f"mplint server: cannot create {folder}: {exc.strerror}"
    try:
        check_folder(folder)
    except UntrustedServer as exc:
        return f"mplint server: refusing {exc}; remove it or set MPLINT_SERVER_DIR"
    return None
