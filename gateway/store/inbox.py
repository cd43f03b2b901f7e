"""The durable inbox: every platform event, remembered before it is handled.

An event moves through two calls. `Inbox.accept` records it (with the turn it is
to start, or None when it starts none) before anything else happens, and tells a
redelivery apart from a new event in the same statement (for one with aliases, below, in the same
few, with nothing else in between). `Inbox.settle` marks it
handled once its outcome is safe: a command answered, a refusal queued, a turn's
reply journaled. An event accepted but never settled is replayed after a restart
(`Inbox.unfinished`), keeping the turn id it was given. In between, `Inbox.begin` marks
it ``begun`` once the turn that handles it starts: a gateway that dies then counts as a
failed attempt of that event, not of those still waiting for their turns (`Inbox.begun`), nor
of those whose turn waits for the chat's answer to a question while no child it launched runs here
(unmarked meanwhile, `Inbox.reopen`), nor of a command that has run and whose answer waits for its chat's earlier
commands: that answer is kept with the event (`Inbox.keep_answer`), for the event handled again after a crash.

An event may stand for several platform events that can be delivered again apart (a Telegram
album, one update per item: `Inbound.aliases`). Their ids are recorded with it, in the same commit
(``gateway_inbox_aliases``), and forgotten with it: a delivery all of whose ids are recorded, as an
event's or as an alias, is a redelivery.

An event that fails to be handled is counted (`Inbox.failed`); after too many
failures it is set aside as a dead letter (`gateway.store.dead_letters`) and stays
in the inbox as ``dead``, so a redelivery is still a duplicate and no start ever
replays it into a crash again. ``switchboard inbox retry`` re-queues it:
``requeued`` until the running gateway (or the next start) takes it up.

Telegram numbers each bot's updates on its own, so its adapter keys an event ``<bot id>:<update id>``
(`platforms.telegram`): a new bot token on the same state directory is never taken for the old bot, whose update
ids it may reuse. Earlier versions recorded the bare update id, and Telegram serves again, after the upgrade, the
updates the stop left unconfirmed (a webhook's, those it was not answered for): `BareTelegramIds` finds the bare
event such a repeat is, so that it is not answered twice. Nothing recorded says whose bare ids are: they are taken
for the bot whose event, keyed by its id, is the first the upgraded gateway looks up while bare ids are about,
written down once (``gateway_meta``): the bot it was upgraded with, whose pending updates Telegram serves first.
Another bot's events never read them, also on the day of the upgrade. Only those recorded within
`REDELIVERED_WITHIN` count: Telegram keeps an update a day, and nothing older comes again; after that no event looks
any up, and no new bare id is ever recorded.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from agent import Clock
from gateway.graphemes import whole_prefix
from gateway.logging import redacted_bounded
from gateway.store.unreadable_rows import UNREADABLE, LeftOut, as_bytes, row_name, text
from lifecycle import SqliteDatabase
from platforms.base import Inbound

RETENTION_SECONDS = 7 * 24 * 3600.0
"""Seconds to remember a platform event id. Redeliveries come within minutes (Slack retries,
webhook retries) to a day (Telegram keeps updates 24 h); a week covers them all."""
SENT_MARGIN = 1.0
"""Seconds a message must be dated by its platform before a moment (a running turn's start, a question's) to
count as sent before it (`Inbox.sent_before`): Telegram dates messages in whole seconds, so one written just
after may seem a little older. The gateway's own receipt needs none."""

OPEN = "status IN ('received', 'begun', 'requeued')"
"""The events waiting to be handled: the condition of the indexes ``gateway_inbox_open`` and
``gateway_inbox_open_platform``. SQLite reads a partial index only for a query whose WHERE holds its condition as
written, so each query of some of these events holds it too, by this name (`gateway.store.sessions.SessionTable.forget`
keeps the chats they wait in): else it reads the whole inbox, a week of handled events, at every start and every few
seconds."""

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_inbox (
        platform TEXT NOT NULL, event_id TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL,
        received_at REAL NOT NULL, turn_id TEXT, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT,
        PRIMARY KEY (platform, event_id))""",
    "CREATE INDEX IF NOT EXISTS gateway_inbox_received ON gateway_inbox (received_at)",
    f"CREATE INDEX IF NOT EXISTS gateway_inbox_open ON gateway_inbox (received_at) WHERE {OPEN}",
    # Added to schema 11 without a new version, created where missing: `waiting_by_platform` and `first_waiting`
    # read only this index (the backlog in /healthz, every second at most), not each waiting event's row.
    f"CREATE INDEX IF NOT EXISTS gateway_inbox_open_platform ON gateway_inbox (platform, received_at) WHERE {OPEN}",
    "CREATE INDEX IF NOT EXISTS gateway_inbox_turn ON gateway_inbox (platform, turn_id) WHERE turn_id IS NOT NULL",
    # Added to schema 8 without a new version, as a table is: created where missing. An older build that
    # opens the file only leaves the aliases of the events it forgets behind, naming ids that were handled.
    """CREATE TABLE IF NOT EXISTS gateway_inbox_aliases (
        platform TEXT NOT NULL, alias TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (platform, alias))""",
    "CREATE INDEX IF NOT EXISTS gateway_inbox_aliases_event ON gateway_inbox_aliases (platform, event_id)",
    # Added to schema 11 without a new version, as a table is: created where missing. An older build that opens the
    # file runs such a command again, as it did.
    """CREATE TABLE IF NOT EXISTS gateway_inbox_answers (
        platform TEXT NOT NULL, event_id TEXT NOT NULL, answer NOT NULL, PRIMARY KEY (platform, event_id))""",
)


@dataclass(frozen=True, slots=True)
class Acceptance:
    new: bool
    """False for a redelivery of an event already recorded: nothing was changed."""
    turn_id: str | None
    """The turn the event starts: the one just given for a new event, the one recorded first for a
    redelivery. None when it starts none (a command, a refusal)."""
    recorded_as: Inbound | None = None
    """A new event as recorded, when that differs from the one given: under its first id not recorded
    yet, as some of its ids were (see `Inbox.accept`). None: recorded as given."""


_text, _untext = SqliteDatabase.text, SqliteDatabase.untext
_EVENT = f"{as_bytes('payload', 'turn_id', 'platform', 'event_id')}, received_at, rowid"
"""An event to hand over (`Inbox._events`), read as bytes: one a hand edit left no UTF-8 would fail the read."""


class Inbox:
    def __init__(self, db: SqliteDatabase, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._left_out = LeftOut("gateway_inbox")
        self._bare = BareTelegramIds(db, clock)

    def accept(self, inbound: Inbound, turn_id: str | None) -> Acceptance:
        """Record the event, unsettled, with the turn it is to start. Idempotent per
        (platform, event id): a redelivery changes nothing and gets the first turn id back.

        An event with aliases is recorded with them, and is a redelivery when each of its ids is
        recorded (as an event's id or an alias of one); it gets the turn of the event its own id
        names. When only some are (a Telegram album delivered again, gathered with an item never
        recorded), it is new, recorded under its first id not recorded (`Acceptance.recorded_as`): which
        part of the message the known ids stand for cannot be told, and answering them twice is
        better than losing the rest. An event without aliases costs no more than one statement (but a Telegram
        event on the day of the upgrade that keyed them by bot, which may repeat one recorded by its bare update
        id: `BareTelegramIds`)."""
        if (bare := self._bare.event_of(inbound)) is not None:
            return Acceptance(False, self.turn_of(inbound.platform, bare))
        if not inbound.aliases:
            cur = self._record(inbound, turn_id)
            if cur.rowcount == 1:
                return Acceptance(True, turn_id)
            return Acceptance(False, self.turn_of(inbound.platform, inbound.event_id))
        ids = list(dict.fromkeys((inbound.event_id, *inbound.aliases)))
        known = self._events_of(inbound.platform, ids)
        unknown = [i for i in ids if i not in known]
        if not unknown:
            return Acceptance(False, self.turn_of(inbound.platform, known[inbound.event_id]))
        recorded_as = None
        if unknown[0] != inbound.event_id:
            recorded_as = inbound = dataclasses.replace(inbound, event_id=unknown[0])
        with self._db.transaction():
            self._record(inbound, turn_id)  # new: nothing ran since its ids were found unknown
            self._record_aliases(inbound.platform, inbound.event_id, ids)
        return Acceptance(True, turn_id, recorded_as)

    def _record(self, inbound: Inbound, turn_id: str | None) -> sqlite3.Cursor:
        return self._db.write("INSERT OR IGNORE INTO gateway_inbox (platform, event_id, payload, status, received_at,"
                              " turn_id) VALUES (?, ?, ?, 'received', ?, ?)",
                              (_text(inbound.platform), _text(inbound.event_id), json.dumps(inbound.to_json()),
                               self._clock.time(), turn_id))

    def _record_aliases(self, platform: str, event_id: str, aliases: Sequence[str]) -> None:
        """An id already recorded as another event's alias stays that event's: a redelivery of it
        names the turn it was first handled in."""
        rows = [(_text(platform), _text(alias), _text(event_id)) for alias in aliases if alias != event_id]
        if rows:
            self._db.write_many("INSERT OR IGNORE INTO gateway_inbox_aliases (platform, alias, event_id)"
                                " VALUES (?, ?, ?)", rows)

    def _events_of(self, platform: str, ids: Sequence[str]) -> dict[str, str]:
        """Which of ``ids`` are recorded, each with the id of the event it is, or is an alias of."""
        marks, bound = ", ".join("?" * len(ids)), (_text(platform), *map(_text, ids))
        found = {_untext(event_id): _untext(event_id) for (event_id,) in self._db.read(
            f"SELECT event_id FROM gateway_inbox WHERE platform=? AND event_id IN ({marks})", bound)}
        for alias, event_id in self._db.read(
                f"SELECT alias, event_id FROM gateway_inbox_aliases WHERE platform=? AND alias IN ({marks})", bound):
            found.setdefault(_untext(alias), _untext(event_id))
        return found

    def settle(self, platform: str, event_id: str, *, into_turn: str | None = None) -> None:
        """The event is handled: it is not replayed after a restart. ``into_turn``: it was handled
        within that running turn (an answer to its question), which a redelivery then names
        instead of the unused one `accept` gave it; a command answer kept for it (`keep_answer`), there for a replay
        only, goes with it. Idempotent."""
        key = (_text(platform), _text(event_id))
        with self._db.transaction():
            self._db.write("UPDATE gateway_inbox SET status='done', turn_id=COALESCE(?, turn_id)"
                           " WHERE platform=? AND event_id=?", (into_turn, *key))
            self._db.write("DELETE FROM gateway_inbox_answers WHERE platform=? AND event_id=?", key)

    def begin(self, platform: str, event_id: str) -> None:
        """The turn that handles the event starts (or the event was handed to a running turn, or
        the turn goes on after waiting for the answer to its question). The caller makes it durable
        before the turn goes on, so that a death from then on is charged to this event (`begun`),
        and not to those still waiting for their turns."""
        self._db.write("UPDATE gateway_inbox SET status='begun' WHERE platform=? AND event_id=? AND status='received'",
                       (_text(platform), _text(event_id)))

    def keep_answer(self, platform: str, event_id: str, answer: str) -> None:
        """The event's command has run and gave ``answer``, which waits for its chat's earlier commands
        (`gateway.command_answers`): handled again after a crash, the event is answered with it (`kept_answer`),
        the command not run again. The event waits for its turn meanwhile, as after `reopen`: a death then is no
        fault of it. Together, in one commit."""
        key = (_text(platform), _text(event_id))
        with self._db.transaction():
            self._db.write("INSERT OR REPLACE INTO gateway_inbox_answers (platform, event_id, answer) VALUES (?, ?, ?)",
                           (*key, _text(answer)))
            self._db.write("UPDATE gateway_inbox SET status='received' WHERE platform=? AND event_id=?"
                           " AND status='begun'", key)

    def kept_answer(self, platform: str, event_id: str) -> str | None:
        """The answer `keep_answer` kept for the event; None for none, or for one that no longer reads back (a hand
        edit): its command runs again."""
        row = self._db.read_one(f"SELECT {as_bytes('answer')} FROM gateway_inbox_answers WHERE platform=?"
                                " AND event_id=?", (_text(platform), _text(event_id)))
        try:
            return None if row is None else str(text(row[0]))
        except UNREADABLE:
            return None

    def edit(self, inbound: Inbound) -> bool:
        """The event recorded under ``inbound``'s (platform, event id) is ``inbound`` from now on (its user edited
        it), also when it is replayed after a restart; only while it waits for its turn (received, not begun):
        returns whether it did. Whether its turn has begun the caller knows better (one waiting for the answer to
        its question is received again, `reopen`): it asks this only of an event its session still queues."""
        cur = self._db.write("UPDATE gateway_inbox SET payload=? WHERE platform=? AND event_id=? AND status='received'",
                             (json.dumps(inbound.to_json()), _text(inbound.platform), _text(inbound.event_id)))
        return cur.rowcount == 1

    def withdraw(self, inbound: Inbound) -> bool:
        """Its user deleted the event recorded under ``inbound``'s (platform, event id) while it waited for its turn
        (received, not begun): settled, so never replayed, and kept without its text and files, which may be what they
        took back (a pasted secret), for the week a redelivery may still come. Returns whether it did."""
        bare = dataclasses.replace(inbound, text="", attachments=())
        cur = self._db.write("UPDATE gateway_inbox SET status='done', payload=? WHERE platform=? AND event_id=?"
                             " AND status='received'",
                             (json.dumps(bare.to_json()), _text(inbound.platform), _text(inbound.event_id)))
        return cur.rowcount == 1

    def begun(self) -> set[tuple[str, str]]:
        """At start: the (platform, event id) of the unsettled events whose turns had begun."""
        rows = self._db.read(f"SELECT {as_bytes('platform', 'event_id')}, rowid FROM gateway_inbox WHERE {OPEN}"
                             " AND status='begun'")
        return set(self._keys(rows))

    def reopen(self, platform: str, event_id: str) -> None:
        """The event waits for its turn again, not begun until that begins: handed back by a start, so
        that a mark names a turn this run began (one the start does not hand back, its death not
        counted, keeps its mark: the next start counts that death); the text after a /new once the
        /new has answered; the events of a turn that waits for the answer to its question, idle
        until `begin` marks them again (still replayed after a restart, as unsettled)."""
        self._db.write("UPDATE gateway_inbox SET status='received' WHERE platform=? AND event_id=? AND status='begun'",
                       (_text(platform), _text(event_id)))

    def read_into(self, platform: str, event_id: str, turn_id: str) -> None:
        """The event, steered into the turn ``turn_id``, was read by it, whose answer the chat has while its end
        is owed (`gateway.owed_ends`): a restart runs it within that turn run again, not as a turn of its own
        answered twice. The id `accept` gave it was never used, as for an answer to a question (`settle`)."""
        self.run_under(platform, event_id, turn_id)

    def opened_by(self, platform: str, turn_id: str) -> str | None:
        """The id of the event that started ``turn_id`` on ``platform``, the first received of those the inbox or the
        dead letters remember under it; the others of that turn were read or answered within it (`read_into`, `settle`
        ``into_turn``). Asked only of a replayed event (`TurnRunner._own_turn`)."""
        # By receipt first, which a hand-back keeps (`requeue`): a forgotten event handed back is written as a new row,
        # numbered after those of the events read within its turn. A dead letter counts too: retention may have
        # forgotten its event, set aside with the turn's, while an event read within it is handed back first. At the
        # same receipt (a clock standing still) a dead letter goes first: taken for the turn's, it leaves the event
        # asked about a turn of its own, answered either way, where a steered message run as the turn kept the asking
        # one, handed back after it, from ever being answered.
        key = (_text(platform), _text(turn_id))
        row = self._db.read_one("SELECT event_id FROM (SELECT event_id, received_at, 1 AS kept, rowid AS n"
                                " FROM gateway_inbox WHERE platform=? AND turn_id=? UNION ALL"
                                " SELECT event_id, received_at, 0, id FROM gateway_dead_letters"
                                " WHERE platform=? AND turn_id=?) ORDER BY received_at, kept, n LIMIT 1", (*key, *key))
        return None if row is None else _untext(row[0])

    def run_under(self, platform: str, event_id: str, turn_id: str) -> None:
        """The unsettled event runs under ``turn_id`` from now on, also when a restart replays it."""
        self._db.write(f"UPDATE gateway_inbox SET turn_id=? WHERE platform=? AND event_id=? AND {OPEN}",
                       (turn_id, _text(platform), _text(event_id)))

    def failed(self, platform: str, event_id: str, error: str) -> int:
        """Handling the event raised ``error``: count it (it stays unsettled). Returns the count. The error is kept
        masked as a log line is (`gateway.logging.redacted_bounded`), then cut: an exception quoting a request (a key
        in its URL) would leave the key in the state database, its backups and its dead letter, whoever reads them."""
        key = (_text(platform), _text(event_id))
        self._db.write("UPDATE gateway_inbox SET attempts=attempts+1, last_error=? WHERE platform=? AND event_id=?",
                       (_text(whole_prefix(redacted_bounded(error), 500)), *key))
        row = self._db.read_one("SELECT attempts FROM gateway_inbox WHERE platform=? AND event_id=?", key)
        return 0 if row is None else row[0]

    def set_aside(self, platform: str, event_id: str) -> int | None:
        """Move the event to the dead letters (it stays here as ``dead``, so a redelivery is a
        duplicate and no start replays it). Returns the dead letter's id; None if unknown."""
        key = (_text(platform), _text(event_id))
        with self._db.transaction():
            cur = self._db.write(
                "INSERT INTO gateway_dead_letters (platform, event_id, payload, turn_id, attempts, error, received_at,"
                " dead_at) SELECT platform, event_id, payload, turn_id, attempts, last_error, received_at, ?"
                " FROM gateway_inbox WHERE platform=? AND event_id=? AND status != 'dead'",
                (self._clock.time(), *key))  # fmt: skip
            if cur.rowcount != 1:
                return None
            self._db.write("UPDATE gateway_inbox SET status='dead' WHERE platform=? AND event_id=?", key)
        return cur.lastrowid

    def requeue(self, platform: str, event_id: str, payload: str, turn_id: str | None, received_at: float) -> None:
        """Hand a dead event back (also one the inbox had forgotten, then with its aliases again):
        ``requeued`` until a gateway takes it up, its attempts counted from zero."""
        with self._db.transaction():
            self._db.write("INSERT INTO gateway_inbox (platform, event_id, payload, status, received_at, turn_id)"
                           " VALUES (?, ?, ?, 'requeued', ?, ?) ON CONFLICT (platform, event_id) DO UPDATE SET"
                           " status='requeued', attempts=0, last_error=NULL",
                           (_text(platform), _text(event_id), payload, received_at, turn_id))
            if aliases := _inbound(payload).aliases:
                self._record_aliases(platform, event_id, aliases)

    def take_requeued(self, of: Collection[str] | None = None) -> list[tuple[Inbound, str | None]]:
        """Events re-queued since the last look, oldest first; each is unsettled again. All of them or,
        when the store refuses (raising), none: one marked taken but never returned would wait for a restart.
        ``of``: only those of these platforms (None: of all); another platform's stay re-queued, for a gateway
        that configures it (taken, they would be replayed to no adapter, or lost to the next start)."""
        sql = f"SELECT {_EVENT} FROM gateway_inbox WHERE {OPEN} AND status='requeued'"
        args: tuple[object, ...] = ()
        if of is not None:
            if not of:
                return []
            # Unary plus: the platform is no index key here, or SQLite would read all of its events by theirs.
            sql += f" AND +platform IN ({', '.join('?' * len(of))})"
            args = tuple(map(_text, of))
        if not self._db.read(f"{sql} LIMIT 1", args):  # the usual answer, asked every few seconds: no write batch
            return []
        with self._db.transaction():
            rows = self._db.read(f"{sql} ORDER BY received_at, rowid", args)
            # One left out is taken too: not looked at again every few seconds, the next start logs it again.
            self._db.write_many("UPDATE gateway_inbox SET status='received' WHERE rowid=?", [(r[5],) for r in rows])
        return self._events(rows)

    def turn_of(self, platform: str, event_id: str) -> str | None:
        """The turn recorded by `accept`; None if it starts none, or the event is unknown."""
        row = self._db.read_one("SELECT turn_id FROM gateway_inbox WHERE platform=? AND event_id=?",
                            (platform, event_id))  # fmt: skip
        return None if row is None else row[0]

    def settled(self, platform: str, event_id: str) -> bool:
        """Whether the event was handled (its turn ended, or it was answered at once), or set aside
        as a dead letter (its chat told so): nothing more comes of it unless an operator retries it."""
        row = self._db.read_one("SELECT status FROM gateway_inbox WHERE platform=? AND event_id=?",
                                (platform, event_id))
        return row is not None and row[0] in ("done", "dead")

    def received_at(self, platform: str, event_id: str) -> float | None:
        """When the event was first recorded (epoch seconds); None if the inbox has forgotten it."""
        row = self._db.read_one("SELECT received_at FROM gateway_inbox WHERE platform=? AND event_id=?",
                                (platform, event_id))
        return None if row is None else row[0]

    def arrival(self, platform: str, event_id: str) -> int | None:
        """Where the event stands in the order the inbox received events, higher for a later one, to tell which of
        two it remembers came first; None if it has forgotten it. Not by the receipts' dates: NTP stepping back a
        clock that ran fast dates a receipt before those of an hour ago. The row's rowid: SQLite numbers a new row
        one above the largest (no AUTOINCREMENT: a forgotten newest row's number is given again, but never while a
        row holds it, so of two rows held at once the later has the higher; a VACUUM keeps their order)."""
        row = self._db.read_one("SELECT rowid FROM gateway_inbox WHERE platform=? AND event_id=?",
                                (_text(platform), _text(event_id)))
        return None if row is None else row[0]

    def sent_before(self, inbound: Inbound, when: float) -> bool:
        """Whether ``inbound`` was sent before the epoch time ``when``: received before it (the web chat,
        the terminal and webhooks date no message; one that waited while /new withdrew the children), or
        dated by its platform more than `SENT_MARGIN` before it."""
        # The receipt is on the gateway's own clock, to the microsecond: no margin. Nothing is received before
        # it is sent, so a date after the receipt (a platform's clock ahead, a test's fake one) decides nothing.
        received = self.received_at(inbound.platform, inbound.event_id)
        if received is not None and received < when:
            return True
        return inbound.sent_at is not None and inbound.sent_at < when - SENT_MARGIN

    def answered_since(self, platform: str, turn_id: str, since: float) -> bool:
        """Whether an event received after ``since`` was handled within ``turn_id``, as the answer
        to a question it asked (`settle` ``into_turn``)."""
        return self._db.read_one("SELECT 1 FROM gateway_inbox WHERE platform=? AND turn_id=? AND received_at>?"
                                 " AND status='done' LIMIT 1", (platform, turn_id, since)) is not None

    def event_of_turn(self, platform: str, turn_id: str) -> Inbound | None:
        """The event that started ``turn_id`` on ``platform``, while the inbox remembers it."""
        # The first received (`arrival`): later ones were handled within the turn (`settle` ``into_turn``).
        row = self._db.read_one("SELECT payload FROM gateway_inbox WHERE platform=? AND turn_id=?"
                                " ORDER BY rowid LIMIT 1", (platform, turn_id))
        return None if row is None else _inbound(row[0])

    def unfinished(self, page: int = 1000) -> list[tuple[Inbound, str | None]]:
        """Events accepted but never settled, oldest first, with their turn ids: to replay after a restart.
        Read ``page`` rows at a time: a flood's payloads are not all held twice, as text and as events."""
        select = f"SELECT {_EVENT} FROM gateway_inbox WHERE {OPEN} AND status IN ('received', 'begun')"
        order = " ORDER BY received_at, rowid LIMIT ?"
        rows = self._db.read(select + order, (page,))
        events = self._events(rows)
        while len(rows) == page:  # the next page: after the last row read, in the same order
            rows = self._db.read(f"{select} AND (received_at, rowid) > (?, ?){order}", (*rows[-1][4:], page))
            events += self._events(rows)
        return events

    def waiting_by_platform(self) -> dict[str, int]:
        """How many events wait to be handled (unsettled or re-queued), per platform: at a start, those of a
        platform no longer configured, which are kept as they are. Counted in ``gateway_inbox_open_platform``
        alone, no event's row read: some 20-30 ms at 100,000 waiting."""
        rows = self._db.read(f"SELECT {as_bytes('platform')}, COUNT(*) FROM gateway_inbox WHERE {OPEN}"
                             " GROUP BY platform")
        counts = {}
        for platform, count in rows:
            try:
                counts[text(platform)] = count
            except UNREADABLE:
                pass  # a platform no UTF-8 names: its events are left out where they are read (`_events`)
        return counts

    def first_waiting(self, platforms: Collection[str]) -> float | None:
        """When the first received of the events waiting to be handled of ``platforms`` was received (epoch
        seconds); None when none waits. One look into ``gateway_inbox_open_platform`` per platform, however many
        wait, of those platforms or of others."""
        if not platforms:
            return None
        firsts = " UNION ALL ".join([f"SELECT MIN(received_at) AS first FROM gateway_inbox WHERE {OPEN}"
                                     " AND platform=?"] * len(platforms))
        return self._db.read_one(f"SELECT MIN(first) FROM ({firsts})", [_text(p) for p in platforms])[0]

    def prune(self, older_than: float, limit: int | None = None) -> int:
        """Forget events received before the epoch time ``older_than`` (see `RETENTION_SECONDS`)
        once handled or set aside: a redelivery after that is taken as new. At most ``limit``, oldest
        first (all by default), so a sweep can forget a long stop's backlog a batch at a time.
        Returns the count."""
        # One not handled yet is kept however old (replayed after a week's downtime, a dead
        # letter handed back): forgotten, a stop or crash before its turn ends would lose it.
        # Both statements pick the same events: the first changes no inbox row, and the order is total.
        forgotten = ("FROM gateway_inbox WHERE received_at < ? AND status IN ('done', 'dead')"
                     " ORDER BY received_at, rowid LIMIT ?")
        args = (older_than, -1 if limit is None else limit)
        with self._db.transaction():
            for table in ("gateway_inbox_aliases", "gateway_inbox_answers"):
                self._db.write(f"DELETE FROM {table} WHERE (platform, event_id) IN"
                               f" (SELECT platform, event_id {forgotten})", args)
            return self._db.write(f"DELETE FROM gateway_inbox WHERE rowid IN (SELECT rowid {forgotten})", args).rowcount

    def _keys(self, rows: list[tuple]) -> Iterator[tuple[str, str]]:
        """The (platform, event id) of ``rows`` (both read as bytes, then the rowid) that read back; one that does
        not is left out (`LeftOut`): raised, it stopped every start."""
        left_out = {}
        for platform, event_id, rowid in rows:
            try:
                yield text(platform), text(event_id)  # type: ignore[misc]
            except UNREADABLE as exc:
                left_out[_named(platform, event_id, rowid)] = type(exc).__name__
        if left_out:
            self._left_out.report(left_out)

    def _events(self, rows: list[tuple]) -> list[tuple[Inbound, str | None]]:
        """The events of ``rows`` (`_EVENT`) that read back, with their turn ids. One that does not (its payload
        no UTF-8, no JSON, no event) stays unsettled, left out (`LeftOut`): raised, it stopped every start."""
        events, left_out = [], {}
        for payload, turn_id, platform, event_id, _, rowid in rows:
            try:
                text(platform), text(event_id)  # its key, by which it is settled: one of no UTF-8 never would be
                events.append((_inbound(payload), text(turn_id)))
            except UNREADABLE as exc:
                left_out[_named(platform, event_id, rowid)] = type(exc).__name__
        if left_out:
            self._left_out.report(left_out)
        return events


REDELIVERED_WITHIN = 25 * 3600.0
"""Seconds after its receipt an update may come again: Telegram keeps one 24 h; an hour more for the clocks."""
OWNER = "telegram_bare_ids_bot"
"""The ``gateway_meta`` key of the bot whose events the bare ids are."""
_BARE = "platform='telegram' AND instr(event_id, ':') = 0"


class BareTelegramIds:
    """Telegram events recorded by their bare update ids (see the module's docstring)."""

    def __init__(self, db: SqliteDatabase, clock: Clock) -> None:
        self._db, self._clock = db, clock
        self._owner: str | None = None
        self._until: float | None = None
        """Until when a bare id recorded may come again (-inf: none may); None until the first look."""

    def event_of(self, inbound: Inbound) -> str | None:
        """The bare event a Telegram event keyed by its bot repeats: the one all its ids name (its own, and every
        alias's), bare; None when it is none, and for any other event."""
        if inbound.platform != "telegram":
            return None
        bot, keyed, _ = inbound.event_id.partition(":")
        if not keyed:
            return None
        if self._until is None:
            self._look(bot)
        now = self._clock.time()
        if bot != self._owner or self._until is None or now > self._until:
            return None
        ids = [i.partition(":")[2] for i in dict.fromkeys((inbound.event_id, *inbound.aliases))]
        marks, since = ", ".join("?" * len(ids)), now - REDELIVERED_WITHIN
        found = dict(self._db.read(f"SELECT event_id, event_id FROM gateway_inbox WHERE platform='telegram'"
                                   f" AND event_id IN ({marks}) AND received_at >= ?", (*ids, since)))
        for alias, event_id in self._db.read(
                "SELECT a.alias, a.event_id FROM gateway_inbox_aliases a JOIN gateway_inbox i"
                f" ON i.platform=a.platform AND i.event_id=a.event_id WHERE a.platform='telegram'"
                f" AND a.alias IN ({marks}) AND i.received_at >= ?", (*ids, since)):
            found.setdefault(alias, event_id)
        return found[ids[0]] if all(i in found for i in ids) else None

    def _look(self, bot: str) -> None:
        """Once a process: until when bare ids may come again, and whose they are (``bot``'s, when no one's yet)."""
        since = self._clock.time() - REDELIVERED_WITHIN
        row = self._db.read_one(f"SELECT MAX(received_at) FROM gateway_inbox WHERE received_at >= ? AND {_BARE}",
                                (since,))
        last = None if row is None else row[0]
        self._until = -math.inf if last is None else last + REDELIVERED_WITHIN
        if last is None:  # none may come again: nothing is anyone's (an older version run since is read anew)
            self._db.write("DELETE FROM gateway_meta WHERE key=?", (OWNER,))
            return
        self._db.write("INSERT OR IGNORE INTO gateway_meta (key, value) VALUES (?, ?)", (OWNER, bot))
        owner = self._db.read_one("SELECT value FROM gateway_meta WHERE key=?", (OWNER,))
        self._owner = None if owner is None else owner[0]


def _named(platform: object, event_id: object, rowid: int) -> str:
    """An event's row as `LeftOut` names it (the same row the same way, whichever read left it out)."""
    return f"{row_name('platform', platform, rowid)} {row_name('event_id', event_id, rowid)}"


def _inbound(payload: str | bytes) -> Inbound:
    return Inbound.from_json(json.loads(payload))
