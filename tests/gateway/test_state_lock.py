"""One process per state directory, also when its lock file is deleted while a gateway holds it; a file
system that keeps no locks is named as such."""

from __future__ import annotations

import errno
import fcntl
import os
from types import SimpleNamespace

import pytest

from gateway import state_lock
from gateway.errors import StartupError
from gateway.state_lock import LOCK_FILE, StateLock
from tests.gateway.cli_process import TIMEOUT, Running, problem_lines, write_config

WEBHOOK = {"server": {"port": 0},
           "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": "lock-secret-0"}}}}}


def test_a_deleted_lock_file_does_not_let_a_second_gateway_in(tmp_path):
    # `rm switchboard.lock`, the habit with a lock file that seems stale: the running gateway holds
    # the lock of a file no one can open any more, and a second one would lock a new file.
    config = write_config(tmp_path / "c.yaml", {**WEBHOOK, "state_dir": str(tmp_path / "state")})
    with Running(tmp_path, "--config", str(config)) as first:
        first.started()
        (tmp_path / "state" / LOCK_FILE).unlink()
        with Running(tmp_path, "--config", str(config)) as second:
            # A second gateway that started would run on: what it says first decides.
            assert second.wait_for("is in use by|gateway running").group(0) == "is in use by"
            assert second.proc.wait(TIMEOUT) == 1
        assert "Traceback" not in "\n".join(second.lines)
        assert problem_lines("\n".join(second.lines)) == [
            f"switchboard: state directory {tmp_path / 'state'} is in use by another process: stop that gateway"
            " first, or give this one its own state_dir (or $SWITCHBOARD_STATE_DIR)"]
        assert first.proc.poll() is None
    assert first.proc.returncode == 0
    with Running(tmp_path, "--config", str(config)) as again:  # both locks went with the process
        again.started()


def test_the_directory_lock_goes_with_release(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    first = StateLock.acquire(state)
    (state / LOCK_FILE).unlink()
    with pytest.raises(StartupError, match=f"state directory {state} is in use by another process"):
        StateLock.acquire(state)
    first.release()
    StateLock.acquire(state).release()


def test_a_directory_others_may_read_is_not_locked_where_they_could_hold_its_lock(tmp_path):
    # As systemd's StateDirectory= makes it (0755): another user could open it and keep its lock.
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o755)
    fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        StateLock.acquire(state).release()
    finally:
        os.close(fd)


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP])
def test_a_file_system_that_keeps_no_locks_is_named_not_blamed_on_write_access(tmp_path, monkeypatch, code):
    # NFS mounted without its lock service answers ENOLCK; some FUSE and SMB mounts refuse flock outright.
    def refuse(fd: int, operation: int) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(state_lock, "fcntl", SimpleNamespace(flock=refuse, LOCK_EX=fcntl.LOCK_EX,
                                                             LOCK_NB=fcntl.LOCK_NB))
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with pytest.raises(StartupError) as refused:
        StateLock.acquire(state)
    assert str(refused.value) == (
        f"state directory {state} cannot be locked ({os.strerror(code)}): its file system keeps no locks (a network"
        " file system?); point state_dir (or $SWITCHBOARD_STATE_DIR) at a local disk, which SQLite's write-ahead"
        " log needs as well")


def test_a_holder_on_another_host_is_named_with_its_host(tmp_path, monkeypatch):
    # A gateway in another container (or on another host sharing the volume): "pid 1" alone sent its operator
    # looking for a process on this one.
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    first = StateLock.acquire(state)
    try:
        assert (state / LOCK_FILE).read_text().split() == [str(os.getpid()), state_lock.socket.gethostname()]
        with pytest.raises(StartupError, match=f"is in use by pid {os.getpid()}: stop that gateway first"):
            StateLock.acquire(state)  # on this host: as ever
        monkeypatch.setattr(state_lock.socket, "gethostname", lambda: "web-2")
        with pytest.raises(StartupError, match=f"is in use by pid {os.getpid()} on host "):
            StateLock.acquire(state)
    finally:
        first.release()


def test_an_older_gateways_lock_file_names_its_pid_alone():
    assert state_lock.holder_of("4711\n") == (4711, None)
    assert state_lock.holder_of("4711 web-2\n") == (4711, "web-2")
    assert state_lock.holder_of("") == (None, None)
