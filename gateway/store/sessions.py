"""Gateway sessions and their transcripts: one row per session, one row per message.

A session is keyed by (platform, chat, thread). Its row pins the delegation mode and
generation (bumped by ``/new``) and holds the chat's delegation backend: the one the
current generation uses and the one ``/delegation`` chose for the next; its
transcript is stored a message per row, so a turn appends the few messages it added
instead of rewriting the whole history. Both are kept until ``/new`` replaces them, or until the retention sweep
forgets a session no turn was taken in for ``sessions.retention_days`` (`SessionTable.forget`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agent import Clock
from gateway.store.inbox import OPEN
from gateway.store.unreadable_rows import UNREADABLE, LeftOut, as_bytes, row_name, text
from lifecycle import SqliteDatabase

log = logging.getLogger("gateway.store")

Mode = Literal["inline", "background"]
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_HELD_USER = "CASE WHEN json_valid(item) THEN json_extract(item, '$.event.user_id') END"
"""A held message's sender, as the index ``gateway_held_user`` and the query it serves both spell it. Not read
from a row that is not JSON (a hand edit): json_extract would raise, and with it the index's every write and
creation (the store would not open)."""

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_sessions (
        key TEXT PRIMARY KEY, session_id TEXT NOT NULL, generation INTEGER NOT NULL, mode TEXT NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL, backend TEXT NOT NULL DEFAULT 'default',
        backend_choice TEXT)""",
    """CREATE TABLE IF NOT EXISTS gateway_transcript (
        key TEXT NOT NULL, seq INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY (key, seq))""",
    # `recent`, which the console reads up to ten times a second, over every chat ever seen.
    "CREATE INDEX IF NOT EXISTS gateway_sessions_updated ON gateway_sessions (updated_at)",
    # `key_of`, which the console reads for the sessions not in memory whose children run.
    "CREATE INDEX IF NOT EXISTS gateway_sessions_session_id ON gateway_sessions (session_id)",
    # Messages waiting for their turn beyond what a session holds in memory (`SessionTable.hold`). Apart from the
    # sessions' rows, so no schema version is spent on it: a build before it ignores the table.
    """CREATE TABLE IF NOT EXISTS gateway_held (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, run TEXT NOT NULL, key TEXT NOT NULL, item TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS gateway_held_key ON gateway_held (key, run, seq)",
    # `holds_from`, asked at a message for a chat where thousands may be held (a flood): created where missing.
    f"CREATE INDEX IF NOT EXISTS gateway_held_user ON gateway_held (key, run, {_HELD_USER})",
)


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
    backend: str = "default"
    """The delegation backend this generation delegates through."""
    backend_choice: str | None = None
    """The backend ``/delegation`` chose for the chat's next generations; None: ``delegation.backend``."""


class SessionTable:
    def __init__(self, db: SqliteDatabase, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._left_out = LeftOut("gateway_sessions")

    def split_transcripts(self) -> None:
        """Schema 1 -> 2: move each session's JSON array of messages into rows."""
        rows = self._db.read("SELECT key, transcript FROM gateway_sessions")
        self._db.write_many("INSERT INTO gateway_transcript VALUES (?, ?, ?)", [
            (key, seq, json.dumps(message))
            for key, transcript in rows for seq, message in enumerate(json.loads(transcript))
        ])
        self._db.write("ALTER TABLE gateway_sessions DROP COLUMN transcript")

    def add_backend_columns(self) -> None:
        """Schema < 4: each session's delegation backend (``default`` for existing ones)."""
        columns = {r[1] for r in self._db.read("PRAGMA table_info(gateway_sessions)")}
        if "backend" not in columns:
            self._db.write("ALTER TABLE gateway_sessions ADD COLUMN backend TEXT NOT NULL DEFAULT 'default'")
        if "backend_choice" not in columns:
            self._db.write("ALTER TABLE gateway_sessions ADD COLUMN backend_choice TEXT")

    def load(self, key: str) -> SessionRow | None:
        # Texts as bytes: SQLite's own decode error for one that holds no UTF-8 quotes it, and failed every message
        # of the chat, for good. One that still is no text stays bytes, for the registry to set anew.
        row = self._db.read_one(
            f"SELECT key, {as_bytes('session_id', 'generation', 'mode')}, created_at, updated_at,"
            f" {as_bytes('backend', 'backend_choice')} FROM gateway_sessions WHERE key=?", (key,))  # fmt: skip
        if row is None:
            return None
        row = [_text(value) for value in row]
        # As bytes: SQLite's own decode error for a row that holds no UTF-8 quotes the row's text.
        rows = self._db.read("SELECT seq, CAST(message AS BLOB) FROM gateway_transcript WHERE key=? ORDER BY seq",
                             (key,))
        return SessionRow(row[0], row[1], row[2], row[3], _readable(key, rows), row[4], row[5], row[6], row[7])

    def mode_of(self, key: str) -> Mode | None:
        """The delegation mode the chat's session is pinned to; None when the chat has none yet."""
        row = self._db.read_one(f"SELECT {as_bytes('key', 'mode')}, rowid FROM gateway_sessions WHERE key=?", (key,))
        return None if row is None else self._readable(row, row[1])

    def key_of(self, session_id: str) -> str | None:
        """The key of the chat whose current generation is this agent session; None for an
        older generation (replaced by ``/new``) or a session no chat has."""
        row = self._db.read_one(f"SELECT {as_bytes('key')}, rowid FROM gateway_sessions WHERE session_id=?",
                                (session_id,))
        return None if row is None else self._readable(row, row[0])

    def save_backend(self, key: str, backend: str, choice: str | None) -> None:
        """Store the session's current backend and the chat's choice for later generations."""
        touched = self._db.write("UPDATE gateway_sessions SET backend=?, backend_choice=?, updated_at=? WHERE key=?",
                                 (backend, choice, self._clock.time(), key))
        if touched.rowcount == 0:
            raise KeyError(key)

    def recent(self, limit: int) -> list[SessionRow]:
        """The ``limit`` most recently active sessions, most recent first, without their transcripts."""
        rows = self._db.read(f"SELECT {as_bytes('key', 'session_id', 'generation', 'mode')}, created_at, updated_at,"
                             " rowid FROM gateway_sessions ORDER BY updated_at DESC LIMIT ?", (limit,))
        readable = []
        for r in rows:
            key, session_id, generation, mode = (self._readable((r[0], r[6]), value) for value in r[:4])
            if None not in (key, session_id, generation, mode):
                readable.append(SessionRow(key, session_id, generation, mode, [], r[4], r[5]))
        return readable

    def _readable(self, row: tuple, value: object) -> object:
        """A column read as bytes (`as_bytes`) of the session ``row`` (its key and rowid), decoded; None, after one
        ERROR (`LeftOut`), when it holds no UTF-8: read as text, SQLite's decode error quoted it, and failed the
        console's list of sessions for every chat. The registry mends one whose key reads as the chat next
        speaks (`load`)."""
        try:
            return value.decode("utf-8") if isinstance(value, bytes) else value
        except UnicodeDecodeError:
            self._left_out.report({row_name("key", row[0], row[-1]): "no UTF-8"})
            return None

    def recent_threads(self, platform: str, limit: int) -> list[tuple[str, str]]:
        """(chat_id, thread_id) of the platform's ``limit`` most recently active thread
        sessions that hold a conversation, most recent last. A thread where only commands were
        answered (``!help`` typed in people's thread, for another bot) is not the bot's to hear."""
        # Keys are "platform|chat|thread": a range on the primary key ('}' sorts right after '|'),
        # then only keys with a thread (not ending in '|').
        low = session_key(platform, "", None)[:-1]
        rows = self._db.read(
            "SELECT key FROM gateway_sessions s WHERE key >= ? AND key < ? AND key NOT LIKE '%|'"
            " AND EXISTS (SELECT 1 FROM gateway_transcript t WHERE t.key = s.key)"
            " ORDER BY updated_at DESC LIMIT ?", (low, low[:-1] + "}", limit))  # fmt: skip
        return [(chat, thread) for _, chat, thread in (split_session_key(key) for (key,) in reversed(rows))]

    def save(self, row: SessionRow) -> None:
        """Insert or replace the session under ``row.key``, transcript and all; ``updated_at`` becomes now."""
        if row.mode not in ("inline", "background"):
            raise ValueError(f"mode must be 'inline' or 'background', got {row.mode!r}")
        now = self._clock.time()
        with self._db.transaction():
            self._db.write(
                "INSERT INTO gateway_sessions (key, session_id, generation, mode, created_at, updated_at, backend,"
                " backend_choice) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET"
                " session_id=excluded.session_id, generation=excluded.generation, mode=excluded.mode,"
                " created_at=excluded.created_at, updated_at=excluded.updated_at, backend=excluded.backend,"
                " backend_choice=excluded.backend_choice",
                (row.key, row.session_id, row.generation, row.mode, row.created_at or now, now, row.backend,
                 row.backend_choice))
            self._replace_messages(row.key, row.transcript)

    def save_transcript(self, key: str, messages: Sequence[dict[str, Any]], *, start: int = 0) -> None:
        """Store the session's transcript: ``start=0`` rewrites it whole; ``start > 0`` appends
        ``messages[start:]`` after the ``start`` messages stored (a turn passes the count it last
        saved, so it writes only its new messages). KeyError if there is no such session."""
        if start == 0:
            with self._db.transaction():
                self._touch(key)
                self._replace_messages(key, messages)
            return
        # Appending after what is stored: no rows to delete, and no savepoint is needed, since
        # rewriting the same positions (after a failure midway) replaces what is there.
        self._touch(key)
        self._insert_messages(key, messages, start, "INSERT OR REPLACE")

    def hold(self, run: str, key: str, item: str) -> None:
        """Keep a message waiting for its turn in the chat ``key`` (a JSON ``item``) after those held before it,
        for the process ``run`` only: its inbox event stays unsettled, so a restart hands it over anew."""
        self._db.write("INSERT INTO gateway_held (run, key, item) VALUES (?, ?, ?)", (run, key, item))

    def held(self, run: str, key: str, limit: int | None = None) -> list[tuple[int, bytes]]:
        """The chat's first ``limit`` held messages (all by default), oldest first: (seq, item), the item's bytes.
        Read as text, one a hand edit left no UTF-8 would fail the whole read (its text in the error)."""
        return self._db.read("SELECT seq, CAST(item AS BLOB) FROM gateway_held WHERE key=? AND run=? ORDER BY seq"
                             " LIMIT ?", (key, run, -1 if limit is None else limit))

    def holds_from(self, run: str, key: str, user_id: str) -> bool:
        """Whether a message of ``user_id`` is held in the chat ``key`` for the process ``run``: one look-up,
        however many are held."""
        return self._db.read_one(f"SELECT 1 FROM gateway_held WHERE key=? AND run=? AND {_HELD_USER}=? LIMIT 1",
                                 (key, run, user_id)) is not None

    def held_message(self, run: str, key: str, message_id: str) -> tuple[int, bytes] | None:
        """The oldest message ``message_id`` (its event's) held in the chat ``key`` for the process ``run``, as `held`
        gives it; None if none is. Read among the chat's held rows alone, however many other chats hold."""
        return self._db.read_one(
            "SELECT seq, CAST(item AS BLOB) FROM gateway_held WHERE key=? AND run=? AND CASE WHEN json_valid(item)"
            " THEN json_extract(item, '$.event.message_id') END=? ORDER BY seq LIMIT 1", (key, run, message_id))

    def release(self, seqs: Sequence[int]) -> None:
        """The held messages ``seqs`` (`held`) are held no longer."""
        self._db.write_many("DELETE FROM gateway_held WHERE seq=?", [(seq,) for seq in seqs])

    def release_if(self, seq: int, then: Callable[[], bool]) -> bool:
        """Release the held message ``seq`` if ``then()``, a write in this store, says so: both stand or fall together
        (a refusal of either raises, and neither was written). Returns whether it did."""
        with self._db.transaction():
            if not then():
                return False
            self.release([seq])
        return True

    def forget_held(self, run: str, limit: int) -> int:
        """Forget up to ``limit`` messages held by processes other than ``run``: they stopped, and the next
        start handed the messages over anew from the inbox. Returns the count."""
        return self._db.write("DELETE FROM gateway_held WHERE seq IN (SELECT seq FROM gateway_held WHERE run != ?"
                              " LIMIT ?)", (run, limit)).rowcount

    def forget(self, before: float, keep: Collection[str], keep_agents: Collection[str],
               limit: int) -> tuple[int, bool]:
        """Forget sessions last active (their last stored turn, `updated_at`) before ``before``, row and transcript,
        as if their chats had never spoken: a chat's next message starts a new session. Kept however old: those
        ``keep`` names (keys), those whose agent session is among ``keep_agents``, and those with messages held for
        a turn (`hold`), a background delegation not settled, or, in their chat, an event not handled yet or a
        message not sent yet. Oldest first, as many as ``limit`` rows hold (sessions and messages; one session at
        least, however long its conversation), in one transaction. Returns (sessions forgotten, whether more may
        be due)."""
        keep = {*keep, *self._chats_waiting()}
        candidates = self._db.read(
            "SELECT rowid, (SELECT COUNT(*) FROM gateway_transcript t WHERE t.key = s.key) FROM gateway_sessions s"
            " WHERE updated_at < ? AND key NOT IN (SELECT value FROM json_each(?))"
            " AND session_id NOT IN (SELECT value FROM json_each(?))"
            " AND NOT EXISTS (SELECT 1 FROM gateway_held h WHERE h.key = s.key)"
            " AND NOT EXISTS (SELECT 1 FROM gateway_delegations d WHERE d.session_key = s.key AND d.status = 'running')"
            " ORDER BY updated_at LIMIT ?", (before, json.dumps(list(keep)), json.dumps(list(keep_agents)), limit))
        taken: list[int] = []
        rows = 0
        for rowid, messages in candidates:
            if taken and rows + 1 + messages > limit:
                break
            taken.append(rowid)
            rows += 1 + messages
        if taken:
            ids = json.dumps(taken)
            with self._db.transaction():
                self._db.write("DELETE FROM gateway_transcript WHERE key IN (SELECT key FROM gateway_sessions WHERE"
                               " rowid IN (SELECT value FROM json_each(?)))", (ids,))
                self._db.write("DELETE FROM gateway_sessions WHERE rowid IN (SELECT value FROM json_each(?))", (ids,))
        return len(taken), len(taken) < len(candidates) or len(candidates) == limit

    def _chats_waiting(self) -> set[str]:
        """The keys of the chats with an event not handled yet (the gateway's inbox) or a message not sent yet (its
        outbox): the one may load the chat's session any moment, the other answers a turn of its conversation."""
        events = self._db.read(
            "SELECT DISTINCT CAST(platform AS BLOB), CAST(json_extract(payload, '$.chat_id') AS BLOB),"
            " CAST(json_extract(payload, '$.thread_id') AS BLOB) FROM gateway_inbox"
            f" WHERE {OPEN} AND json_valid(payload)")
        sends = self._db.read("SELECT DISTINCT CAST(platform AS BLOB), CAST(chat_id AS BLOB), CAST(thread_id AS BLOB)"
                              " FROM gateway_outbox WHERE status='pending'")
        keys = set()
        for platform, chat_id, thread_id in (*events, *sends):
            try:
                keys.add(session_key(text(platform), text(chat_id), text(thread_id)))  # type: ignore[arg-type]
            except UNREADABLE:
                pass  # no chat's: its event or send is left out where it is read (`unreadable_rows`)
        return keys

    def used(self, key: str) -> None:
        """A command used the session ``key`` (none stored: nothing to do): it counts as its chat's activity for
        ``sessions.retention_days`` as a turn does. A chat used through commands alone (/agents daily, a plugin's)
        is no abandoned one, and its conversation was forgotten under it."""
        self._db.write("UPDATE gateway_sessions SET updated_at=? WHERE key=?", (self._clock.time(), key))

    def _touch(self, key: str) -> None:
        touched = self._db.write("UPDATE gateway_sessions SET updated_at=? WHERE key=?", (self._clock.time(), key))
        if touched.rowcount == 0:
            raise KeyError(key)

    def _replace_messages(self, key: str, messages: Sequence[dict[str, Any]]) -> None:
        self._db.write("DELETE FROM gateway_transcript WHERE key=?", (key,))
        self._insert_messages(key, messages, 0, "INSERT")

    def _insert_messages(self, key: str, messages: Sequence[dict[str, Any]], start: int, verb: str) -> None:
        # json.dumps escapes non-ASCII (lone surrogates included), so a message always binds.
        self._db.write_many(f"{verb} INTO gateway_transcript VALUES (?, ?, ?)",
                            [(key, seq, json.dumps(messages[seq])) for seq in range(start, len(messages))])


def _text(value: object) -> object:
    """``value``, bytes (`as_bytes`) decoded if they read back (`unreadable_rows.text`), else as they are: the
    registry sets such a column anew (`SessionRegistry.get`)."""
    try:
        return text(value)
    except UnicodeDecodeError:
        return value


def _readable(key: str, rows: Iterable[tuple[int, bytes]]) -> list[dict[str, Any]]:
    """The stored messages ``rows`` (seq, bytes) that read back as messages, in order. One that does not (a hand
    edit, a damaged write) is left out, with one ERROR naming the chat and the rows, never their text (it may hold
    anything): raised, it failed every later message of the chat, for good. So is a tool result whose call is
    not in the message before it (that call's row was left out, or deleted by hand): the model server refuses
    every request holding one. A call left without its result is answered as not run by the agent."""
    messages: list[dict[str, Any]] = []
    left_out: list[str] = []
    calls: set[str] = set()  # the ids of the calls of the last message read, while only their results follow it
    for seq, raw in rows:
        try:
            message = json.loads(raw.decode("utf-8"))
        # Recursion: nested deeper than the parser goes; ValueError: no UTF-8 or no JSON.
        except (ValueError, RecursionError) as exc:
            left_out.append(f"{seq} ({type(exc).__name__})")
            continue
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role not in _ROLES:
            left_out.append(f"{seq} (not a message)")
        elif role == "tool" and not (isinstance(call := message.get("tool_call_id"), str) and call in calls):
            left_out.append(f"{seq} (a tool result without its call)")
        else:
            if role != "tool":
                tool_calls = message.get("tool_calls") if role == "assistant" else None
                calls = {c["id"] for c in tool_calls if isinstance(c, dict) and isinstance(c.get("id"), str)} \
                    if isinstance(tool_calls, list) else set()
            messages.append(message)
    if left_out:
        platform, chat_id, thread_id = split_session_key(key)
        log.error("%s chat %s%s: %d message(s) of its stored conversation could not be read back (gateway_transcript"
                  " key %s, seq %s) and are left out; the conversation goes on without them",
                  platform, chat_id, "" if thread_id is None else f" thread {thread_id}", len(left_out), key,
                  ", ".join(left_out[:20]))
    return messages
