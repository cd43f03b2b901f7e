"""The gateway's durable state: sessions, the inbox (seen platform events) and the outbox.

One SQLite file in WAL mode, shared with the lifecycle journal (which keeps its own
connection, its own ``lifecycle_*`` tables and ``PRAGMA user_version``; ours are
``gateway_*`` and our schema version lives in ``gateway_meta``).

Every method runs synchronously on the caller's thread, the event loop: each is one
small indexed statement, or a few in one savepoint. Reads take tens of
microseconds. Writes are group-committed: all writes made during one turn of the
event loop share one transaction, committed at the next turn (about 0.1-0.3 ms per
commit; WAL with ``synchronous=NORMAL`` does not fsync on commit), and the outbox
commits explicitly right before every send, so "journaled before sent" holds. A hop
to a worker thread and back would cost as much as the write. The cost is that a lock
held by the journal's writer (``busy_timeout`` 5 s) can stall the loop briefly; WAL
checkpoints, which take tens of milliseconds, run on a worker thread while the gateway
runs (`gateway.checkpoints`). Use one `GatewayStore` from one thread.

Durability: a committed row survives a process crash; a power cut may lose the
last commits (``synchronous=NORMAL``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent import SYSTEM_CLOCK, Clock
from gateway.errors import GatewayError
from platforms.base import Inbound

log = logging.getLogger("gateway.store")

SCHEMA_VERSION = 2
"""1: transcripts as one JSON array per session; 2: one row per message (migrated on open)."""
INBOX_RETENTION = 7 * 24 * 3600.0
"""Seconds to remember a platform event id. Redeliveries come within minutes (Slack retries,
webhook retries) to a day (Telegram keeps updates 24 h); a week covers them all."""
OUTBOX_RETENTION = 7 * 24 * 3600.0
"""Seconds to keep settled outbox rows: edits of older messages and replays of older keys
would find nothing (an edit then sends a new message; a replay sends again)."""

Mode = Literal["inline", "background"]
Status = Literal["pending", "sent", "failed", "dropped"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS gateway_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS gateway_sessions (
        key TEXT PRIMARY KEY, session_id TEXT NOT NULL, generation INTEGER NOT NULL, mode TEXT NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL)""",
    # A row per message: a turn appends its few new messages instead of rewriting the whole history.
    """CREATE TABLE IF NOT EXISTS gateway_transcript (
        key TEXT NOT NULL, seq INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY (key, seq))""",
    """CREATE TABLE IF NOT EXISTS gateway_inbox (
        platform TEXT NOT NULL, event_id TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL,
        received_at REAL NOT NULL, turn_id TEXT, PRIMARY KEY (platform, event_id))""",
    "CREATE INDEX IF NOT EXISTS gateway_inbox_received ON gateway_inbox (received_at)",
    "CREATE INDEX IF NOT EXISTS gateway_inbox_open ON gateway_inbox (received_at) WHERE status = 'received'",
    """CREATE TABLE IF NOT EXISTS gateway_outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, platform TEXT NOT NULL,
        chat_id TEXT NOT NULL, thread_id TEXT, kind TEXT NOT NULL, op TEXT NOT NULL, target_key TEXT,
        text, silent INTEGER NOT NULL, reply_token TEXT, turn_id TEXT, sequence INTEGER NOT NULL,
        status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL,
        created_at REAL NOT NULL, sent_at REAL, message_id TEXT, last_error TEXT)""",
    "CREATE INDEX IF NOT EXISTS gateway_outbox_pending ON gateway_outbox (id) WHERE status = 'pending'",
    """CREATE INDEX IF NOT EXISTS gateway_outbox_chat_pending ON gateway_outbox (platform, chat_id, thread_id, id)
        WHERE status = 'pending'""",
    "CREATE INDEX IF NOT EXISTS gateway_outbox_turn ON gateway_outbox (platform, turn_id, sequence)",
    "CREATE INDEX IF NOT EXISTS gateway_outbox_created ON gateway_outbox (created_at)",
)
_OUT_COLUMNS = ("id, key, platform, chat_id, thread_id, kind, op, target_key, text, silent, reply_token, turn_id, "
                "sequence, status, attempts, next_attempt_at, created_at, sent_at, message_id, last_error")  # fmt: skip


class StoreError(GatewayError):
    """The state database is unusable (e.g. written by a newer build)."""


def session_key(platform: str, chat_id: str, thread_id: str | None) -> str:
    """``platform|chat|thread`` (thread empty when None); ``%`` and ``|`` inside ids are escaped."""

    def esc(part: str) -> str:
        return part.replace("%", "%25").replace("|", "%7C")

    return f"{esc(platform)}|{esc(chat_id)}|{esc(thread_id or '')}"


def split_session_key(key: str) -> tuple[str, str, str | None]:
    """The inverse of `session_key`: (platform, chat_id, thread_id)."""
    platform, chat_id, thread_id = (part.replace("%7C", "|").replace("%25", "%") for part in key.split("|"))
    return platform, chat_id, thread_id or None


@dataclass(frozen=True, slots=True)
class SessionRow:
    key: str
    session_id: str
    generation: int
    """Bumped by ``/new``; work of an older generation is stale."""
    mode: Mode
    """The delegation mode pinned when the session started."""
    transcript: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    created_at: float = 0.0
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class NewMessage:
    """An outbox row to journal. ``sequence`` None: next in its turn (or 0 without a turn)."""

    key: str
    platform: str
    chat_id: str
    thread_id: str | None
    text: str
    kind: str = "reply"
    op: Literal["send", "edit"] = "send"
    target_key: str | None = None
    silent: bool = False
    reply_token: str | None = None
    turn_id: str | None = None
    sequence: int | None = None


@dataclass(frozen=True, slots=True)
class OutboxRow:
    id: int
    key: str
    """The idempotency key: unique; journaling it again is a no-op."""
    platform: str
    chat_id: str
    thread_id: str | None
    kind: str
    op: str
    """'send', 'edit', or 'split' (replaced by its pieces ``key/a``, ``key/b``...)."""
    target_key: str | None
    text: str
    silent: bool
    reply_token: str | None
    turn_id: str | None
    sequence: int
    status: Status
    attempts: int
    next_attempt_at: float | None
    created_at: float
    sent_at: float | None
    message_id: str | None
    last_error: str | None

    @property
    def chat(self) -> tuple[str, str, str | None]:
        return (self.platform, self.chat_id, self.thread_id)


def _text(value: str | None) -> str | bytes | None:
    # sqlite3 cannot bind a str holding a lone surrogate (models emit "\ud800" escapes): such
    # text goes in as surrogatepass bytes, and `_untext` turns it back into the same str.
    if value is None or value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


def _untext(value: Any) -> Any:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _outbox_row(r: tuple) -> OutboxRow:
    return OutboxRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], _untext(r[8]), bool(r[9]), r[10], r[11],
                     r[12], r[13], r[14], r[15], r[16], r[17], r[18], _untext(r[19]))  # fmt: skip


class GatewayStore:
    def __init__(self, path: Path | str, *, clock: Clock = SYSTEM_CLOCK):
        self.path = Path(path)
        self._clock = clock
        self._tx_depth = 0
        self._durable: list[asyncio.Future[None]] = []
        self._commit_due = False
        self.path.parent.mkdir(parents=True, exist_ok=True)  # the state dir may not exist yet
        # Autocommit (isolation_level=None): one statement, one commit; `_tx` groups several.
        self._db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            with self._tx():
                for statement in _SCHEMA:
                    self._db.execute(statement)
                row = self._db.execute("SELECT value FROM gateway_meta WHERE key='schema_version'").fetchone()
                if row is None:
                    self._write("INSERT INTO gateway_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                elif int(row[0]) > SCHEMA_VERSION:
                    raise StoreError(f"{self.path}: gateway schema {row[0]} is newer than this build"
                                     f" ({SCHEMA_VERSION})")
                elif int(row[0]) == 1:
                    self._split_transcripts()
        except BaseException:
            self._db.close()
            raise

    def close(self) -> None:
        """Commit what is pending and close the connection. Idempotent."""
        try:
            self.commit()
        except sqlite3.ProgrammingError:  # already closed
            pass
        self._db.close()

    def automatic_checkpoints(self, enabled: bool) -> None:
        """Let commits on this connection checkpoint the WAL themselves (SQLite's default), or
        not, while `gateway.checkpoints` does it off the event loop."""
        self._db.execute(f"PRAGMA wal_autocheckpoint={1000 if enabled else 0}")

    def commit(self) -> None:
        """Commit the current batch now. The outbox calls this right before a send, so a
        message is always durably journaled before it can reach a platform."""
        waiters, self._durable = self._durable, []
        try:
            if self._db.in_transaction:
                self._db.execute("COMMIT")
        except BaseException as exc:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(StoreError(f"committing the state database failed: {exc}"))
            raise
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def durable(self) -> None:
        """Return once every write made so far is committed: at the batch's commit on the next
        loop turn, shared by every caller of this turn. Await it before acknowledging anything
        to a platform, so an acknowledged event is never lost in a crash."""
        if not self._db.in_transaction:
            return
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._durable.append(waiter)
        self._schedule_commit(loop)  # normally already due; not after a commit that failed
        await waiter

    def _schedule_commit(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._commit_due:
            self._commit_due = True
            loop.call_soon(self._due_commit)

    def _due_commit(self) -> None:
        self._commit_due = False
        try:
            self.commit()
        except sqlite3.Error as exc:  # its waiters were told; the batch stays open for the next try
            log.error("committing the state database failed; retrying with the next write: %s", exc)

    def _write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run a write inside the current batch. Group commit: every write made during one
        turn of the event loop shares one transaction, committed by a callback at the next
        turn, so many chats' writes cost one commit instead of one each. Without a running
        loop nothing would commit later, so the write commits at once."""
        batched = self._begin()
        cursor = self._db.execute(sql, params)
        if not batched and not self._tx_depth:
            self.commit()
        return cursor

    def _begin(self) -> bool:
        """Open the batch if none is open; False when there is no event loop to commit it."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if not self._db.in_transaction:
            self._db.execute("BEGIN IMMEDIATE")
        if loop is not None:
            self._schedule_commit(loop)  # also after a failed commit left the batch open
        return loop is not None

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        """Several writes that stand or fall together, inside the current batch."""
        batched = self._begin()
        self._db.execute("SAVEPOINT gateway_tx")
        self._tx_depth += 1
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK TO gateway_tx")
            self._db.execute("RELEASE gateway_tx")
            raise
        else:
            self._db.execute("RELEASE gateway_tx")
        finally:
            self._tx_depth -= 1
        if not batched and not self._tx_depth:
            self.commit()

    # --- sessions -------------------------------------------------------------------

    def _split_transcripts(self) -> None:
        """Schema 1 -> 2: move each session's JSON array of messages into rows."""
        rows = self._db.execute("SELECT key, transcript FROM gateway_sessions").fetchall()
        self._db.executemany("INSERT INTO gateway_transcript VALUES (?, ?, ?)", [
            (key, seq, json.dumps(message)) for key, transcript in rows for seq, message in enumerate(json.loads(transcript))
        ])  # fmt: skip
        self._db.execute("ALTER TABLE gateway_sessions DROP COLUMN transcript")
        self._write("UPDATE gateway_meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

    def load_session(self, key: str) -> SessionRow | None:
        row = self._db.execute(
            "SELECT key, session_id, generation, mode, created_at, updated_at FROM gateway_sessions WHERE key=?",
            (key,)).fetchone()  # fmt: skip
        if row is None:
            return None
        messages = self._db.execute("SELECT message FROM gateway_transcript WHERE key=? ORDER BY seq", (key,))
        return SessionRow(row[0], row[1], row[2], row[3], [json.loads(m) for (m,) in messages], row[4], row[5])

    def recent_threads(self, platform: str, limit: int) -> list[tuple[str, str]]:
        """(chat_id, thread_id) of the platform's ``limit`` most recently active thread
        sessions, most recent last."""
        # Keys are "platform|chat|thread": a range on the primary key ('}' sorts right after '|'),
        # then only keys with a thread (not ending in '|').
        low = session_key(platform, "", None)[:-1]
        rows = self._db.execute(
            "SELECT key FROM gateway_sessions WHERE key >= ? AND key < ? AND key NOT LIKE '%|'"
            " ORDER BY updated_at DESC LIMIT ?", (low, low[:-1] + "}", limit)).fetchall()  # fmt: skip
        return [(chat, thread) for _, chat, thread in (split_session_key(key) for (key,) in reversed(rows))]

    def save_session(self, row: SessionRow) -> None:
        """Insert or replace the session under ``row.key``, transcript and all; ``updated_at`` becomes now."""
        if row.mode not in ("inline", "background"):
            raise ValueError(f"mode must be 'inline' or 'background', got {row.mode!r}")
        with self._tx():
            self._write(
                "INSERT INTO gateway_sessions VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET"
                " session_id=excluded.session_id, generation=excluded.generation, mode=excluded.mode,"
                " created_at=excluded.created_at, updated_at=excluded.updated_at",
                (row.key, row.session_id, row.generation, row.mode, row.created_at or self._clock.time(),
                 self._clock.time()))  # fmt: skip
            self._replace_messages(row.key, row.transcript)

    def save_transcript(self, key: str, messages: Sequence[dict[str, Any]], *, start: int = 0) -> None:
        """Store the session's transcript: ``start=0`` rewrites it whole; ``start > 0`` appends
        ``messages[start:]`` after the ``start`` messages stored (a turn passes the count it last
        saved, so it writes only its new messages). KeyError if there is no such session."""
        if start == 0:
            with self._tx():
                self._touch(key)
                self._replace_messages(key, messages)
            return
        # Appending after what is stored: no rows to delete, and no savepoint is needed, since
        # rewriting the same positions (after a failure midway) replaces what is there.
        self._touch(key)
        self._insert_messages(key, messages, start, "INSERT OR REPLACE")

    def _touch(self, key: str) -> None:
        if self._write("UPDATE gateway_sessions SET updated_at=? WHERE key=?", (self._clock.time(), key)).rowcount == 0:
            raise KeyError(key)

    def _replace_messages(self, key: str, messages: Sequence[dict[str, Any]]) -> None:
        self._write("DELETE FROM gateway_transcript WHERE key=?", (key,))
        self._insert_messages(key, messages, 0, "INSERT")

    def _insert_messages(self, key: str, messages: Sequence[dict[str, Any]], start: int, verb: str) -> None:
        batched = self._begin()
        # json.dumps escapes non-ASCII (lone surrogates included), so a message always binds.
        self._db.executemany(f"{verb} INTO gateway_transcript VALUES (?, ?, ?)",
                             [(key, seq, json.dumps(messages[seq])) for seq in range(start, len(messages))])
        if not batched and not self._tx_depth:
            self.commit()

    # --- inbox ----------------------------------------------------------------------

    def record_event(self, inbound: Inbound, turn_id: str | None = None) -> bool:
        """Remember the event before it is handled, with the turn it is to start if known:
        True if new, False for a redelivery (which changes nothing)."""
        cur = self._write(
            "INSERT OR IGNORE INTO gateway_inbox VALUES (?, ?, ?, 'received', ?, ?)",
            (inbound.platform, inbound.event_id, json.dumps(inbound.to_json()), self._clock.time(), turn_id))
        return cur.rowcount == 1

    def mark_done(self, platform: str, event_id: str) -> None:
        """The event was handled (its turn started or it was refused); it is not replayed."""
        self._write("UPDATE gateway_inbox SET status='done' WHERE platform=? AND event_id=?", (platform, event_id))

    def set_event_turn(self, platform: str, event_id: str, turn_id: str | None) -> None:
        """Remember which turn the event started (None: none), so a redelivery (or a replay)
        answers with it."""
        self._write("UPDATE gateway_inbox SET turn_id=? WHERE platform=? AND event_id=?",
                         (turn_id, platform, event_id))  # fmt: skip

    def event_turn(self, platform: str, event_id: str) -> str | None:
        """The turn set by `set_event_turn`; None if none was, or the event is unknown."""
        row = self._db.execute("SELECT turn_id FROM gateway_inbox WHERE platform=? AND event_id=?",
                               (platform, event_id)).fetchone()  # fmt: skip
        return None if row is None else row[0]

    def unfinished_events(self) -> list[Inbound]:
        """Events recorded but never marked done, oldest first: to replay after a restart."""
        rows = self._db.execute(
            "SELECT payload FROM gateway_inbox WHERE status='received' ORDER BY received_at, rowid").fetchall()
        return [Inbound.from_json(json.loads(p)) for (p,) in rows]

    def prune_inbox(self, older_than: float) -> int:
        """Forget events received before the epoch time ``older_than`` (see `INBOX_RETENTION`),
        done or not: a redelivery after that is taken as new. Returns the count."""
        return self._write("DELETE FROM gateway_inbox WHERE received_at < ?", (older_than,)).rowcount

    # --- outbox ---------------------------------------------------------------------

    def add_messages(self, messages: Sequence[NewMessage]) -> list[int | None]:
        """Journal the rows in one transaction, each pending, in order. A key already journaled is
        left as it is (None in the result); a new row gets its id. A None sequence becomes the
        next in the row's turn (one past the turn's highest), or 0 without a turn."""
        now = self._clock.time()
        # One row needs no savepoint: a single statement stands or falls by itself.
        with self._tx() if len(messages) > 1 else contextlib.nullcontext():
            return [self._insert_message(m, now) for m in messages]

    def add_new_messages(self, messages: Sequence[NewMessage]) -> list[int | None] | None:
        """`add_messages` for the parts of one message, first part first: None, adding nothing,
        when the first part's key is already journaled (the whole message was, earlier)."""
        now = self._clock.time()
        with self._tx() if len(messages) > 1 else contextlib.nullcontext():
            first = self._insert_message(messages[0], now)
            if first is None:
                return None
            return [first, *(self._insert_message(m, now) for m in messages[1:])]

    def _insert_message(self, m: NewMessage, now: float) -> int | None:
        cur = self._write(
            "INSERT OR IGNORE INTO gateway_outbox (key, platform, chat_id, thread_id, kind, op, target_key,"
            " text, silent, reply_token, turn_id, sequence, status, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,"
            " COALESCE(?, (SELECT COALESCE(MAX(sequence) + 1, 0) FROM gateway_outbox"
            "  WHERE platform=? AND turn_id=?), 0), 'pending', ?)",
            (m.key, m.platform, m.chat_id, m.thread_id, m.kind, m.op, m.target_key, _text(m.text),
             int(m.silent), m.reply_token, m.turn_id, m.sequence, m.platform, m.turn_id, now))  # fmt: skip
        return cur.lastrowid if cur.rowcount == 1 else None

    def message(self, key: str) -> OutboxRow | None:
        row = self._db.execute(f"SELECT {_OUT_COLUMNS} FROM gateway_outbox WHERE key=?", (key,)).fetchone()
        return None if row is None else _outbox_row(row)

    def has_message(self, key: str) -> bool:
        return self._db.execute("SELECT 1 FROM gateway_outbox WHERE key=?", (key,)).fetchone() is not None

    def message_by_id(self, row_id: int) -> OutboxRow | None:
        row = self._db.execute(f"SELECT {_OUT_COLUMNS} FROM gateway_outbox WHERE id=?", (row_id,)).fetchone()
        return None if row is None else _outbox_row(row)

    def pieces(self, key: str) -> list[OutboxRow]:
        """The rows a split replaced ``key`` with (``key/a``, ``key/b``...), in order."""
        # A range on the unique index: '/' + 1 == '0'. LIKE would be case-insensitive and scan.
        rows = self._db.execute(f"SELECT {_OUT_COLUMNS} FROM gateway_outbox WHERE key >= ? AND key < ?"
                                " AND instr(substr(key, ?), '/') = 0 ORDER BY id",
                                (key + "/", key + "0", len(key) + 2)).fetchall()  # fmt: skip
        return [_outbox_row(r) for r in rows]

    def pending_messages(self, chat: tuple[str, str, str | None] | None = None) -> list[OutboxRow]:
        """Pending rows, of one chat (platform, chat_id, thread_id) or all, in journal (id) order."""
        if chat is None:
            rows = self._db.execute(f"SELECT {_OUT_COLUMNS} FROM gateway_outbox WHERE status='pending' ORDER BY id")
        else:
            rows = self._db.execute(f"SELECT {_OUT_COLUMNS} FROM gateway_outbox WHERE status='pending' AND platform=?"
                                    " AND chat_id=? AND thread_id IS ? ORDER BY id", chat)  # fmt: skip
        return [_outbox_row(r) for r in rows.fetchall()]

    def record_attempt(self, row_id: int, error: str, next_attempt_at: float | None) -> None:
        """A retryable failure: count it; the row stays pending."""
        self._write("UPDATE gateway_outbox SET attempts=attempts+1, last_error=?, next_attempt_at=? WHERE id=?",
                         (_text(error[:500]), next_attempt_at, row_id))  # fmt: skip

    def mark_sent(self, row_id: int, message_id: str | None, *, attempted: bool = True) -> None:
        """Sent: final, whatever the row's status was (a row dropped while in flight did go out)."""
        self._write("UPDATE gateway_outbox SET status='sent', message_id=?, sent_at=?, attempts=attempts+?,"
                         " next_attempt_at=NULL WHERE id=?",
                         (message_id, self._clock.time(), int(attempted), row_id))  # fmt: skip

    def mark_failed(self, row_id: int, error: str) -> None:
        self._write("UPDATE gateway_outbox SET status='failed', attempts=attempts+1, last_error=?,"
                         " next_attempt_at=NULL WHERE id=? AND status='pending'", (_text(error[:500]), row_id))

    def set_op(self, row_id: int, op: Literal["send", "split"]) -> None:
        """An edit falling back to a new message becomes 'send'; a re-split row becomes 'split'."""
        self._write("UPDATE gateway_outbox SET op=? WHERE id=?", (op, row_id))

    def set_message_id(self, key: str, message_id: str) -> None:
        """Point ``key`` at another platform message (an edit's fallback), so later edits edit that."""
        self._write("UPDATE gateway_outbox SET message_id=? WHERE key=?", (message_id, key))

    def drop(self, row_ids: Sequence[int]) -> list[int]:
        """Mark these rows dropped where still pending; returns the ids that were."""
        dropped = []
        with self._tx():
            for row_id in row_ids:
                cur = self._write("UPDATE gateway_outbox SET status='dropped' WHERE id=? AND status='pending'",
                                       (row_id,))  # fmt: skip
                if cur.rowcount:
                    dropped.append(row_id)
        return dropped

    def turn_messages(self, platform: str, turn_id: str) -> list[dict[str, Any]]:
        """Every message of a turn, in sequence order (the pieces of a split row, which share
        its sequence and sort by key, in its place). Each a dict of key, chat_id, thread_id,
        kind, op ('send', or 'edit' of ``target_key``), text, status, sequence, message_id,
        created_at and sent_at."""
        rows = self._db.execute(
            "SELECT key, chat_id, thread_id, kind, op, target_key, text, status, sequence, message_id, created_at,"
            " sent_at"
            " FROM gateway_outbox WHERE platform=? AND turn_id=? AND op != 'split' ORDER BY sequence, key",
            (platform, turn_id)).fetchall()  # fmt: skip
        names = ("key", "chat_id", "thread_id", "kind", "op", "target_key", "text", "status", "sequence",
                 "message_id", "created_at", "sent_at")
        return [dict(zip(names, (*r[:6], _untext(r[6]), *r[7:]), strict=True)) for r in rows]

    def prune_outbox(self, older_than: float) -> int:
        """Delete settled rows created before the epoch time ``older_than`` (see `OUTBOX_RETENTION`);
        pending rows are kept. Returns the count."""
        return self._write("DELETE FROM gateway_outbox WHERE created_at < ? AND status != 'pending'",
                                (older_than,)).rowcount  # fmt: skip
