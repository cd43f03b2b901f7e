"""Whether the gateway failed to take an event for want of storage, which a later try can fix.

The sink (`platforms.base.InboundSink`) records an event before it returns, so what it raises
when its state database cannot write is SQLite's own error: ``sqlite3.OperationalError``
(``database or disk is full``, ``disk I/O error``, ``database is locked``). Such a refusal ends
once there is room (or the lock is released), and the event must come again then; anything else
(a bug one odd message trips) would fail the same way at every try.
"""

from __future__ import annotations

import asyncio
import errno
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

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
MAY_BE_TAKEN = ("⚠️ The bot is restarting: `{command}` may still be answered once it is back. If no answer comes"
                " a few minutes after that, send it again.")
"""The answer to a slash command whose hand-over to the gateway a stop cut off, with ``command`` its name, slash
included: the sink records an event before it routes it, and the next start handles what was recorded and not
settled, so it is neither "Not taken" (its user would be told no, then answered) nor silence (it may not have
been recorded)."""


class Handing:
    """A slash command's hand-over to the gateway (``hand_on(*args)``, the sink's call), which knows whether
    a call is under way. The gateway's sink records an event before it routes it, and the next start handles
    what it recorded and did not settle: a command whose call a stop cancels may have been recorded, and is
    then answered after the restart, so its user must not be told it was not taken (`MAY_BE_TAKEN`). A call
    that raised did not record it (the sink records before it returns, or raises), nor did one not made yet
    (the command waiting in a queue, or between two refused tries)."""

    def __init__(self, hand_on: Callable[..., Awaitable[Any]]) -> None:
        self._hand_on = hand_on
        self.under_way = False
        """Whether a call was under way when the hand-over ended: cancelled there, the command may be recorded."""

    async def __call__(self, *args: Any) -> Any:
        self.under_way = True
        try:
            result = await self._hand_on(*args)
        except asyncio.CancelledError:
            raise  # cut off midway: under way it stays
        except BaseException:
            self.under_way = False
            raise
        self.under_way = False
        return result
