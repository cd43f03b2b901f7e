"""The gateway's durable state: sessions, the inbox (seen platform events) and the outbox.

One SQLite file in WAL mode, shared with the lifecycle journal (which keeps its own
``lifecycle_*`` tables and ``PRAGMA user_version``; ours are ``gateway_*`` and our
schema version lives in ``gateway_meta``). One module per table family:
`gateway.store.sessions`, `gateway.store.inbox`, `gateway.store.outbox_rows`, and
`gateway.store.chat_history` reading a web chat back from the last two; the
connection and its group commit are `gateway.store.database`, the WAL checkpoints
`gateway.store.checkpointer`.
"""

from __future__ import annotations

from pathlib import Path

from agent import SYSTEM_CLOCK, Clock
from gateway.store import chat_history, inbox, outbox_rows, sessions
from gateway.store.chat_history import ChatHistory
from gateway.store.database import Database, StoreError
from gateway.store.inbox import Acceptance, Inbox
from gateway.store.outbox_rows import NewMessage, OutboxRow, OutboxRows
from gateway.store.sessions import SessionRow, SessionTable, session_key, split_session_key

__all__ = [
    "Acceptance", "ChatHistory", "GatewayStore", "Inbox", "NewMessage", "OutboxRow", "OutboxRows", "SCHEMA_VERSION", "SessionRow",
    "SessionTable", "StoreError", "session_key", "split_session_key",
]  # fmt: skip

SCHEMA_VERSION = 2
"""1: transcripts as one JSON array per session; 2: one row per message (migrated on open)."""


class GatewayStore:
    """The gateway's tables on one `Database`. Use from one thread (the event loop)."""

    def __init__(self, path: Path | str, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.db = Database(path)
        self.sessions = SessionTable(self.db, clock)
        self.inbox = Inbox(self.db, clock)
        self.outbox = OutboxRows(self.db, clock)
        self.chat_history = ChatHistory(self.db)
        try:
            self._open_schema()
        except BaseException:
            self.db.close()
            raise

    @property
    def path(self) -> Path:
        return self.db.path

    def _open_schema(self) -> None:
        db = self.db
        with db.transaction():
            db.write("CREATE TABLE IF NOT EXISTS gateway_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for statement in (*sessions.SCHEMA, *inbox.SCHEMA, *outbox_rows.SCHEMA, *chat_history.SCHEMA):
                db.write(statement)
            row = db.read("SELECT value FROM gateway_meta WHERE key='schema_version'").fetchone()
            if row is None:
                db.write("INSERT INTO gateway_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise StoreError(f"{db.path}: gateway schema {row[0]} is newer than this build ({SCHEMA_VERSION})")
            elif int(row[0]) == 1:
                self.sessions.split_transcripts()
                db.write("UPDATE gateway_meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))

    async def durable(self) -> None:
        """Return once every write made so far is committed (see `Database.durable`)."""
        await self.db.durable()

    def close(self) -> None:
        """Commit what is pending and close the file. Idempotent."""
        self.db.close()
