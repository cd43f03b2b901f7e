"""``switchboard inbox dead``, ``inbox retry ID`` and ``inbox dismiss ID``: the operator's view of dead letters.

They work whether a gateway runs on the state directory or not: they read and write
the state database directly. A re-queued event is handled by the running gateway
within seconds, or by the next start: by one that runs its platform (the terminal's, by
``switchboard chat``), which the retry's line says, from the configuration it was given.
A dismissed letter is forgotten as the console's Dismiss forgets it (`DeadLetters.dismiss`):
its event stays ``dead`` in the inbox, so a redelivery is still a duplicate.

The listing only reads: it opens the database read-only and never migrates it, so a newer
switchboard installed beside an older gateway still running does not upgrade that gateway's
database under it, and a backup's read-only copy can be listed. A retry or a dismissal writes,
and upgrades an older version's database as a start would, but not one a gateway runs on.

A letter's error is the exception's text as stored, which the gateway's log masks: it is
listed masked the same way (`gateway.logging.redact`, the configuration's secrets registered
as a start registers them), on one line, and so is the start of its text. A letter's chat and
event ids, and its error, are shown with their control characters made visible, never obeyed. One that
no longer reads back (a hand edit, a damaged write: `DeadLetter.damaged`) is listed by its id, never what it
holds, and can be dismissed but not handed back.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
import sqlite3
from pathlib import Path
from typing import TextIO

from gateway.config import Config, config_secrets
from gateway.config.platform_settings import PLATFORM_NAMES
from gateway.errors import StartupError
from gateway.host import STATE_DB
from gateway.logging import redact, redacted_cut, register_secret
from gateway.preflight import check_database, check_state_dir_reachable, open_read_only
from gateway.state_lock import LOCK_FILE, held_here, holder_of
from gateway.store import (
    SCHEMA_VERSION,
    DeadLetter,
    DeadLetters,
    GatewayStore,
    StoreError,
    schema_too_new,
    schema_version,
)
from gateway.store.dead_letters import DamagedLetter
from platforms.local_screen import shown

PREVIEW_CHARS = 60
PROC_LOCKS = "/proc/locks"


def reads_key(command: str, key: str) -> bool:
    """Whether `switchboard inbox` ``command`` reads the setting at the dotted ``key`` (a ``--set``'s): each reads
    ``state_dir``, and ``retry`` whether the letter's platform is enabled, to say who takes it up (`_when`). The
    secrets only mask what ``dead`` lists, which, as for a worker (`gateway.config.worker_reads`), is no reading."""
    section, *rest = key.split(".")
    return section == "state_dir" or command == "retry" and section == "platforms" and rest[1:] in ([], ["enabled"])


def not_read(command: str) -> str:
    """The warning about a ``--set`` of a key `reads_key` says ``command`` does not read, after the key."""
    reads = "state_dir and platforms.<name>.enabled" if command == "retry" else "state_dir"
    return f"switchboard inbox {command} does not read this setting, so it changes nothing here; it reads {reads} alone"


def inbox_command(config: Config, command: str, letter_id: int | None, out: TextIO, err: TextIO) -> int:
    """Raises `StoreError` for a database this version cannot read (a newer one's, or an older one's
    it cannot list or may not upgrade) and SQLite's errors as they come; `gateway.cli` words them."""
    path = Path(config.state_dir) / STATE_DB
    try:
        # As a start checks it: opened as it is, an empty database beside a -wal would be given a fresh
        # schema and the -wal, the last commits and dead letters with them, deleted.
        check_state_dir_reachable(path.parent)
        check_database(path, writable=command != "dead")
    except StartupError as exc:
        print(f"switchboard: {exc}", file=err)
        return 1
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        print(f"switchboard: no state database at {path}: nothing has been received yet", file=err)
        return 1
    if command == "dead":
        for secret in config_secrets(config):
            register_secret(secret)
        return _list(_dead_letters(path), out)
    with contextlib.closing(open_read_only(path)) as conn:
        version = _schema_version(conn, path)
    if version is not None and version > SCHEMA_VERSION:
        raise schema_too_new(path, version)
    if version is not None and version < SCHEMA_VERSION and _gateway_running(config):
        # Upgraded under it, the gateway would go on writing the shapes it knows into tables of others.
        raise StoreError(f"{_older(path, version)}, and a gateway runs on it: stop it and start this version's"
                         " gateway once to upgrade the database, or use the switchboard that matches the running one")
    store = GatewayStore(path)
    try:
        assert letter_id is not None
        if command == "dismiss":
            letter = store.dead_letters.dismiss(letter_id)
        else:
            try:
                letter = store.dead_letters.retry(letter_id, store.inbox.requeue)
            except DamagedLetter as exc:
                print(f"switchboard: {exc}: `switchboard inbox dismiss {letter_id}` drops it", file=err)
                return 1
        if letter is None:
            print(f"switchboard: no dead letter {letter_id}; `switchboard inbox dead` lists them", file=err)
            return 1
        event = (f"dead letter {letter_id}" if letter.damaged
                 else f"{_inert(letter.platform)} event {_inert(letter.event_id)}")
        if command == "dismiss":
            print(f"dismissed {event}: it will not be handled", file=out)
        else:
            print(f"re-queued {event}: {_when(config, letter.platform)}", file=out)
        return 0
    finally:
        store.close()


def _dead_letters(path: Path) -> list[DeadLetter]:
    """Every dead letter, read on a connection that cannot write: a newer version's database is refused as
    a start refuses it; an older one's is read as it is when its letters are where this version keeps
    them, else refused, never upgraded."""
    with contextlib.closing(open_read_only(path)) as conn:
        version = _schema_version(conn, path)
        if version is None:
            return []  # no gateway has used this database: a lifecycle journal's alone (`switchboard ask`)
        if version > SCHEMA_VERSION:
            raise schema_too_new(path, version)
        try:
            return DeadLetters(_Reader(conn)).all()  # type: ignore[arg-type]  # what it reads, only
        except sqlite3.OperationalError as exc:
            if version == SCHEMA_VERSION or "no such" not in str(exc):
                raise
            raise StoreError(f"{_older(path, version)}: start the gateway once to upgrade it, or use the"
                             " matching switchboard") from exc


def _older(path: Path, version: int) -> str:
    return (f"state database {path} is from an older version (gateway schema {version}; this one reads"
            f" {SCHEMA_VERSION})")


def _schema_version(conn: sqlite3.Connection, path: Path) -> int | None:
    """`schema_version`, also None where no gateway_meta is (no gateway opened the database)."""
    try:
        return schema_version(_Reader(conn), path)  # type: ignore[arg-type]  # what it reads, only
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise


class _Reader:
    """The reading half of `lifecycle.SqliteDatabase`, on a read-only connection, for the store's tables."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def read(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self._conn.execute(sql, params).fetchall()

    def read_one(self, sql: str, params: tuple = ()) -> tuple | None:
        return self._conn.execute(sql, params).fetchone()


def _list(letters: list[DeadLetter], out: TextIO) -> int:
    if not letters:
        print("no dead letters", file=out)
        return 0
    for letter in letters:
        dead = _died_at(letter.dead_at)
        if letter.damaged:
            print(f"{letter.id}  {dead}  could not be read back (a hand edit, a damaged write: {letter.damaged}),"
                  f" kept as it is; `switchboard inbox dismiss {letter.id}` drops it", file=out)
            continue
        preview = redacted_cut(letter.text, PREVIEW_CHARS, _cut, read=2 * PREVIEW_CHARS)
        error = " ".join(redact(letter.error or "").split())
        tries = "(attempts unreadable)" if letter.attempts is None else f"{letter.attempts} attempts"
        print(f"{letter.id}  {dead}  {_inert(letter.platform)} chat {_inert(letter.chat_id)}"
              f"  event {_inert(letter.event_id)}  {tries}  {_inert(error)}", file=out)
        print(f"    {preview!r}", file=out)
    print(f"`switchboard inbox retry ID` hands one back to the gateway, `switchboard inbox dismiss ID` drops it"
          f" ({len(letters)} dead letters)", file=out)
    return 0


def _died_at(dead_at: object) -> str:
    """The time a letter died, or ``(time unreadable)`` for one the database holds as no number (a hand edit,
    a damaged page): the listing only reads, so the next start's mend has not reached it, and one such row
    stopped the whole listing."""
    try:
        return datetime.datetime.fromtimestamp(dead_at).isoformat(sep=" ", timespec="seconds")  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError, OSError):
        return "(time unreadable)"


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
        pid, host = holder_of(lock_file.read_text(encoding="ascii", errors="replace"))
    except OSError:
        return False
    if host is not None and host != socket.gethostname():
        return pid is not None  # another host's: its pid says nothing here, and it may well run
    if pid is None or pid in (0, os.getpid()):
        return False  # our own pid is a stale one: this process does not hold the lock (`held_here`)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    except OSError:
        return False
    return True
