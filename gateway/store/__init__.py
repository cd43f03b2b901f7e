"""The gateway's durable state: sessions, the inbox (seen platform events) and the outbox.

One SQLite file in WAL mode, shared with the lifecycle journal: one connection, one
group commit (`lifecycle.SqliteDatabase`), so a turn's store writes and its
children's journal rows commit together. The journal keeps its own ``lifecycle_*``
tables and ``PRAGMA user_version``; ours are ``gateway_*`` and our schema version
lives in ``gateway_meta``. One module per table family: `gateway.store.sessions`,
`gateway.store.inbox`, `gateway.store.outbox_rows`, `gateway.store.delegations`,
`gateway.store.chat_moves` (chats a platform gave a new id),
`gateway.store.indicators_left` (chats still showing a "working" message),
`gateway.store.last_seen` (the newest message seen per conversation, for a catch-up at start), and
`gateway.store.chat_history` reading a web chat back from the inbox and outbox; the
WAL checkpoints run in
`gateway.store.checkpointer`; `gateway.store.write_lock` shows a write lock another process holds;
`gateway.store.damaged_times` mends what no row can hold as a time, and
`gateway.store.unreadable_rows` leaves out of a read of many rows one that no longer reads back.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from agent import SYSTEM_CLOCK, Clock
from gateway.errors import GatewayError
from gateway.store import (
    chat_history,
    chat_moves,
    damaged_times,
    dead_letters,
    delegations,
    inbox,
    indicators_left,
    last_seen,
    outbox_rows,
    sessions,
)
from gateway.store.chat_history import ChatHistory
from gateway.store.chat_moves import ChatMoves
from gateway.store.dead_letters import DeadLetter, DeadLetters
from gateway.store.delegations import DelegationRow, DelegationTable, LedgerTask
from gateway.store.inbox import Acceptance, Inbox
from gateway.store.indicators_left import IndicatorsLeft
from gateway.store.last_seen import LastSeen
from gateway.store.outbox_rows import NewMessage, OutboxRow, OutboxRows
from gateway.store.sessions import SessionRow, SessionTable, session_key, split_session_key
from gateway.store.unreadable_rows import UNREADABLE, as_bytes, text
from lifecycle import SqliteDatabase

log = logging.getLogger("gateway.store")
_NEW_INDEX = re.compile(r"CREATE INDEX IF NOT EXISTS (\w+) ON (\w+)")

__all__ = [
    "Acceptance",
    "ChatHistory",
    "ChatMoves",
    "DeadLetter",
    "DeadLetters",
    "DelegationRow",
    "DelegationTable",
    "GatewayStore",
    "Inbox",
    "IndicatorsLeft",
    "LastSeen",
    "LedgerTask",
    "NewMessage",
    "OutboxRow",
    "OutboxRows",
    "SCHEMA_VERSION",
    "SessionRow",
    "SessionTable",
    "StoreError",
    "row_id",
    "schema_too_new",
    "schema_version",
    "session_key",
    "split_session_key",
]


class StoreError(GatewayError):
    """The state database is unusable (e.g. written by a newer build); the message is one line
    for the operator, naming the file and the fix."""


def row_id(text: str) -> int:
    """A row's id as a person typed it (`switchboard inbox retry ID`, the console's URL); ValueError
    unless it is an integer SQLite can hold. A longer one names no row, but SQLite would not look:
    it raises OverflowError, which reached the operator as a traceback or a 500."""
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{text!r} is beyond a row id's 64 bits")
    return value


SCHEMA_VERSION = 11
"""1: transcripts as one JSON array per session; 2: one row per message; 3: inbox attempts and
dead letters; 4: each session's delegation backend; 5: chats that moved to a new id; 6: the user's
message an outbox part quotes; 7: whether an outbox part was tried; 8: inbox events whose turns
began (an older build would not replay them); 9: whether a settled delegation's card still owes
its final edit; 10: when a re-queued outbox part was first journaled; 11: whether an outbox part is for
its command's user alone. Older files are migrated on
open; a table added since (e.g. gateway_last_seen) is created where missing."""


def schema_too_new(path: Path, version: int) -> StoreError:
    """The refusal of a database a newer version wrote: one that opened it anyway might misread it, and
    migrating down is no one's job."""
    return StoreError(f"state database {path} was written by a newer switchboard (gateway schema {version}; this"
                      f" one reads up to {SCHEMA_VERSION}): run that version or a later one, or restore a backup this"
                      " version made")


def schema_version(db: SqliteDatabase, path: Path) -> int | None:
    """The gateway schema the database at ``path`` was last opened with (``db`` reads it); None before any
    gateway opened it. `StoreError`, naming the file and the key, for one that holds no version number (a
    hand edit, a damaged write): its value failed every open, quoted in Python's error or SQLite's."""
    row = db.read_one(f"SELECT {as_bytes('value')} FROM gateway_meta WHERE key='schema_version'")
    if row is None:
        return None
    try:
        return int(text(row[0]))  # type: ignore[call-overload]
    except UNREADABLE:
        pass  # raised outside this block: the error's context would quote the value
    raise StoreError(f"state database {path} is damaged: gateway_meta's schema_version holds no schema number (a"
                     " hand edit, a damaged write): restore a backup, or set it to the gateway schema that wrote the"
                     f" database ({SCHEMA_VERSION} for this version)")


class GatewayStore:
    """The gateway's tables on one `SqliteDatabase`: its own, opened on ``path``, or ``db``
    shared with the lifecycle journal (then closing the store leaves ``db`` open). Use from
    one thread (the event loop)."""

    def __init__(self, path: Path | str | None = None, *, db: SqliteDatabase | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        if (path is None) == (db is None):
            raise TypeError("GatewayStore needs a path or a db, not both")
        self._owns_db = db is None
        self.db = db if db is not None else SqliteDatabase(path)  # type: ignore[arg-type]
        self._clock = clock
        self.sessions = SessionTable(self.db, clock)
        self.inbox = Inbox(self.db, clock)
        self.outbox = OutboxRows(self.db, clock)
        self.delegations = DelegationTable(self.db, clock)
        self.dead_letters = DeadLetters(self.db)
        self.chat_history = ChatHistory(self.db)
        self.chat_moves = ChatMoves(self.db, clock)
        self.indicators_left = IndicatorsLeft(self.db)
        self.last_seen = LastSeen(self.db, clock)
        try:
            self._open_schema()
        except BaseException:
            if self._owns_db:
                self.db.close()
            raise

    @property
    def path(self) -> Path:
        return self.db.path

    def _open_schema(self) -> None:
        db = self.db
        with db.transaction():
            db.write("CREATE TABLE IF NOT EXISTS gateway_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self._inbox_attempts()  # before CREATE ... IF NOT EXISTS, which would keep the old shapes
            self._inbox_begun()
            for statement in (*sessions.SCHEMA, *inbox.SCHEMA, *outbox_rows.SCHEMA, *delegations.SCHEMA,
                              *chat_history.SCHEMA, *dead_letters.SCHEMA, *chat_moves.SCHEMA,
                              *indicators_left.SCHEMA, *last_seen.SCHEMA):
                self._say_if_built(statement)
                db.write(statement)
            version = schema_version(db, db.path)
            if version is None:
                db.write("INSERT INTO gateway_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif version > SCHEMA_VERSION:
                raise schema_too_new(db.path, version)
            elif version < SCHEMA_VERSION:
                if version == 1:
                    self.sessions.split_transcripts()
                self.sessions.add_backend_columns()
                self.outbox.add_reply_to()
                self.outbox.add_tried()
                self.outbox.add_first_journaled()
                self.outbox.add_private()
                self.delegations.add_card_owed()
                db.write("UPDATE gateway_meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
            damaged_times.mend(db, self._clock.time())

    def _say_if_built(self, statement: str) -> None:
        """Log that ``statement`` builds an index a table already full of rows lacks (the first start after an
        upgrade that adds one): seconds on a large database, during which the gateway does not answer yet, not even
        ``/healthz``; told nothing, an operator saw a start hang."""
        new = _NEW_INDEX.match(statement)
        if new is None or self.db.read_one("SELECT 1 FROM sqlite_master WHERE type='index' AND name=?",
                                           (new.group(1),)) is not None:
            return
        if self.db.read_one(f"SELECT 1 FROM {new.group(2)} LIMIT 1") is not None:
            log.info("building the state database's index %s (once, after an upgrade): a large database takes a few"
                     " seconds, and the gateway answers nothing meanwhile", new.group(1))

    def _inbox_attempts(self) -> None:
        """Schema < 3: the inbox counts failed attempts; its open-events index covers re-queued ones."""
        columns = [r[1] for r in self.db.read("PRAGMA table_info(gateway_inbox)")]
        if not columns or "attempts" in columns:
            return
        self.db.write("ALTER TABLE gateway_inbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0")
        self.db.write("ALTER TABLE gateway_inbox ADD COLUMN last_error TEXT")
        self.db.write("DROP INDEX IF EXISTS gateway_inbox_open")

    def _inbox_begun(self) -> None:
        """Schema < 8: no event is marked begun. Its unsettled events are taken as begun, as that
        build took them: a death it left is charged to each, so an event that brought it down is not
        replayed uncounted; a clean stop charges none. The open-events index covers begun ones."""
        version = schema_version(self.db, self.db.path)
        if version is None or version >= 8 or not self.db.read("PRAGMA table_info(gateway_inbox)"):
            return
        self.db.write("UPDATE gateway_inbox SET status='begun' WHERE status='received'")
        self.db.write("DROP INDEX IF EXISTS gateway_inbox_open")

    def begin_run(self) -> bool:
        """A gateway starts on this state: whether the one before it stopped cleanly (True the
        first time). Until `end_run`, a later start reads this run as cut short (a crash)."""
        row = self.db.read_one("SELECT value FROM gateway_meta WHERE key='stopped_cleanly'")
        self.db.write("INSERT INTO gateway_meta VALUES ('stopped_cleanly', '0')"
                      " ON CONFLICT(key) DO UPDATE SET value='0'")
        return row is None or row[0] == "1"

    async def end_run(self) -> None:
        """The gateway stopped cleanly: what it left unsettled it interrupted on purpose. Durable
        before it returns; nothing to do once the store is closed (a second stop)."""
        if not self.db.closed:
            self.db.write("UPDATE gateway_meta SET value='1' WHERE key='stopped_cleanly'")
            await self.db.durable()

    async def durable(self) -> None:
        """Return once every write made so far is committed (see `Database.durable`)."""
        await self.db.durable()

    def close(self) -> None:
        """Commit what is pending, and close the file if the store opened it. Idempotent."""
        if self._owns_db:
            self.db.close()
        elif not self.db.closed:
            self.db.commit()
