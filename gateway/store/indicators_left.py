"""Chats where a platform still shows a "working" indicator the gateway could not remove.

Slack's placeholder is a message of the bot's: one whose deletion Slack refused (the bot token
revoked) stays in the chat. The adapter says so (`platforms.base.LeavesIndicators`), and the chat is
kept here until the next start has looked there again (`Gateway.start`), also when nothing else of
the chat (a reply to send, a turn to run again) would take that start there.
"""

from __future__ import annotations

from lifecycle import SqliteDatabase

SCHEMA = (
    # thread_id '' for none: a NULL would make every row of a chat without threads a new key.
    """CREATE TABLE IF NOT EXISTS gateway_indicators_left (
        platform TEXT NOT NULL, chat_id TEXT NOT NULL, thread_id TEXT NOT NULL,
        PRIMARY KEY (platform, chat_id, thread_id))""",
)


class IndicatorsLeft:
    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def record(self, platform: str, chat_id: str, thread_id: str | None) -> None:
        self._db.write("INSERT OR IGNORE INTO gateway_indicators_left VALUES (?, ?, ?)",
                       (platform, chat_id, thread_id or ""))

    def take(self) -> set[tuple[str, str, str | None]]:
        """Every chat recorded (platform, chat_id, thread_id), forgotten here: one whose indicator
        cannot be removed this time either is recorded again."""
        with self._db.transaction():
            rows = self._db.read("SELECT platform, chat_id, thread_id FROM gateway_indicators_left")
            self._db.write("DELETE FROM gateway_indicators_left")
        return {(platform, chat_id, thread_id or None) for platform, chat_id, thread_id in rows}
