"""Dead letters: events the gateway failed to handle too many times, set aside for the operator.

An event lands here from the inbox (`Inbox.set_aside`) with the error of its last
attempt; ``switchboard inbox dead`` lists them and ``switchboard inbox retry ID``
hands one back to the inbox (`DeadLetters.retry`), where a running gateway takes it
up within seconds, or the next start does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from lifecycle import SqliteDatabase

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_dead_letters (
        id INTEGER PRIMARY KEY AUTOINCREMENT, platform TEXT NOT NULL, event_id TEXT NOT NULL, payload TEXT NOT NULL,
        turn_id TEXT, attempts INTEGER NOT NULL, error TEXT, received_at REAL NOT NULL, dead_at REAL NOT NULL)""",
)
_COLUMNS = "id, platform, event_id, payload, turn_id, attempts, error, received_at, dead_at"
_untext = SqliteDatabase.untext


@dataclass(frozen=True, slots=True)
class DeadLetter:
    id: int
    platform: str
    event_id: str
    payload: str
    """The event as the inbox stored it (JSON of its `platforms.base.Inbound` fields)."""
    turn_id: str | None
    attempts: int
    error: str | None
    """The error of the last attempt, as logged (never the message text)."""
    received_at: float
    dead_at: float

    @property
    def chat_id(self) -> str:
        return str(json.loads(self.payload).get("chat_id", ""))

    @property
    def text(self) -> str:
        return str(json.loads(self.payload).get("text", ""))


class DeadLetters:
    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def all(self) -> list[DeadLetter]:
        """Every dead letter, oldest first."""
        return [_letter(r) for r in self._db.read(f"SELECT {_COLUMNS} FROM gateway_dead_letters ORDER BY id")]

    def latest(self, limit: int) -> list[DeadLetter]:
        """The ``limit`` newest dead letters, newest first (the console's view: it refreshes often,
        and letters pile up until the operator dismisses them)."""
        rows = self._db.read(f"SELECT {_COLUMNS} FROM gateway_dead_letters ORDER BY id DESC LIMIT ?", (limit,))
        return [_letter(r) for r in rows]

    def get(self, letter_id: int) -> DeadLetter | None:
        row = self._db.read_one(f"SELECT {_COLUMNS} FROM gateway_dead_letters WHERE id=?", (letter_id,))
        return None if row is None else _letter(row)

    def count(self) -> int:
        row = self._db.read_one("SELECT COUNT(*) FROM gateway_dead_letters")
        return int(row[0]) if row else 0

    def dismiss(self, letter_id: int) -> DeadLetter | None:
        """Forget the letter: the operator has seen it and it is not to be handled. Its event stays
        ``dead`` in the inbox, so a redelivery is still a duplicate. None for an unknown id."""
        with self._db.transaction():  # read under the write lock: see `retry`
            letter = self.get(letter_id)
            if letter is not None:
                self._db.write("DELETE FROM gateway_dead_letters WHERE id=?", (letter_id,))
        return letter

    def retry(self, letter_id: int, requeue) -> DeadLetter | None:
        """Hand the letter back through ``requeue(platform, event_id, payload, turn_id, received_at)``
        (`Inbox.requeue`) and forget it here, in one transaction. None for an unknown id."""
        # Read in the transaction, which holds the file's write lock: another process (`switchboard inbox
        # retry`, the console of the running gateway) may hand the letter back or dismiss it between a read
        # before it and the write, and handed back again, an event the gateway took up since runs twice.
        with self._db.transaction():
            letter = self.get(letter_id)
            if letter is None:
                return None
            requeue(letter.platform, letter.event_id, letter.payload, letter.turn_id, letter.received_at)
            self._db.write("DELETE FROM gateway_dead_letters WHERE id=?", (letter_id,))
        return letter


def _letter(r: tuple) -> DeadLetter:
    return DeadLetter(r[0], _untext(r[1]), _untext(r[2]), r[3], r[4], r[5], _untext(r[6]), r[7], r[8])
