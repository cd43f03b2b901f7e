"""A web chat's conversation, read back from the inbox and the outbox.

The web chat page shows what a person sent and what the gateway sent back, after a
reload or a reconnect, from the durable store alone: what the person typed is the
inbox's record of the event, what the agent said is the outbox's sent rows, with
their later edits applied and deleted messages left out. A file the agent sent (op ``file``) is
a message whose text is its caption, marked ``"file": true``: the web chat adds what it kept. Both keep seven days
(`inbox.RETENTION_SECONDS`, `outbox_rows.RETENTION_SECONDS`); older messages are gone.

The inbox indexes only the ``web`` platform's events by chat (a partial index: the chat id
is inside the payload, and extracting it from every platform's events would cost each of
them). The outbox's index is a plain one on (platform, chat_id, id): a partial index
``WHERE platform = 'web'`` made SQLite re-plan every statement that compares ``platform``
with a bound value (the outbox's insert among them) on each run, which cost more than
indexing every row.
"""

from __future__ import annotations

import json
from typing import Any

from lifecycle import SqliteDatabase

from_text = SqliteDatabase.untext

PLATFORM = "web"
_NO_ID = 2**63 - 1
"""Above every outbox row id (SQLite's largest integer)."""

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
        merged = sorted([*self._received(chat_id, limit), *self._sent(chat_id, limit)],
                        key=lambda m: (m["time"], m["role"] != "user"))
        return merged[-limit:]

    def _received(self, chat_id: str, limit: int) -> list[dict[str, Any]]:
        # Literal platform and the same json_extract expression: what lets SQLite use the partial index.
        rows = self._db.read(
            "SELECT event_id, payload, received_at FROM gateway_inbox WHERE platform = 'web'"
            " AND json_extract(payload, '$.chat_id') = ? ORDER BY received_at DESC LIMIT ?",
            (chat_id, limit))  # fmt: skip
        return [{"id": f"user:{event_id}", "role": "user", "kind": "user", "text": json.loads(payload)["text"],
                 "time": received_at, "edited": False} for event_id, payload, received_at in reversed(rows)]

    def _sent(self, chat_id: str, limit: int) -> list[dict[str, Any]]:
        """The chat's last ``limit`` sent messages still shown, oldest first, each with its latest edit.

        Read newest first, a page at a time, until ``limit`` are found: a deleted message does not count
        (``progress_final: delete`` removes a progress card or two a turn), else the replies of the older
        turns on the page would be missing while their questions showed. Edits and deletions always come
        after the message they change, so each is read before it."""
        shown: dict[str, dict[str, Any]] = {}
        edited: dict[str, Any] = {}  # message id -> its latest edit's text
        deleted: set[str] = set()
        before = None
        while len(shown) < limit:
            rows = self._db.read(
                "SELECT id, op, kind, text, message_id, sent_at FROM gateway_outbox WHERE platform = 'web'"
                " AND chat_id = ? AND id < ? AND status = 'sent' AND op IN ('send', 'file', 'edit', 'delete')"
                " ORDER BY id DESC LIMIT ?", (chat_id, _NO_ID if before is None else before, 2 * limit))  # fmt: skip
            for _, op, kind, text, message_id, sent_at in rows:
                if message_id is None or message_id in shown:
                    continue
                if op == "delete":
                    deleted.add(message_id)
                elif op == "edit":
                    edited.setdefault(message_id, text)
                elif message_id not in deleted:
                    shown[message_id] = {"id": message_id, "role": "assistant", "kind": kind,
                                         "text": from_text(edited.get(message_id, text)), "time": sent_at,
                                         "edited": message_id in edited}
                    if op == "file":
                        shown[message_id]["file"] = True
                    if len(shown) == limit:
                        break
            if len(rows) < 2 * limit:
                break
            before = rows[-1][0]
        return list(reversed(shown.values()))
