"""``switchboard inbox dead`` and ``switchboard inbox retry ID``: the operator's view of dead letters.

Both work whether a gateway runs on the state directory or not: they read and write
the state database directly. A re-queued event is handled by the running gateway
within seconds, or by the next start.
"""

from __future__ import annotations

import datetime
import fcntl
import os
from pathlib import Path
from typing import TextIO

from gateway.config import Config
from gateway.errors import StartupError
from gateway.host import STATE_DB
from gateway.preflight import check_database
from gateway.state_lock import LOCK_FILE
from gateway.store import DeadLetter, GatewayStore

PREVIEW_CHARS = 60


def inbox_command(config: Config, command: str, letter_id: int | None, out: TextIO, err: TextIO) -> int:
    path = Path(config.state_dir) / STATE_DB
    try:
        # As a start checks it: opened as it is, an empty database beside a -wal would be given a fresh
        # schema and the -wal, the last commits and dead letters with them, deleted.
        check_database(path)
    except StartupError as exc:
        print(f"switchboard: {exc}", file=err)
        return 1
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        print(f"switchboard: no state database at {path}: nothing has been received yet", file=err)
        return 1
    store = GatewayStore(path)
    try:
        if command == "dead":
            return _list(store.dead_letters.all(), out)
        assert letter_id is not None
        letter = store.dead_letters.retry(letter_id, store.inbox.requeue)
        if letter is None:
            print(f"switchboard: no dead letter {letter_id}; `switchboard inbox dead` lists them", file=err)
            return 1
        when = ("the running gateway takes it up within seconds" if _gateway_running(config)
                else "the gateway handles it when it next starts")
        print(f"re-queued {letter.platform} event {letter.event_id}: {when}", file=out)
        return 0
    finally:
        store.close()


def _list(letters: list[DeadLetter], out: TextIO) -> int:
    if not letters:
        print("no dead letters", file=out)
        return 0
    for letter in letters:
        dead = datetime.datetime.fromtimestamp(letter.dead_at).isoformat(sep=" ", timespec="seconds")
        text = " ".join(letter.text.split())
        preview = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
        print(f"{letter.id}  {dead}  {letter.platform} chat {letter.chat_id}  event {letter.event_id}"
              f"  {letter.attempts} attempts  {letter.error or ''}", file=out)
        print(f"    {preview!r}", file=out)
    print(f"`switchboard inbox retry ID` hands one back to the gateway ({len(letters)} dead letters)", file=out)
    return 0


def _gateway_running(config: Config) -> bool:
    """Whether another process holds the state directory's lock (without keeping it)."""
    try:
        fd = os.open(Path(config.state_dir) / LOCK_FILE, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops a lock we took
    return False
