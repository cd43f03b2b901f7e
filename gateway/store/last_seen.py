"""The last message the gateway saw in each conversation of a platform that does not redeliver.

Discord sends a message once, over a live connection; Slack gives up on an event after a few
retries over a few minutes. A message sent while the process was down (a deploy, a crash) is
then never sent again. The adapter records here, per conversation, the newest message it has
handed over and the gateway recorded (or found not addressed to the bot), and at its next start
asks the platform for what came after it (`platforms.discord_catch_up`, `platforms.slack_catchup`).
Kept in the state database, so it survives a SIGKILL.

A conversation and a position are the platform's own strings (a Discord channel id and message
id; a Slack channel, or channel and thread, and a ``ts``): the adapter alone knows their order,
so it only ever records a newer position than the one it was given or recorded before.
"""

from __future__ import annotations

from lifecycle import SqliteDatabase

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_last_seen (
        platform TEXT NOT NULL, conversation TEXT NOT NULL, position TEXT NOT NULL,
        PRIMARY KEY (platform, conversation))""",
)


class LastSeen:
    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def record(self, platform: str, conversation: str, position: str) -> None:
        """``position`` is the newest message seen in the conversation now."""
        self._db.write("INSERT INTO gateway_last_seen VALUES (?, ?, ?) ON CONFLICT(platform, conversation)"
                       " DO UPDATE SET position=excluded.position", (platform, conversation, position))

    def of(self, platform: str) -> dict[str, str]:
        """The platform's conversations -> the newest message seen there."""
        return dict(self._db.read("SELECT conversation, position FROM gateway_last_seen WHERE platform=?",
                                  (platform,)))
