"""Dead letters: events the gateway failed to handle too many times, set aside for the operator.

An event lands here from the inbox (`Inbox.set_aside`) with the error of its last
attempt; ``switchboard inbox dead`` lists them and ``switchboard inbox retry ID``
hands one back to the inbox (`DeadLetters.retry`), where a running gateway takes it
up within seconds, or the next start does. One that no longer reads back (`DeadLetter.damaged`) is listed
by its id only, and can be dismissed, not handed back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gateway.errors import GatewayError
from gateway.store.unreadable_rows import UNREADABLE, as_bytes, text
from lifecycle import SqliteDatabase
from platforms.base import Inbound

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_dead_letters (
        id INTEGER PRIMARY KEY AUTOINCREMENT, platform TEXT NOT NULL, event_id TEXT NOT NULL, payload TEXT NOT NULL,
        turn_id TEXT, attempts INTEGER NOT NULL, error TEXT, received_at REAL NOT NULL, dead_at REAL NOT NULL)""",
    # Added to schema 11 without a new version, created where missing: a replayed event looks up the letters of its
    # turn (`Inbox.opened_by`), which pile up until the operator dismisses them.
    "CREATE INDEX IF NOT EXISTS gateway_dead_letters_turn ON gateway_dead_letters (platform, turn_id)"
    " WHERE turn_id IS NOT NULL",
)
_COLUMNS = "id, " + as_bytes("platform", "event_id", "payload", "turn_id", "error", "attempts", "received_at",
                             "dead_at")
"""Read as bytes where they hold text (`gateway.store.unreadable_rows`), its numbers too: one letter of no UTF-8 in
any column failed every read of many."""
_DAMAGED_TEXT = "(could not be read back: a hand edit, a damaged write; kept as it is)"


@dataclass(frozen=True, slots=True)
class DeadLetter:
    id: int
    platform: str
    event_id: str
    payload: str
    """The event as the inbox stored it (JSON of its `platforms.base.Inbound` fields)."""
    turn_id: str | None
    attempts: int | None
    """None where the store holds no whole number there (a hand edit, a damaged write)."""
    error: str | None
    """The error of the last attempt, as logged (never the message text)."""
    received_at: float
    dead_at: float
    damaged: str | None = None
    """Why the row does not read back (a column of no UTF-8, its payload no JSON object: an exception's type, never
    its text), None when it does. A damaged letter holds only its id, attempts and times (None where they are no
    number), and `text` says so."""
    chat_id: str = None  # type: ignore[assignment]  # filled in by `__post_init__` when not given
    text: str = None  # type: ignore[assignment]
    """The event's chat and text, read from ``payload`` once, as the row is (the console lists fifty letters at
    each refresh, and a payload can be 400 KB: read as properties, each was decoded three times); from ``payload``
    when a letter is built without them."""

    def __post_init__(self) -> None:
        if self.chat_id is None or self.text is None:
            event = {} if self.damaged else json.loads(self.payload)
            if self.chat_id is None:
                object.__setattr__(self, "chat_id", "" if self.damaged else str(event.get("chat_id", "")))
            if self.text is None:
                object.__setattr__(self, "text", _DAMAGED_TEXT if self.damaged else str(event.get("text", "")))


class DamagedLetter(GatewayError):
    """`DeadLetters.retry` of a letter that does not read back, or holds no event: it has none to hand back."""


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
        (`Inbox.requeue`) and forget it here, in one transaction. None for an unknown id; `DamagedLetter`, and
        the letter kept as it is, for one that does not read back or holds no event."""
        # Read in the transaction, which holds the file's write lock: another process (`switchboard inbox
        # retry`, the console of the running gateway) may hand the letter back or dismiss it between a read
        # before it and the write, and handed back again, an event the gateway took up since runs twice.
        with self._db.transaction():
            letter = self.get(letter_id)
            if letter is None:
                return None
            if why := letter.damaged or _no_event(letter.payload):
                raise DamagedLetter(f"dead letter {letter_id} could not be read back (a hand edit, a damaged write:"
                                    f" {why}) and has no event to hand back; it is kept as it is until dismissed")
            requeue(letter.platform, letter.event_id, letter.payload, letter.turn_id, letter.received_at)
            self._db.write("DELETE FROM gateway_dead_letters WHERE id=?", (letter_id,))
        return letter


def _letter(r: tuple) -> DeadLetter:
    """The letter of a `_COLUMNS` row; one that does not read back as a `DeadLetter.damaged` one: raised, it
    failed every list of them (`switchboard inbox dead`, the console's), and SQLite's error quoted its text."""
    letter_id, *columns = r
    try:
        platform, event_id, payload, turn_id, error, attempts, received_at, dead_at = map(text, columns)
        event = json.loads(payload)
        chat_id, shown = str(event.get("chat_id", "")), str(event.get("text", ""))
    except UNREADABLE as exc:
        attempts, received_at, dead_at = (v if isinstance(v, int | float) else None for v in columns[-3:])
        return DeadLetter(letter_id, "", "", "", None, _count(attempts), None, received_at, dead_at,
                          type(exc).__name__)
    # A time that is no number is kept as it is: the listing says so, and the next start mends it (`damaged_times`).
    return DeadLetter(letter_id, platform, event_id, payload, turn_id, _count(attempts), error, received_at, dead_at,
                      chat_id=chat_id, text=shown)


def _count(attempts: object) -> int | None:
    """A letter's attempts, None for what is no whole number (a text, a blob): printed, a hand edit's text could
    hold a terminal's control sequences."""
    return attempts if isinstance(attempts, int) else None


def _no_event(payload: str) -> str | None:
    """Why ``payload`` holds no event a retry can hand back (an exception's type); None when it holds one."""
    try:
        Inbound.from_json(json.loads(payload))
    except UNREADABLE as exc:
        return type(exc).__name__
    return None
