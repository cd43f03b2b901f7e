"""The last message the gateway saw in each channel of a platform that does not redeliver.

Discord sends a message once, over a live gateway connection: one sent while the process was
down (a deploy, a crash) is never sent again. The adapter records here, per channel, the newest
message it has handed over and the gateway recorded (or found not addressed to the bot), and at
its next start asks the platform for what came after it (`platforms.discord_catch_up`). Kept in
the state database, so it survives a SIGKILL; a row is only ever moved forward.
"""

from __future__ import annotations

from lifecycle import SqliteDatabase

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS gateway_last_seen (
        platform TEXT NOT NULL, channel_id TEXT NOT NULL, message_id INTEGER NOT NULL,
        PRIMARY KEY (platform, channel_id))""",
)


class LastSeen:
    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    def record(self, platform: str, channel_id: str, message_id: int) -> None:
        """``message_id`` was seen in the channel; an older id than the one recorded changes nothing."""
        self._db.write("INSERT INTO gateway_last_seen VALUES (?, ?, ?) ON CONFLICT(platform, channel_id)"
                       " DO UPDATE SET message_id=excluded.message_id WHERE excluded.message_id > message_id",
                       (platform, channel_id, message_id))

    def of(self, platform: str) -> dict[str, int]:
        """The platform's channels -> the last message id seen there."""
        return dict(self._db.read("SELECT channel_id, message_id FROM gateway_last_seen WHERE platform=?",
                                  (platform,)))
