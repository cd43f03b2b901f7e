"""The outbox's rows: every outbound message part, journaled before it is sent.

A row is keyed by its idempotency key (journaling a key again is a no-op) and moves
from ``pending`` to one final status: ``sent`` (with the platform's message id),
``failed`` or ``dropped``. `gateway.outbox` decides what to send and when; this
module only stores (also when each platform held its parts for a refused token,
`gateway.credential_hold`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent import Clock
from gateway.graphemes import whole_prefix
from gateway.store.delegations import OWED_CARD_TURN
from gateway.store.unreadable_rows import LeftOut, as_bytes, text
from lifecycle import SqliteDatabase

RETENTION_SECONDS = 7 * 24 * 3600.0
"""Seconds to keep settled outbox rows: edits of older messages and replays of older keys
would find nothing (an edit then sends a new message; a replay sends again)."""

Status = Literal["pending", "sent", "failed", "dropped"]

UNSENT = "status = 'pending' AND op != 'split'"
"""The parts still to be sent (a re-split part stays pending while its pieces, journaled later, go out in its place):
the condition of the index ``gateway_outbox_unsent``, which SQLite reads only for a query that holds it as written.
Otherwise each part's row is read for its ``op``."""

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL UNIQUE, platform TEXT NOT NULL,
        chat_id TEXT NOT NULL, thread_id TEXT, kind TEXT NOT NULL, op TEXT NOT NULL, target_key TEXT,
        text, silent INTEGER NOT NULL, reply_token TEXT, turn_id TEXT, sequence INTEGER NOT NULL,
        status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL,
        created_at REAL NOT NULL, sent_at REAL, message_id TEXT, last_error TEXT, reply_to TEXT,
        tried INTEGER NOT NULL DEFAULT 1, first_journaled_at REAL, private INTEGER NOT NULL DEFAULT 0)""",
    # tried: a row journaled without saying so (an older build's) may have been tried
    "CREATE INDEX IF NOT EXISTS gateway_outbox_pending ON gateway_outbox (id) WHERE status = 'pending'",
    """CREATE INDEX IF NOT EXISTS gateway_outbox_chat_pending ON gateway_outbox (platform, chat_id, thread_id, id)
        WHERE status = 'pending'""",
    # Added to schema 11 without a new version, created where missing: `counts` and `pending_by_platform` read only
    # this index (the console up to ten times a second, /healthz's backlog), not each pending part's row.
    f"CREATE INDEX IF NOT EXISTS gateway_outbox_unsent ON gateway_outbox (platform, id) WHERE {UNSENT}",
    "CREATE INDEX IF NOT EXISTS gateway_outbox_turn ON gateway_outbox (platform, turn_id, sequence)",
    "CREATE INDEX IF NOT EXISTS gateway_outbox_created ON gateway_outbox (created_at)",
    "CREATE INDEX IF NOT EXISTS gateway_outbox_failed ON gateway_outbox (id) WHERE status = 'failed'",
    # Added to schema 11 without a new version, created where missing: the first start after the upgrade builds it
    # (1.5 s for 600,000 rows, a week of a busy gateway, read from the page cache; more from a cold disk), once.
    # `sent_answer` reads one entry of it, not the week of rows.
    """CREATE INDEX IF NOT EXISTS gateway_outbox_message ON gateway_outbox (platform, message_id)
        WHERE message_id IS NOT NULL""",
    # When each platform refused the bot's credentials (`gateway.credential_hold`), open while it still
    # does: a part's time held does not count toward giving up on it, before a restart either.
    """CREATE TABLE IF NOT EXISTS gateway_credential_holds (
        platform TEXT NOT NULL, since REAL NOT NULL, until REAL, PRIMARY KEY (platform, since))""",
    # The turns whose answer was what they sent (``send_message``, ``send_file``), by their answer's key
    # (`{turn}:reply`, `{turn}:completion`): no part, only a mark, apart from the parts so that nothing sending,
    # counting or listing them meets it. Added to schema 11 without a new version, as a table is: created where
    # missing. An older build that opens the file leaves it alone, and runs such a turn again as it did.
    "CREATE TABLE IF NOT EXISTS gateway_answered_by_sends (key TEXT PRIMARY KEY, created_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS gateway_answered_by_sends_created ON gateway_answered_by_sends (created_at)",
)
_COLUMNS = (f"id, {as_bytes('key', 'platform', 'chat_id', 'thread_id', 'kind', 'op', 'target_key', 'text')},"
            f" silent, {as_bytes('reply_token', 'turn_id')}, sequence, {as_bytes('status')}, attempts,"
            f" next_attempt_at, created_at, sent_at, {as_bytes('message_id', 'last_error', 'reply_to')}, tried,"
            " first_journaled_at, private")  # fmt: skip
"""A row's columns, its texts as bytes (`gateway.store.unreadable_rows`)."""
_text, _untext = SqliteDatabase.text, SqliteDatabase.untext


@dataclass(frozen=True, slots=True)
class NewMessage:
    """An outbox row to journal. ``sequence`` None: next in its turn (or 0 without a turn)."""

    key: str
    platform: str
    chat_id: str
    thread_id: str | None
    text: str
    kind: str = "reply"
    op: Literal["send", "edit", "delete", "file"] = "send"
    target_key: str | None = None
    silent: bool = False
    reply_token: str | None = None
    turn_id: str | None = None
    sequence: int | None = None
    reply_to: str | None = None
    """The platform id of the user's message this part answers (`platforms.base.Outbound.reply_to`)."""
    tried: bool = False
    """Journaled as tried (`OutboxRow.tried`): it goes out at once, so marking it costs no commit of its own."""
    private: bool = False
    """For the command's user alone (`platforms.base.Outbound.private`)."""


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
    """'send', 'edit', 'delete' (of ``target_key``; ``text`` is the edit to make instead where the
    platform cannot delete), 'file' (upload the copy `gateway.outbox_files` keeps under ``key``,
    ``text`` its caption), or 'split' (replaced by its pieces ``key/a``, ``key/b``...)."""
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
    reply_to: str | None
    """The platform id of the user's message this part quotes, if any."""
    tried: bool
    """An attempt to post it may have begun (`OutboxRows.mark_tried`, committed before the call; or it was
    journaled so, about to go at once): a part without it cannot have reached the platform."""
    first_journaled_at: float | None = None
    """When it was first journaled, once the operator re-queued it (`OutboxRows.requeue` moves ``created_at``,
    where its give-up clock starts); None: never re-queued, ``created_at`` is that time."""
    private: bool = False
    """An answer through ``reply_token`` for the command's user alone (`platforms.base.Outbound.private`)."""

    @property
    def lookup_since(self) -> float:
        """Where a lookup of whether it went out already starts (`platforms.base.FindsSent`): when it was
        first journaled. Stored, not remembered: a lookup after a restart that started at the re-queue
        would miss a post from before it, and post it twice."""
        return self.created_at if self.first_journaled_at is None else self.first_journaled_at

    @property
    def chat(self) -> tuple[str, str, str | None]:
        return (self.platform, self.chat_id, self.thread_id)


def _outbox_row(r: tuple) -> OutboxRow:
    """The row `_COLUMNS` read, its texts decoded (`_decoded`)."""
    return OutboxRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10], r[11],
                     r[12], r[13], r[14], r[15], r[16], r[17], r[18], r[19], r[20], bool(r[21]),
                     r[22], bool(r[23]))  # fmt: skip


def _decoded(r: tuple) -> tuple:
    """A row read with texts as bytes (`as_bytes`), decoded: UnicodeDecodeError, never quoting them, when one holds
    no UTF-8."""
    return tuple(text(value) for value in r)


class OutboxRows:
    def __init__(self, db: SqliteDatabase, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._left_out = LeftOut("gateway_outbox")

    def _rows(self, rows: list[tuple]) -> list[OutboxRow]:
        return [_outbox_row(r) for r in self._readable(rows)]

    def _readable(self, rows: list[tuple]) -> list[tuple]:
        """The ``rows`` (an id, then columns read as `as_bytes`) whose texts read back, decoded. One that does not is
        left out (`LeftOut`), by its id: raised, it stopped every start (the pending parts) and the console's lists,
        for every chat."""
        readable, left_out = [], {}
        for r in rows:
            try:
                readable.append(_decoded(r))
            except UnicodeDecodeError as exc:
                left_out[f"id {r[0]}"] = type(exc).__name__
        if left_out:
            self._left_out.report(left_out)
        return readable

    def add_reply_to(self) -> None:
        """Schema < 6: each part may quote the user's message it answers (none for the existing ones)."""
        columns = {r[1] for r in self._db.read("PRAGMA table_info(gateway_outbox)")}
        if "reply_to" not in columns:
            self._db.write("ALTER TABLE gateway_outbox ADD COLUMN reply_to TEXT")

    def add_tried(self) -> None:
        """Schema < 7: each part records whether an attempt to post it may have begun. Nothing said so
        before, so every existing part counts as tried (the column's default: no row is rewritten): the
        process that journaled one still pending may have died sending it, and on Slack it is looked
        up before it is posted, as every such part was."""
        columns = {r[1] for r in self._db.read("PRAGMA table_info(gateway_outbox)")}
        if "tried" not in columns:
            self._db.write("ALTER TABLE gateway_outbox ADD COLUMN tried INTEGER NOT NULL DEFAULT 1")

    def add_first_journaled(self) -> None:
        """Schema < 10: a re-queued part keeps when it was first journaled (`OutboxRow.first_journaled_at`).
        An older build overwrote that time at the re-queue: its re-queued parts are looked up from then, as
        that build did once restarted; no other time is left to start from."""
        columns = {r[1] for r in self._db.read("PRAGMA table_info(gateway_outbox)")}
        if "first_journaled_at" not in columns:
            self._db.write("ALTER TABLE gateway_outbox ADD COLUMN first_journaled_at REAL")

    def add_private(self) -> None:
        """Schema < 11: a part records whether it is for its command's user alone (`OutboxRow.private`). An
        older build kept that in memory only: its parts are not, and one pending goes as that build's would
        have after a restart (in place of a Discord command's "thinking…", seen by its channel)."""
        columns = {r[1] for r in self._db.read("PRAGMA table_info(gateway_outbox)")}
        if "private" not in columns:
            self._db.write("ALTER TABLE gateway_outbox ADD COLUMN private INTEGER NOT NULL DEFAULT 0")

    def commit(self) -> None:
        """Commit what is journaled now: the sender calls this right before every send."""
        self._db.commit()

    def told_down(self, exc: BaseException) -> bool:
        """Whether ``exc`` is SQLite's while the database itself says once, for every chat it holds back, why it
        cannot be written: the file refused (a full disk, a failing device: `SqliteDatabase.write_error`), or
        another process holds its write lock."""
        return isinstance(exc, sqlite3.OperationalError) and (
            self._db.write_error is not None or self._db.write_lock_held_since is not None)

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """Writes that stand or fall together (`SqliteDatabase.transaction`): a part's failure and the note
        journaled in its place, say."""
        return self._db.transaction()

    def add_messages(self, messages: Sequence[NewMessage]) -> list[int | None]:
        """Journal the rows in one transaction, each pending, in order. A key already journaled is
        left as it is (None in the result); a new row gets its id. A None sequence becomes the
        next in the row's turn (one past the turn's highest), or 0 without a turn."""
        now = self._clock.time()
        # One row needs no savepoint: a single statement stands or falls by itself.
        with self._db.transaction() if len(messages) > 1 else contextlib.nullcontext():
            return [self._insert_message(m, now) for m in messages]

    def add_new_messages(self, messages: Sequence[NewMessage]) -> list[int | None] | None:
        """`add_messages` for the parts of one message, first part first: None, adding nothing,
        when the first part's key is already journaled (the whole message was, earlier)."""
        now = self._clock.time()
        with self._db.transaction() if len(messages) > 1 else contextlib.nullcontext():
            first = self._insert_message(messages[0], now)
            if first is None:
                return None
            return [first, *(self._insert_message(m, now) for m in messages[1:])]

    def _insert_message(self, m: NewMessage, now: float) -> int | None:
        cur = self._db.write(
            "INSERT OR IGNORE INTO gateway_outbox (key, platform, chat_id, thread_id, kind, op, target_key,"
            " text, silent, reply_token, turn_id, sequence, status, created_at, reply_to, tried, private) VALUES"
            " (?,?,?,?,?,?,?,?,?,?,?, COALESCE(?, (SELECT COALESCE(MAX(sequence) + 1, 0) FROM gateway_outbox"
            "  WHERE platform=? AND turn_id=?), 0), 'pending', ?, ?, ?, ?)",
            (m.key, m.platform, m.chat_id, m.thread_id, m.kind, m.op, m.target_key, _text(m.text),
             int(m.silent), m.reply_token, m.turn_id, m.sequence, m.platform, m.turn_id, now, m.reply_to, int(m.tried),
             int(m.private)))  # fmt: skip
        return cur.lastrowid if cur.rowcount == 1 else None

    def add_answered_by_sends(self, key: str) -> None:
        """The turn whose answer is keyed ``key`` ended with no answer of its own: what it sent was its answer. A
        mark, no part: nothing is sent for it. Marking it again changes nothing."""
        self._db.write("INSERT OR IGNORE INTO gateway_answered_by_sends (key, created_at) VALUES (?, ?)",
                       (key, self._clock.time()))

    def answered_by_sends(self, key: str) -> bool:
        """Whether `add_answered_by_sends` marked ``key`` (and it is not yet pruned)."""
        return self._db.read_one("SELECT 1 FROM gateway_answered_by_sends WHERE key=?", (key,)) is not None

    def texts_under(self, prefix: str) -> list[tuple[str, str]]:
        """The key and text of every row whose key begins with ``prefix``, in journal (id) order."""
        # A range on the unique index, as `pieces` reads: LIKE would be case-insensitive and scan.
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self._db.read(f"SELECT id, {as_bytes('key', 'text')} FROM gateway_outbox WHERE key >= ? AND key < ?"
                             " ORDER BY id", (prefix, end))
        return [(key, body) for _, key, body in self._readable(rows)]

    def message(self, key: str) -> OutboxRow | None:
        row = self._db.read_one(f"SELECT {_COLUMNS} FROM gateway_outbox WHERE key=?", (key,))
        return None if row is None else _outbox_row(_decoded(row))

    def has_message(self, key: str) -> bool:
        return self._db.read_one("SELECT 1 FROM gateway_outbox WHERE key=?", (key,)) is not None

    def message_by_id(self, row_id: int) -> OutboxRow | None:
        row = self._db.read_one(f"SELECT {_COLUMNS} FROM gateway_outbox WHERE id=?", (row_id,))
        return None if row is None else _outbox_row(_decoded(row))

    def pieces(self, key: str) -> list[OutboxRow]:
        """The rows a split replaced ``key`` with (``key/a``, ``key/b``...), in order."""
        # A range on the unique index: '/' + 1 == '0'. LIKE would be case-insensitive and scan.
        rows = self._db.read(f"SELECT {_COLUMNS} FROM gateway_outbox WHERE key >= ? AND key < ?"
                                " AND instr(substr(key, ?), '/') = 0 ORDER BY id",
                                (key + "/", key + "0", len(key) + 2))  # fmt: skip
        return self._rows(rows)

    def sent_progress(self, key: str) -> list[OutboxRow]:
        """The sent rows of the progress message ``key`` (``{key}:0``) and of its edits (``{key}-edit-…``),
        parts and re-split pieces, in journal order (split rows aside: their pieces stand for them)."""
        rows = self._db.read(f"SELECT {_COLUMNS} FROM gateway_outbox WHERE ((key >= ? AND key < ?) OR (key >= ?"
                             " AND key < ?)) AND kind='notice' AND status='sent' AND message_id IS NOT NULL"
                             " AND op != 'split' ORDER BY id",  # ranges on the unique index: ':' + 1 == ';'
                             (f"{key}:", f"{key};", f"{key}-edit-", f"{key}-edit."))
        return self._rows(rows)

    def sent_progress_extras(self) -> list[str]:
        """The keys of sent progress rows that are neither a message's first part (``…:0``) nor the first piece
        of one (``…:0/a``, ``…:0/a/a``): those `gateway.resplit.past_the_first` may count as a message past the
        first (it decides). Only an older build sent such rows: on a state file this build wrote, none.
        One scan of the table (no index covers it): ask once, not at every card's end."""
        # A key ends in ':0' and '/a's when trimming the '/a's leaves ':0' and what was trimmed is '/a's only.
        rows = self._db.read(f"SELECT id, {as_bytes('key')} FROM gateway_outbox WHERE kind='notice' AND status='sent'"
                             " AND message_id IS NOT NULL AND op != 'split' AND NOT (rtrim(key, '/a') GLOB '*:0'"
                             " AND replace(substr(key, length(rtrim(key, '/a')) + 1), '/a', '') = '')")
        return [key for _, key in self._readable(rows)]

    def sent_answer(self, platform: str, message_id: str) -> bool:
        """Whether the platform's message ``message_id`` is one a part (not a command's answer) went out as, while its
        row is kept (`RETENTION_SECONDS`): a Discord thread opened on it is the bot's (`platforms.base.AnswerLookup`).
        One entry of the index ``gateway_outbox_message``, which ``message_id = ?`` lets SQLite read."""
        return self._db.read_one("SELECT 1 FROM gateway_outbox WHERE platform=? AND message_id=? AND kind != 'command'"
                                 " LIMIT 1", (platform, message_id)) is not None

    def last_id(self) -> int:
        """The highest id journaled so far (0 for none). Ids only grow (AUTOINCREMENT never reuses one),
        so a row above it was journaled later."""
        return self._db.read_one("SELECT COALESCE(MAX(id), 0) FROM gateway_outbox")[0]

    def pending_messages(self, chat: tuple[str, str, str | None] | None = None) -> list[OutboxRow]:
        """Pending rows, of one chat (platform, chat_id, thread_id) or all, in journal (id) order."""
        if chat is None:
            rows = self._db.read(f"SELECT {_COLUMNS} FROM gateway_outbox WHERE status='pending' ORDER BY id")
        else:
            rows = self._db.read(f"SELECT {_COLUMNS} FROM gateway_outbox WHERE status='pending' AND platform=?"
                                    " AND chat_id=? AND thread_id IS ? ORDER BY id", chat)  # fmt: skip
        return self._rows(rows)

    def journaled_since(self, since: float, kind: str) -> list[OutboxRow]:
        """The rows of ``kind`` journaled at or after the epoch time ``since``, oldest first."""
        rows = self._db.read(f"SELECT {_COLUMNS} FROM gateway_outbox WHERE created_at >= ? AND kind=? ORDER BY id",
                             (since, kind))
        return self._rows(rows)

    def pending_chats(self) -> set[tuple[str, str, str | None]]:
        """The chats (platform, chat_id, thread_id) with a pending row."""
        rows = self._db.read(f"SELECT MIN(id), {as_bytes('platform', 'chat_id', 'thread_id')} FROM gateway_outbox"
                             " WHERE status='pending' GROUP BY platform, chat_id, thread_id")
        return {(platform, chat_id, thread_id) for _, platform, chat_id, thread_id in self._readable(rows)}

    def mark_tried(self, row_id: int) -> None:
        """An attempt to post the row is about to begin. The sender commits this before the call, so
        a part the platform may have taken is never left unmarked, whatever crash comes between."""
        self._db.write("UPDATE gateway_outbox SET tried=1 WHERE id=?", (row_id,))

    def record_attempt(self, row_id: int, error: str, next_attempt_at: float | None) -> None:
        """A retryable failure: count it; the row stays pending."""
        self._db.write("UPDATE gateway_outbox SET attempts=attempts+1, last_error=?, next_attempt_at=? WHERE id=?",
                         (_text(whole_prefix(error, 500)), next_attempt_at, row_id))  # fmt: skip

    def mark_sent(self, row_id: int, message_id: str | None, *, attempted: bool = True) -> None:
        """Sent: final, whatever the row's status was (a row dropped while in flight did go out)."""
        self._db.write("UPDATE gateway_outbox SET status='sent', message_id=?, sent_at=?, attempts=attempts+?,"
                         " next_attempt_at=NULL WHERE id=?",
                         (message_id, self._clock.time(), int(attempted), row_id))  # fmt: skip

    def mark_failed(self, row_id: int, error: str, *, maybe_sent: bool = True) -> None:
        """Failed for good. ``maybe_sent`` False: every attempt at it was answered, none took it, so it is
        no longer ``tried``: it cannot be in the chat, and nothing asks the platform for it (a card
        withdrawn, `gateway.outbox.Outbox.withdraw`; the operator's retry). One given up on while its
        answers were lost stays tried: it may be in the chat."""
        self._db.write("UPDATE gateway_outbox SET status='failed', attempts=attempts+1, last_error=?,"
                       " next_attempt_at=NULL, tried=tried AND ? WHERE id=? AND status='pending'",
                       (_text(whole_prefix(error, 500)), int(maybe_sent), row_id))

    def sent_quoting(self, platform: str, turn_id: str, reply_to: str) -> list[str]:
        """The keys of the turn's parts that went out quoting ``reply_to``."""
        return [r[0] for r in self._db.read("SELECT key FROM gateway_outbox WHERE platform=? AND turn_id=?"
                                            " AND status='sent' AND reply_to=?", (platform, turn_id, reply_to))]

    def quote_next(self, row: OutboxRow) -> bool:
        """The next pending part of ``row``'s turn in its chat that sends a message (not a progress one)
        quotes what ``row`` quotes, unless it quotes a message already. False when the turn has no
        such part (yet)."""
        nxt = self._db.read_one(
            "SELECT id, reply_to FROM gateway_outbox WHERE status='pending' AND platform=? AND chat_id=?"
            " AND thread_id IS ? AND id>? AND turn_id=? AND op IN ('send', 'file') AND kind != 'notice'"
            " ORDER BY id LIMIT 1", (row.platform, row.chat_id, row.thread_id, row.id, row.turn_id))
        if nxt is None:
            return False
        if nxt[1] is None:
            self._db.write("UPDATE gateway_outbox SET reply_to=? WHERE id=?", (row.reply_to, nxt[0]))
        return True

    def set_op(self, row_id: int, op: Literal["send", "edit", "split"]) -> None:
        """An edit falling back to a new message becomes 'send', a refused delete 'edit'; a
        re-split row becomes 'split'."""
        self._db.write("UPDATE gateway_outbox SET op=? WHERE id=?", (op, row_id))

    def set_message_id(self, key: str, message_id: str) -> None:
        """Point ``key`` at another platform message (an edit's fallback), so later edits edit that."""
        self._db.write("UPDATE gateway_outbox SET message_id=? WHERE key=?", (message_id, key))

    def drop(self, row_ids: Sequence[int]) -> list[int]:
        """Mark these rows dropped where still pending; returns the ids that were."""
        dropped = []
        with self._db.transaction():
            for row_id in row_ids:
                cur = self._db.write("UPDATE gateway_outbox SET status='dropped' WHERE id=? AND status='pending'",
                                       (row_id,))  # fmt: skip
                if cur.rowcount:
                    dropped.append(row_id)
        return dropped

    def requeue(self, row_id: int) -> OutboxRow | None:
        """A failed row back to pending, as if journaled now (attempts from zero, so its give-up
        clock restarts), though still ``tried`` if it was: one given up on after an outage of lost
        answers may be in the chat, and is looked up from when it was first journaled (kept in
        ``first_journaled_at``, also through a second re-queue). None, changing nothing, unless it was failed."""
        # SQLite's SET reads the row as it was: COALESCE takes the created_at being replaced.
        cur = self._db.write("UPDATE gateway_outbox SET status='pending', attempts=0, next_attempt_at=NULL,"
                             " last_error=NULL, first_journaled_at=COALESCE(first_journaled_at, created_at),"
                             " created_at=? WHERE id=? AND status='failed' AND op != 'split'",
                             (self._clock.time(), row_id))
        return self.message_by_id(row_id) if cur.rowcount == 1 else None

    def dismiss(self, row_id: int) -> bool:
        """Mark a failed row dropped: the operator gave up on it. False unless it was failed."""
        return self._db.write("UPDATE gateway_outbox SET status='dropped' WHERE id=? AND status='failed'",
                              (row_id,)).rowcount == 1

    def kept_files(self) -> list[str]:
        """Keys of the file sends still pending or failed: their copies are kept."""
        # One status at a time, each through its partial index: asked at every retention sweep, an IN read the
        # week of sent rows on the event loop (some 60 ms at 200,000).
        return [key for _, key in self._readable(self._db.read(
            f"SELECT id, {as_bytes('key')} FROM gateway_outbox WHERE status='pending' AND op='file' UNION ALL"
            f" SELECT id, {as_bytes('key')} FROM gateway_outbox WHERE status='failed' AND op='file'"))]

    def counts(self) -> dict[str, int]:
        """How many parts are ``pending`` and ``failed`` (within retention), split rows aside."""
        # Each through its status' partial index, not the week of sent rows (the console asks up to ten times a
        # second, Prometheus at every scrape). Summed per platform: a plain COUNT(*) SQLite takes through
        # ``gateway_outbox_pending``, reading each part's row for its op.
        failed = self._db.read_one("SELECT COUNT(*) FROM gateway_outbox WHERE status='failed' AND op != 'split'")[0]
        return {"pending": sum(self.pending_by_platform().values()), "failed": failed}

    def pending_by_platform(self) -> dict[str, int]:
        """How many parts are ``pending``, split rows aside, per platform: counted in ``gateway_outbox_unsent`` alone,
        no part's row read (some 20-30 ms at 100,000)."""
        rows = self._db.read(f"SELECT platform, COUNT(*) FROM gateway_outbox WHERE {UNSENT} GROUP BY platform")
        return {str(platform): count for platform, count in rows}

    def first_pending(self, platforms: Collection[str]) -> tuple[int, float] | None:
        """The id and ``created_at`` of the first journaled part still to be sent of ``platforms`` (split rows
        aside); None when none is. One look into ``gateway_outbox_unsent`` per platform, however many parts wait."""
        if not platforms:
            return None
        firsts = " UNION ALL ".join([f"SELECT MIN(id) AS id FROM gateway_outbox WHERE {UNSENT} AND platform=?"]
                                    * len(platforms))
        return self._db.read_one(f"SELECT id, created_at FROM gateway_outbox WHERE id=(SELECT MIN(id) FROM ({firsts}))",
                                 list(platforms))

    def with_status(self, status: Status, limit: int) -> list[OutboxRow]:
        """The newest ``limit`` rows in ``status``, newest first (split rows aside: their pieces stand for them)."""
        rows = self._db.read(f"SELECT {_COLUMNS} FROM gateway_outbox WHERE status=? AND op != 'split'"
                             " ORDER BY id DESC LIMIT ?", (status, limit))
        return self._rows(rows)

    def turn_messages(self, platform: str, turn_id: str) -> list[dict[str, Any]]:
        """Every message of a turn, in sequence order (the pieces of a split row, which share
        its sequence and sort by key, in its place). Each a dict of key, chat_id, thread_id,
        kind, op ('send', or 'edit' of ``target_key``), text, status, sequence, message_id,
        created_at and sent_at."""
        rows = self._db.read(
            "SELECT key, chat_id, thread_id, kind, op, target_key, text, status, sequence, message_id, created_at,"
            " sent_at"
            " FROM gateway_outbox WHERE platform=? AND turn_id=? AND op != 'split' ORDER BY sequence, key",
            (platform, turn_id))  # fmt: skip
        names = ("key", "chat_id", "thread_id", "kind", "op", "target_key", "text", "status", "sequence",
                 "message_id", "created_at", "sent_at")
        return [dict(zip(names, (*r[:6], _untext(r[6]), *r[7:]), strict=True)) for r in rows]

    def hold_periods(self, platform: str | None = None) -> list[tuple[str, float, float | None]]:
        """The periods (platform, since, until) a platform held its parts for a refused token, oldest
        first; until None: it still does (also when the last process stopped while it did)."""
        where, args = ("WHERE platform=?", (platform,)) if platform is not None else ("", ())
        return [(r[0], r[1], r[2]) for r in self._db.read(
            f"SELECT platform, since, until FROM gateway_credential_holds {where} ORDER BY since", args)]

    def begin_hold(self, platform: str, since: float) -> None:
        """The platform began to hold its parts at the epoch time ``since`` (the wall clock: the
        periods outlive the process, and its monotonic clock). One still open had ended by then, its
        end unrecorded (`CredentialHolds` logs a refused write and goes on): left open, it would be
        counted twice, and restored twice by the next start, one of them never ending."""
        with self._db.transaction():
            self._db.write("UPDATE gateway_credential_holds SET until=? WHERE platform=? AND until IS NULL"
                           " AND since < ?", (since, platform, since))
            self._db.write("INSERT OR IGNORE INTO gateway_credential_holds (platform, since) VALUES (?, ?)",
                           (platform, since))

    def end_hold(self, platform: str, until: float) -> None:
        """The platform's open hold ended at ``until``; periods no pending part of it overlaps are forgotten."""
        with self._db.transaction():
            self._db.write("UPDATE gateway_credential_holds SET until=? WHERE platform=? AND until IS NULL",
                           (until, platform))
            self._db.write("DELETE FROM gateway_credential_holds WHERE platform=? AND until < COALESCE((SELECT"
                           " MIN(created_at) FROM gateway_outbox WHERE platform=? AND status='pending'), ?)",
                           (platform, platform, until + 1))

    def prune(self, older_than: float, limit: int | None = None) -> int:
        """Delete settled rows created before the epoch time ``older_than`` (see `RETENTION_SECONDS`);
        pending rows are kept, and so is a message an edit or deletion still to be sent is of (its
        ``target_key``), or still to be journaled (the card of a delegation whose card is owed its final
        edit, `delegations.OWED_CARD_TURN`): a card's final edit waits as long as its platform takes
        nothing (tried until taken), or is not configured, and with its message forgotten it would find no
        message id and be sent anew, the card left reading as running. At most ``limit``, oldest first
        (all by default), and as many marks of turns answered by their sends (`add_answered_by_sends`), kept as
        long as a reply's parts are. Returns the count."""
        marks = self._db.write("DELETE FROM gateway_answered_by_sends WHERE rowid IN (SELECT rowid FROM"
                               " gateway_answered_by_sends WHERE created_at < ? ORDER BY created_at LIMIT ?)",
                               (older_than, -1 if limit is None else limit)).rowcount
        rows = self._db.write("DELETE FROM gateway_outbox WHERE id IN (SELECT id FROM gateway_outbox"
                              " WHERE created_at < ? AND status != 'pending' AND key NOT IN (SELECT target_key"
                              " FROM gateway_outbox WHERE status = 'pending' AND target_key IS NOT NULL)"
                              f" AND NOT coalesce({OWED_CARD_TURN}, 0)"
                              " ORDER BY created_at, id LIMIT ?)",
                              (older_than, -1 if limit is None else limit)).rowcount
        return marks + rows
