"""The last message the gateway saw in each conversation of a platform that does not redeliver.

Discord sends a message once, over a live connection; Slack gives up on an event after a few
retries over a few minutes. A message sent while the process was down (a deploy, a crash) is
then never sent again. The adapter records here, per conversation, the newest message it has
handed over and the gateway recorded (or found not addressed to the bot), and at its next start
asks the platform for what came after it (`platforms.discord_catch_up`, `platforms.slack_catchup`).
Kept in the state database, so it survives a SIGKILL, and forgotten once no message was seen
in the conversation for `RETENTION_SECONDS` (`gateway.retention`): every thread and DM the bot
heard in would otherwise stay for good, each start reading them all.

A conversation and a position are the platform's own strings (a Discord channel id and message
id; a Slack channel, or channel and thread, and a ``ts``): the adapter alone knows their order,
so it only ever records a newer position than the one it was given or recorded before.
Beside the conversations, under keys no conversation has (``edited:…``), the Slack adapter keeps the
latest edit of a message handed over (`platforms.slack_edits.edit_key`), so that an older edit Slack sends a
later process is passed over, and the Telegram adapter an edit a webhook delivered before its message
(`platforms.telegram_webhook.EarlyEdits`), so that the message comes as edited after a restart too, or the place
of the latest edit handed over, so that an older one delivered later is passed over; forgotten after the same
month.
"""

from __future__ import annotations

from agent import Clock
from lifecycle import SqliteDatabase

RETENTION_SECONDS = 30 * 24 * 3600.0
"""Seconds a conversation no message was seen in is kept: after that, what is said there while the
gateway is down is not caught up, as in a conversation the bot never heard in."""

SCHEMA = (
    # seen_at: the gateway's epoch time of the last record (positions are the platform's own strings).
    """CREATE TABLE IF NOT EXISTS gateway_last_seen (
        platform TEXT NOT NULL, conversation TEXT NOT NULL, position TEXT NOT NULL, seen_at REAL NOT NULL,
        PRIMARY KEY (platform, conversation))""",
    "CREATE INDEX IF NOT EXISTS gateway_last_seen_at ON gateway_last_seen (seen_at)",
)


class LastSeen:
    def __init__(self, db: SqliteDatabase, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def record(self, platform: str, conversation: str, position: str) -> None:
        """``position`` is the newest message seen in the conversation now."""
        self._db.write("INSERT INTO gateway_last_seen VALUES (?, ?, ?, ?) ON CONFLICT(platform, conversation)"
                       " DO UPDATE SET position=excluded.position, seen_at=excluded.seen_at",
                       (platform, conversation, position, self._clock.time()))

    def at(self, platform: str, conversation: str) -> str | None:
        """The newest message seen in the conversation, or None if none is recorded."""
        row = self._db.read_one("SELECT position FROM gateway_last_seen WHERE platform=? AND conversation=?",
                                (platform, conversation))
        return None if row is None else row[0]

    def prune(self, older_than: float, limit: int | None = None) -> int:
        """Forget the conversations last recorded before the epoch time ``older_than``: at most ``limit``,
        oldest first (all by default). Returns the count."""
        return self._db.write("DELETE FROM gateway_last_seen WHERE rowid IN (SELECT rowid FROM gateway_last_seen"
                              " WHERE seen_at < ? ORDER BY seen_at, rowid LIMIT ?)",
                              (older_than, -1 if limit is None else limit)).rowcount

    def of(self, platform: str) -> dict[str, str]:
        """The platform's conversations -> the newest message seen there."""
        return dict(self._db.read("SELECT conversation, position FROM gateway_last_seen WHERE platform=?",
                                  (platform,)))
