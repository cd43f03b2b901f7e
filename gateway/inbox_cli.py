"""``switchboard inbox dead`` and ``switchboard inbox retry ID``: the operator's view of dead letters.

Both work whether a gateway runs on the state directory or not: they read and write
the state database directly. A re-queued event is handled by the running gateway
within seconds, or by the next start: by one that runs its platform (the terminal's, by
``switchboard chat``), which the retry's line says, from the configuration it was given.

A letter's error is the exception's text as stored, which the gateway's log masks: it is
listed masked the same way (`gateway.logging.redact`, the configuration's secrets registered
as a start registers them), on one line, and so is the start of its text. A letter's chat and
event ids, and its error, are shown with their control characters made visible, never obeyed.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import TextIO

from gateway.config import Config, config_secrets
from gateway.config.platform_settings import PLATFORM_NAMES
from gateway.errors import StartupError
from gateway.host import STATE_DB
from gateway.logging import redact, redacted_cut, register_secret
from gateway.preflight import check_database
from gateway.state_lock import LOCK_FILE, held_here
from gateway.store import DeadLetter, GatewayStore
from platforms.local_screen import shown

PREVIEW_CHARS = 60
PROC_LOCKS = "/proc/locks"


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
            for secret in config_secrets(config):
                register_secret(secret)
            return _list(store.dead_letters.all(), out)
        assert letter_id is not None
        letter = store.dead_letters.retry(letter_id, store.inbox.requeue)
        if letter is None:
            print(f"switchboard: no dead letter {letter_id}; `switchboard inbox dead` lists them", file=err)
            return 1
        print(f"re-queued {_inert(letter.platform)} event {_inert(letter.event_id)}: {_when(config, letter.platform)}",
              file=out)
        return 0
    finally:
        store.close()


def _list(letters: list[DeadLetter], out: TextIO) -> int:
    if not letters:
        print("no dead letters", file=out)
        return 0
    for letter in letters:
        dead = datetime.datetime.fromtimestamp(letter.dead_at).isoformat(sep=" ", timespec="seconds")
        preview = redacted_cut(letter.text, PREVIEW_CHARS, _cut, read=2 * PREVIEW_CHARS)
        error = " ".join(redact(letter.error or "").split())
        print(f"{letter.id}  {dead}  {_inert(letter.platform)} chat {_inert(letter.chat_id)}"
              f"  event {_inert(letter.event_id)}  {letter.attempts} attempts  {_inert(error)}", file=out)
        print(f"    {preview!r}", file=out)
    print(f"`switchboard inbox retry ID` hands one back to the gateway ({len(letters)} dead letters)", file=out)
    return 0


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _inert(text: str) -> str:
    """``text`` on one line with its control characters shown, never obeyed (ESC as ␛, a line break as ␊:
    `platforms.local_screen.shown`): a chat or event id is the platform's, or a webhook caller's, to choose,
    and one holding escape codes could clear the operator's terminal, retitle it or write its clipboard;
    one holding a line break could pass for another letter's line."""
    return shown(text.translate(_ONE_LINE))


_ONE_LINE = {ord("\t"): "\u2409", ord("\n"): "\u240a"}
"""What `shown` leaves as it is, for a text of many lines."""


def _when(config: Config, platform: str) -> str:
    """Who takes a re-queued letter up, from the configuration the command was given: a gateway takes up
    only the events of the platforms it runs (`gateway.unconfigured`), and the terminal's only as
    ``switchboard chat``. Told "within seconds" of a platform not enabled, an operator waited for nothing.
    A platform the configuration cannot name (one a program embedding the gateway adds) is not judged."""
    if platform == "local":
        return ("only `switchboard chat` takes it up: within seconds if that is what runs on this state"
                " directory, else when it next starts" if _gateway_running(config)
                else "only `switchboard chat` takes it up, when it next starts")
    settings = getattr(config.platforms, platform, None) if platform in PLATFORM_NAMES else None
    if settings is not None and not settings.enabled:
        return (f"{platform} is not enabled in this configuration (platforms.{platform}.enabled): it waits for"
                " a gateway started with it enabled")
    return ("the running gateway takes it up within seconds" if _gateway_running(config)
            else "the gateway handles it when it next starts")


def _gateway_running(config: Config) -> bool:
    """Whether a process holds the state directory's lock, told without taking it: a probe that took
    it, were it only for a moment, would make a gateway starting in that moment refuse to (``state
    directory … is in use``). Only the wording of the answer depends on it.

    Where the kernel lists its locks (Linux's ``/proc/locks``), a lock on the lock file or on the
    directory (`gateway.state_lock`) says so; a gateway in another pid namespace (another container)
    is not listed there. Elsewhere, whether the pid the lock file names is alive."""
    state_dir = Path(config.state_dir).absolute()
    if held_here(state_dir):
        return True
    inodes = set()
    for path in (state_dir / LOCK_FILE, state_dir):
        try:
            inodes.add(os.stat(path).st_ino)
        except OSError:
            pass
    locked = _flocked_inodes()
    if locked is not None:
        return bool(inodes & locked)
    return _holder_alive(state_dir / LOCK_FILE)


def _flocked_inodes() -> set[int] | None:
    """The inodes of the files that hold an flock, from ``/proc/locks``; None where it cannot be read.
    By inode only: on an overlay file system the device a lock is listed under is not always the one
    ``stat`` gives, and another file with the same inode that is flocked too is not worth the trouble."""
    try:
        with open(PROC_LOCKS, encoding="ascii", errors="replace") as locks:
            lines = locks.readlines()
    except OSError:
        return None
    inodes = set()
    for line in lines:  # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2146690 0 EOF" ("1: -> FLOCK …" waits for one)
        fields = line.split()
        if "FLOCK" in fields and len(fields) > (at := fields.index("FLOCK") + 4):
            inode = fields[at].rpartition(":")[2]
            if inode.isdigit():
                inodes.add(int(inode))
    return inodes


def _holder_alive(lock_file: Path) -> bool:
    """Whether the process the lock file names (the last to take it) is alive: a stale pid, left by a
    gateway that died, may name another process since, so this is the fallback only."""
    try:
        text = lock_file.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return False
    if not text.isdigit() or int(text) in (0, os.getpid()):
        return False  # our own pid is a stale one: this process does not hold the lock (`held_here`)
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    except OSError:
        return False
    return True
