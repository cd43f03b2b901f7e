"""Chats where a platform may still show a "working" indicator: one it shows, or could not remove.

Slack's placeholder is a message of the bot's: the chat is recorded as it is posted and forgotten once it
is deleted (`forget`), so a kill in between still brings the next start there. One whose deletion Slack
refused (the bot token revoked) stays in the chat. The adapter says so (`platforms.base.LeavesIndicators`),
and the chat is kept here until the next start has looked there again (`Gateway.start`), also when nothing
else of the chat (a reply to send, a turn to run again) would take that start there; it is forgotten only
once that start's clean-up has run there.
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
        self._recorded: set[tuple[str, str, str]] = set()
        """Recorded by this process: kept for the next start, whatever a clean-up here finds."""

    def record(self, platform: str, chat_id: str, thread_id: str | None) -> None:
        self._recorded.add((platform, chat_id, thread_id or ""))
        self._db.write("INSERT OR IGNORE INTO gateway_indicators_left VALUES (?, ?, ?)",
                       (platform, chat_id, thread_id or ""))

    def chats(self) -> set[tuple[str, str, str | None]]:
        """Every chat recorded (platform, chat_id, thread_id). Each stays recorded until `cleared`:
        a stop or a crash before its clean-up has run leaves it to the next start."""
        rows = self._db.read("SELECT platform, chat_id, thread_id FROM gateway_indicators_left")
        return {(platform, chat_id, thread_id or None) for platform, chat_id, thread_id in rows}

    def cleared(self, platform: str, chat_id: str, thread_id: str | None) -> None:
        """This start looked in the chat and removed what it found (or found it gone): forgotten,
        unless this process recorded it (an indicator it could not remove, then or before)."""
        if (platform, chat_id, thread_id or "") not in self._recorded:
            self.forget(platform, chat_id, thread_id)

    def forget(self, platform: str, chat_id: str, thread_id: str | None) -> None:
        """The adapter removed what it showed there: the next start need not look."""
        self._recorded.discard((platform, chat_id, thread_id or ""))
        self._db.write("DELETE FROM gateway_indicators_left WHERE platform=? AND chat_id=? AND thread_id=?",
                       (platform, chat_id, thread_id or ""))
