"""`switchboard inbox retry` beside a gateway: it tells whether one runs without taking the state
directory's lock, which a gateway starting at that moment needs."""

from __future__ import annotations

import contextlib
import fcntl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway import inbox_cli, state_lock
from gateway.cli import main
from gateway.errors import StartupError
from gateway.host import STATE_DB
from gateway.store import GatewayStore
from platforms.base import Inbound


def a_dead_letter(state) -> None:
    state.mkdir(mode=0o700, exist_ok=True)
    store = GatewayStore(state / STATE_DB)
    try:
        inbound = Inbound(platform="chat", chat_id="c1", thread_id=None, user_id="u1", user_name=None,
                          text="please answer", event_id="ev-1")
        store.inbox.accept(inbound, "turn-1")
        store.inbox.set_aside("chat", "ev-1")
    finally:
        store.close()


def test_inbox_retry_never_keeps_a_gateway_starting_meanwhile_from_starting(tmp_path, monkeypatch, capsys):
    state = tmp_path / "state"
    a_dead_letter(state)
    state_lock.StateLock.acquire(state).release()  # the lock file every gateway that ran here leaves
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n")
    starts: list[str] = []
    starting = threading.local()
    real_flock = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        real_flock(fd, operation)
        if operation & fcntl.LOCK_EX and not getattr(starting, "now", False):
            starting.now = True  # a gateway starts at this very moment: its own flock is not one to start at
            try:
                state_lock.StateLock.acquire(state).release()
                starts.append("started")
            except StartupError as exc:
                starts.append(str(exc))
            finally:
                starting.now = False

    monkeypatch.setattr(fcntl, "flock", flock)
    assert main(["--config", str(config_file), "inbox", "retry", "1"]) == 0
    assert all(start == "started" for start in starts), starts  # it was "state directory … is in use by …"
    assert "re-queued chat event ev-1: the gateway handles it when it next starts" in capsys.readouterr().out


@contextlib.contextmanager
def another_process_holding(state) -> Iterator[None]:
    """Another process holding the state directory's lock, as its `switchboard run` does."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(state)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline() == "holding\n"
        yield
    finally:
        holder.communicate("", timeout=10)


ROOT = Path(__file__).resolve().parents[2]
HOLDER = """
import sys
from pathlib import Path
from gateway.state_lock import StateLock
lock = StateLock.acquire(Path(sys.argv[1]))
print("holding", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("proc_locks", [True, False], ids=["proc_locks", "pid_only"])
def test_inbox_retry_tells_whether_a_gateway_holds_the_state_directory(tmp_path, monkeypatch, capsys, proc_locks):
    if not proc_locks:  # as on a system without /proc/locks (macOS): the lock file's pid is asked instead
        monkeypatch.setattr(inbox_cli, "PROC_LOCKS", str(tmp_path / "no-such-file"))
    state = tmp_path / "state"
    a_dead_letter(state)
    config_file = tmp_path / "switchboard.yaml"
    config_file.write_text(f"state_dir: {state}\n")
    with another_process_holding(state):
        assert main(["--config", str(config_file), "inbox", "retry", "1"]) == 0
    assert "ev-1: the running gateway takes it up within seconds" in capsys.readouterr().out
    a_dead_letter(state)  # again, once the gateway has gone: its pid stays in the lock file
    assert main(["--config", str(config_file), "inbox", "retry", "2"]) == 0
    assert "ev-1: the gateway handles it when it next starts" in capsys.readouterr().out
