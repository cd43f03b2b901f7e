"""Whether the gateway failed to take an event for want of storage, which a later try can fix.

The sink (`platforms.base.InboundSink`) records an event before it returns, so what it raises
when its state database cannot write is SQLite's own error: ``sqlite3.OperationalError``
(``database or disk is full``, ``disk I/O error``, ``database is locked``). Such a refusal ends
once there is room (or the lock is released), and the event must come again then; anything else
(a bug one odd message trips) would fail the same way at every try.
"""

from __future__ import annotations

import errno
import sqlite3

_LATER = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN,
                    sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
"""Primary result codes of a file that cannot be written now, or is locked by another connection."""
_FULL_OR_FAILING = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})
"""What a file write fails with when the disk is full, over quota (or past the process's file size
limit), failing or read-only: a stored attachment's, say. Not every `OSError`: a timeout or a refused
connection inside the sink is one too, and taking it for storage would hand the event over again and
again, holding those after it."""


def storage_refusal(exc: BaseException) -> bool:
    """True when ``exc`` says the gateway could not store the event (its database or disk), not why
    the event itself failed."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL_OR_FAILING
    return isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _LATER


NOT_TAKEN = "⚠️ Not taken: the bot is restarting. Send `{command}` again in a minute."
"""The answer to a slash command a stop left unrecorded (neither Slack nor Discord ever sends a command
again, nor keeps it in a history the next start could read back), with ``command`` its name, slash included."""
