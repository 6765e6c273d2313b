"""The client sends nothing to a socket it cannot prove is this user's own server.

A listener is planted where the client looks for its server: in a folder open to others,
in a folder or socket of another uid, or behind a process of another uid. Each time the
command must run in the client's own process (its real findings and exit code), print one
warning naming the socket, and the listener must receive nothing: not the environment with
its secret, not the command line, not the terminal."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap

import pytest

from mplint.frontends import server_trust
from tests.conftest import MPLINT_EXE, write

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX") or not hasattr(os, "fork"),
                                reason="Unix sockets")

MIXED = 'import tensorflow as tf\ntf.keras.mixed_precision.set_global_policy("float16")\ntf.keras.Model().fit()\n'
# the sample's MP103 is a medium-precision rule (bench/rule_precision.py): extended tier
EXTENDED = "extended = true\n"
NOBODY = 65534
as_root = pytest.mark.skipif(os.getuid() != 0, reason="needs root to own files or run as another uid")

# A fake server: accepts, records every byte and descriptor it is sent, and answers as a
# server would, with a pid to signal and a green exit code.
LISTENER = textwrap.dedent("""
    import json, os, socket, sys
    path, record, run_as = sys.argv[1], sys.argv[2], int(sys.argv[3])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    log = open(record, "ab", buffering=0)   # opened before giving up root
    if run_as >= 0:
        os.setgid(run_as); os.setuid(run_as)   # bound as root, listening as another user
    listener.listen(8)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        received = b""
        fds = []
        connection.settimeout(3)
        try:
            while True:
                data, got, _, _ = socket.recv_fds(connection, 1 << 16, 8)
                fds += got
                if not data:
                    break
                received += data
                connection.sendall(json.dumps({"pid": 1}).encode() + b"\\n" + json.dumps({"exit": 0}).encode() + b"\\n")
        except OSError:
            pass
        log.write(b"connection bytes=%d fds=%d\\n" % (len(received), len(fds)))
        log.write(received)
""")


def _socket_name(env: dict) -> str:
    """The socket path the installed client computes for this environment."""
    proc = subprocess.run([sys.executable, "-c", "from mplint.frontends.launch import socket_path; print(socket_path())"],
                          env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.fixture
def plant(tmp_path):
    """plant(folder_mode, folder_uid, socket_uid, listener_uid) -> (env, socket path, record file)."""
    started = []

    def _plant(folder_mode=0o700, folder_uid=None, socket_uid=None, listener_uid=-1):
        folder = tmp_path / "server"
        folder.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("MPLINT_NO_SERVER", "NO_COLOR", "FORCE_COLOR")}
        env["MPLINT_SERVER_DIR"] = str(folder)
        env["SECRET_TOKEN"] = "s3cr3t-value-that-must-not-leak"
        path = _socket_name(env)
        record = tmp_path / "received.log"
        script = tmp_path / "listener.py"
        script.write_text(LISTENER)
        proc = subprocess.Popen([sys.executable, str(script), path, str(record), str(listener_uid)],
                                stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout.readline().strip() == "ready", "the listener did not start"
        if socket_uid is not None:
            os.chown(path, socket_uid, socket_uid)
        if folder_uid is not None:
            os.chown(folder, folder_uid, folder_uid)
        os.chmod(folder, folder_mode)
        return env, path, record

    yield _plant
    for proc in started:
        proc.kill()
        proc.wait()


def _run_check(env, cwd):
    write(cwd / "a.py", MIXED)
    write(cwd / "mplint.toml", EXTENDED)
    return subprocess.run([str(MPLINT_EXE), "check", "a.py"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def _assert_ran_here_and_sent_nothing(proc, path, record):
    assert proc.returncode == 1 and "a.py:2:1: MP103" in proc.stdout, (proc.stdout, proc.stderr)
    warnings = [line for line in proc.stderr.splitlines() if "warning: not using the server socket" in line]
    assert len(warnings) == 1 and path in warnings[0], proc.stderr
    received = record.read_bytes() if record.exists() else b""
    assert b"s3cr3t" not in received
    assert b"bytes=0 fds=0" in received or received == b"", received


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o707, 0o750])
def test_a_folder_open_to_others_is_not_trusted(plant, tmp_path, mode):
    env, path, record = plant(folder_mode=mode)
    proc = _run_check(env, tmp_path)
    _assert_ran_here_and_sent_nothing(proc, path, record)
    assert "open to other users" in proc.stderr


@as_root
@pytest.mark.parametrize("planted, says", [
    ({"folder_uid": NOBODY}, "owned by uid {nobody}"),
    ({"socket_uid": NOBODY}, "{path}: owned by uid {nobody}"),
    # folder and socket file are this user's, but the process behind them is not
    ({"listener_uid": NOBODY}, "runs as uid {nobody}"),
], ids=["foreign folder", "foreign socket", "foreign listener"])
def test_what_another_user_owns_is_not_trusted(plant, tmp_path, planted, says):
    env, path, record = plant(**planted)
    proc = _run_check(env, tmp_path)
    _assert_ran_here_and_sent_nothing(proc, path, record)
    assert says.format(nobody=NOBODY, path=path) in proc.stderr
    if "listener_uid" in planted:
        assert record.read_bytes().startswith(b"connection bytes=0 fds=0"), "it connected, then sent nothing"


def test_a_folder_that_is_a_link_is_not_trusted(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(server_trust.UntrustedServer, match="not a folder"):
        server_trust.check_folder(str(link))


def test_server_control_commands_send_nothing_either(plant, tmp_path):
    env, path, record = plant(folder_mode=0o777)
    proc = subprocess.run([str(MPLINT_EXE), "server", "stop"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert path in proc.stderr and "not using the server socket" in proc.stderr
    assert not record.exists() or b"s3cr3t" not in record.read_bytes()
    assert not record.exists() or b"stop" not in record.read_bytes()


def test_the_server_refuses_a_folder_open_to_others(tmp_path):
    folder = tmp_path / "server"
    folder.mkdir()
    os.chmod(folder, 0o777)
    env = dict(os.environ, MPLINT_SERVER_DIR=str(folder))
    proc = subprocess.run([str(MPLINT_EXE), "server", "start"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "refusing" in proc.stderr and str(folder) in proc.stderr
    assert os.listdir(folder) == []


def test_a_real_server_is_private_and_still_serves(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MPLINT_NO_SERVER", "NO_COLOR", "FORCE_COLOR")}
    env["MPLINT_SERVER_DIR"] = str(tmp_path / "server")
    start = subprocess.run([str(MPLINT_EXE), "server", "start", "--idle-minutes", "2"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    try:
        assert start.returncode == 0, start.stderr
        path = _socket_name(env)
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.lstat(os.path.dirname(path)).st_mode) == 0o700
        proc = _run_check(env, tmp_path)
        assert proc.returncode == 1 and "MP103" in proc.stdout and "warning" not in proc.stderr, proc.stderr
        status = subprocess.run([str(MPLINT_EXE), "server", "status"], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=60)
        assert "1 commands run" in status.stdout, status.stdout
    finally:
        subprocess.run([str(MPLINT_EXE), "server", "stop"], cwd=tmp_path, env=env, capture_output=True, timeout=60)


def test_signals_go_only_to_a_child_of_the_verified_server():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert server_trust.is_child_of(child.pid, os.getpid())
        assert not server_trust.is_child_of(child.pid, os.getppid()), "a child of some other process"
        for forged in (0, -1, 1, os.getpid(), True, "12"):
            assert not server_trust.is_child_of(forged, os.getpid()), forged
    finally:
        child.kill()
        child.wait()


def test_peer_credentials_name_this_process():
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        pid, uid = server_trust.peer_credentials(left)
        assert uid == os.getuid()
        assert pid in (None, os.getpid())
