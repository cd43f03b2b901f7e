"""Chats a platform gave a new id: a Telegram group upgraded to a supergroup, a Slack private channel shared with
another organization.

The gateway keeps knowing such a chat by the id it had, which keys its session, events
and messages; the adapter maps the new id to it (`platforms.base.MovesChats`). A move is
kept for good: the chat's session is, too.
"""

from __future__ import annotations

from agent import Clock
from lifecycle import SqliteDatabase

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_chat_moves (
        platform TEXT NOT NULL, chat_id TEXT NOT NULL, moved_to TEXT NOT NULL, moved_at REAL NOT NULL,
        PRIMARY KEY (platform, chat_id))""",
)


class ChatMoves:
    def __init__(self, db: SqliteDatabase, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def record(self, platform: str, chat_id: str, moved_to: str) -> None:
        """The chat the gateway knows as ``chat_id`` is ``moved_to`` on the platform now."""
        self._db.write("INSERT INTO gateway_chat_moves VALUES (?, ?, ?, ?) ON CONFLICT(platform, chat_id)"
                       " DO UPDATE SET moved_to=excluded.moved_to, moved_at=excluded.moved_at",
                       (platform, chat_id, moved_to, self._clock.time()))

    def of(self, platform: str) -> dict[str, str]:
        """The platform's moves: the gateway's chat id -> the chat's id on the platform now."""
        return dict(self._db.read("SELECT chat_id, moved_to FROM gateway_chat_moves WHERE platform=?", (platform,)))
