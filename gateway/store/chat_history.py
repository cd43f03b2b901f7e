"""A web chat's conversation, read back from the inbox and the outbox.

The web chat page shows what a person sent and what the gateway sent back, after a
reload or a reconnect, from the durable store alone: what the person typed is the
inbox's record of the event, what the agent said is the outbox's sent rows, with
their later edits applied and deleted messages left out. A file the agent sent (op ``file``) is
a message whose text is its caption, marked ``"file": true``: the web chat adds what it kept. Both keep seven days
(`inbox.RETENTION_SECONDS`, `outbox_rows.RETENTION_SECONDS`); older messages are gone.

Each side is read in the store's own order (the inbox's rows as it numbered them, `inbox.Inbox.arrival`; the outbox's
by id), never by date: NTP setting back a clock that ran fast dates the newest messages before older ones, which
then took their place in the chat's last ``limit``. The two are interleaved by date, as the page showed them
live, each side's dates carried past a step back (`STEP_BACK_SECONDS`), and an answer below the message that began
its turn whatever the dates say.

The inbox indexes only the ``web`` platform's events by chat (a partial index: the chat id
is inside the payload, and extracting it from every platform's events would cost each of
them). The outbox's index is a plain one on (platform, chat_id, id): a partial index
``WHERE platform = 'web'`` made SQLite re-plan every statement that compares ``platform``
with a bound value (the outbox's insert among them) on each run, which cost more than
indexing every row.
"""

from __future__ import annotations

import json
import math
from typing import Any

from lifecycle import SqliteDatabase

from_text = SqliteDatabase.untext

PLATFORM = "web"
_NO_ID = 2**63 - 1
"""Above every outbox row id (SQLite's largest integer)."""
_Side = list[tuple[dict[str, Any], str | None]]
"""Messages of one side, oldest first, each with the turn it began or was sent in (or None)."""
STEP_BACK_SECONDS = 60.0
"""How far a message may be dated before the one stored before it on its side before the clock is taken to have
been set back between them: a part sent a little late (a retry) is no step."""

SCHEMA = (
    """CREATE INDEX IF NOT EXISTS gateway_inbox_web_chat ON gateway_inbox
        (json_extract(payload, '$.chat_id'), received_at) WHERE platform = 'web'""",
    "DROP INDEX IF EXISTS gateway_outbox_web_chat",  # the partial index of earlier builds, see above
    "CREATE INDEX IF NOT EXISTS gateway_outbox_chat ON gateway_outbox (platform, chat_id, id)",
)


class ChatHistory:
    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def messages(self, chat_id: str, limit: int) -> list[dict[str, Any]]:
        """The chat's last ``limit`` messages, oldest first, in the shape `platforms.base.HistoryReading`
        describes. Only what reached the page counts: a part still pending, failed or dropped is
        not shown; an edit or deletion is applied once it was sent."""
        if limit <= 0:
            return []
        return _merged(self._received(chat_id, limit), self._sent(chat_id, limit))[-limit:]

    def _received(self, chat_id: str, limit: int) -> _Side:
        """The chat's last ``limit`` messages received, oldest first, each with the turn it began (or None)."""
        # Literal platform and the same json_extract expression: what lets SQLite use the partial index.
        rows = self._db.read(
            "SELECT event_id, payload, received_at, turn_id FROM gateway_inbox WHERE platform = 'web'"
            " AND json_extract(payload, '$.chat_id') = ? ORDER BY rowid DESC LIMIT ?",
            (chat_id, limit))  # fmt: skip
        return [({"id": f"user:{event_id}", "role": "user", "kind": "user", "text": json.loads(payload)["text"],
                  "time": received_at, "edited": False}, turn_id)
                for event_id, payload, received_at, turn_id in reversed(rows)]

    def _sent(self, chat_id: str, limit: int) -> _Side:
        """The chat's last ``limit`` sent messages still shown, oldest first, each with its latest edit, and the
        turn it was sent in (or None).

        Read newest first, a page at a time, until ``limit`` are found: a deleted message does not count
        (``progress_final: delete`` removes a progress card or two a turn), else the replies of the older
        turns on the page would be missing while their questions showed. Edits and deletions always come
        after the message they change, so each is read before it."""
        shown: dict[str, tuple[dict[str, Any], str | None]] = {}
        edited: dict[str, Any] = {}  # message id -> its latest edit's text
        deleted: set[str] = set()
        before = None
        while len(shown) < limit:
            rows = self._db.read(
                "SELECT id, op, kind, text, message_id, sent_at, turn_id FROM gateway_outbox WHERE platform = 'web'"
                " AND chat_id = ? AND id < ? AND status = 'sent' AND op IN ('send', 'file', 'edit', 'delete')"
                " ORDER BY id DESC LIMIT ?", (chat_id, _NO_ID if before is None else before, 2 * limit))  # fmt: skip
            for _, op, kind, text, message_id, sent_at, turn_id in rows:
                if message_id is None or message_id in shown:
                    continue
                if op == "delete":
                    deleted.add(message_id)
                elif op == "edit":
                    edited.setdefault(message_id, text)
                elif message_id not in deleted:
                    message = {"id": message_id, "role": "assistant", "kind": kind,
                               "text": from_text(edited.get(message_id, text)), "time": sent_at,
                               "edited": message_id in edited}
                    if op == "file":
                        message["file"] = True
                    shown[message_id] = (message, turn_id)
                    if len(shown) == limit:
                        break
            if len(rows) < 2 * limit:
                break
            before = rows[-1][0]
        return list(reversed(shown.values()))


def _merged(received: _Side, sent: _Side) -> list[dict[str, Any]]:
    """Both sides interleaved, each in its own order: by date (a message received before one sent at the same
    moment), an answer never above the message that began its turn. With a steady clock, the order of their dates."""
    mine, theirs = _dates(received, sent), _dates(sent, received)
    waiting = {turn for _, turn in received if turn is not None}  # turns whose first message is not placed yet
    merged: list[dict[str, Any]] = []
    i = j = 0
    while i < len(received) or j < len(sent):
        if j == len(sent) or (i < len(received) and (sent[j][1] in waiting or mine[i] <= theirs[j])):
            merged.append(received[i][0])
            waiting.discard(received[i][1])
            i += 1
        else:
            merged.append(sent[j][0])
            j += 1
    return merged


def _dates(side: _Side, other: _Side) -> list[float]:
    """The dates to interleave ``side`` by: its messages' own, carried forward past each step back of the clock (one
    dated over `STEP_BACK_SECONDS` before a message stored before it), to just after what was said before the step
    on either side: on this side, the messages before it; on the other, those it holds before its own first step."""
    before_step = -math.inf  # the latest date on the other side before its first step back
    for message, _ in other:
        if message["time"] < before_step - STEP_BACK_SECONDS:
            break
        before_step = max(before_step, message["time"])
    dates: list[float] = []
    latest, carried = -math.inf, 0.0
    for message, _ in side:
        date = message["time"] + carried
        if date < latest - STEP_BACK_SECONDS:
            after = math.nextafter(max(latest, before_step), math.inf)
            carried += after - date
            date = after
        latest = max(latest, date)
        dates.append(date)
    return dates
