"""Whether the gateway failed to take an event for want of storage, which a later try can fix.

The sink (`platforms.base.InboundSink`) records an event before it returns, so what it raises
when its state database cannot write is SQLite's own error: ``sqlite3.OperationalError``
(``database or disk is full``, ``disk I/O error``, ``database is locked``). Such a refusal ends
once there is room (or the lock is released), and the event must come again then; anything else
(a bug one odd message trips) would fail the same way at every try.

One refusal is narrower: the sink recorded the event and SQLite then refused to commit it. The store
keeps such writes and commits them once it can (`lifecycle.SqliteDatabase`; lost only if the process
ends first), so the event may yet be handled, then or after the next start: the sink raises
`NotYetDurable` for it, a storage refusal still (tried again, answered 500), which a slash command's
stop answers "may still be answered", not "Not taken" (`Handing`).
"""

from __future__ import annotations

import asyncio
import errno
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from platforms.messages import Inbound, Outbound

_LATER = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN,
                    sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
"""Primary result codes of a file that cannot be written now, or is locked by another connection."""
_FULL_OR_FAILING = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})
"""What a file write fails with when the disk is full, over quota (or past the process's file size
limit), failing or read-only: a stored attachment's, say. Not every `OSError`: a timeout or a refused
connection inside the sink is one too, and taking it for storage would hand the event over again and
again, holding those after it."""
STOPPING = "not accepting messages right now; retry later"
"""The answer (503) to a request that came while the gateway is not taking messages: starting, stopping, or cut
off by the stop."""
STOPPING_RETRY_AFTER = 5
"""Seconds a `STOPPING` answer's ``Retry-After`` asks for: a restart's stop and start take about that; a caller
without a policy of its own otherwise retried at once, into the same stop, or gave up."""


def storage_refusal(exc: BaseException) -> bool:
    """True when ``exc`` says the gateway could not store the event (its database or disk), not why
    the event itself failed. `NotYetDurable` whatever its code: the store keeps its event, to commit once
    it can, so it is never final ("could not handle"), which its sender would hear before its answer."""
    if isinstance(exc, NotYetDurable):
        return True
    if isinstance(exc, OSError):
        return exc.errno in _FULL_OR_FAILING
    return isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", 0) & 0xFF) in _LATER


class NotYetDurable(sqlite3.OperationalError):
    """The sink recorded the event, and SQLite refused to commit it (``__cause__``: its error, whose
    text, ``sqlite_errorcode`` and ``sqlite_errorname`` this one carries): the store commits it once
    it can, unless the process ends first, and it is handled then or after the next start. Told "Not
    taken", its user would be told no, then answered (twice, had they sent it again). A
    `sqlite3.OperationalError`, so that whatever takes the sink's refusals for storage (`storage_refusal`:
    hand it over again, answer 500) goes on doing so: handed over again, it is a duplicate the inbox drops
    once it is durable."""

    @classmethod
    def of(cls, refused: sqlite3.Error) -> NotYetDurable:
        exc = cls(*refused.args)
        for name in ("sqlite_errorcode", "sqlite_errorname"):  # absent from an error Python code raised
            if hasattr(refused, name):
                setattr(exc, name, getattr(refused, name))
        return exc


NOT_TAKEN = "⚠️ Not taken: the bot is restarting. Send `{command}` again in a minute."
"""The answer to a slash command a stop left unrecorded (neither Slack nor Discord ever sends a command
again, nor keeps it in a history the next start could read back), with ``command`` its name, slash included."""
MAY_BE_TAKEN = ("⚠️ The bot is restarting: `{command}` may still be answered once it is back. If no answer comes"
                " a few minutes after that, send it again.")
"""The answer to a slash command whose hand-over to the gateway a stop cut off, or that the gateway recorded but
could not commit yet (`NotYetDurable`), with ``command`` its name, slash included: the sink records an event before
it routes it, and the next start handles what was recorded and not
settled, so it is neither "Not taken" (its user would be told no, then answered) nor silence (it may not have
been recorded)."""
NOT_HANDLED = ("⚠️ Sorry — I could not handle `{command}`: the error is logged for the operator to look at. Please"
               " try again, perhaps in other words.")
"""The answer to a command the gateway failed on before it recorded it (a bug the command trips, not a full
disk: `storage_refusal`), with ``command`` its name as typed, slash (or ``!``) included. Nothing else answers it: it
is dropped, as it would fail alike at every try, and neither Slack (an empty acknowledgement) nor Discord ("thinking…"
until the interaction's token expires) shows its user anything; nor does Telegram for a command typed as a message
(``/stop``), nor Discord for a text command (``!stop``), whose user waits for an answer all the same. The words of the
gateway's own apology for an event it could not handle (its dead letters)."""
NOT_HANDLED_MESSAGE = ("⚠️ Sorry — I could not handle that message: the error is logged for the operator to look at."
                       " Please try again, perhaps in other words.")
"""`NOT_HANDLED` for a message whose sender waits on the answer to its hand-over (the web chat's page, a webhook's
caller, the terminal), which the gateway failed on before it recorded it (not a full disk: `storage_refusal`).
A final answer: the same message again would fail alike, and answered "retry" (the web chat's and the webhook's
500) it was sent again for ever, what its sender sent after it waiting behind it."""
NOT_HANDLED_STATUS = 422
"""The HTTP status `NOT_HANDLED_MESSAGE` goes with (the web chat's page, a webhook's caller): final, as a 4xx is to
the page and to any client, since the same message would fail alike at every try; a 5xx says "retry", which a
proxy's 502 says too (and the 500 of a refused store means: nothing of it was kept, send it again)."""


def not_handled(command: Inbound) -> Outbound:
    """`NOT_HANDLED` for ``command``, a command typed as a message (Telegram's ``/stop``, Discord's ``!stop``) the
    gateway failed on before recording it, to its chat (and thread); in a group, channel or thread quoting it, as
    several members' commands and their answers interleave there. Keyed by the event: a platform that dedupes sends
    shows it once."""
    name = command.text.split(maxsplit=1)[0] if command.text.strip() else command.text
    return Outbound(command.chat_id, command.thread_id, NOT_HANDLED.format(command=name), kind="command",
                    reply_token=command.reply_token, idempotency_key=f"not-handled:{command.event_id}",
                    reply_to=None if command.is_private else command.message_id)


class Handing:
    """A slash command's hand-over to the gateway (``hand_on(*args)``, the sink's call), which knows whether
    a call is under way. The gateway's sink records an event before it routes it, and the next start handles
    what it recorded and did not settle: a command whose call a stop cancels may have been recorded, and is
    then answered after the restart, so its user must not be told it was not taken (`MAY_BE_TAKEN`). So may
    one a call recorded without committing it (`NotYetDurable`), whatever the later calls raise: the store
    still holds its row, to commit once it can. Any other call that raised did not record it (the sink
    records before it returns, or raises), nor did one not made yet (the command waiting in a queue, or
    between two refused tries)."""

    def __init__(self, hand_on: Callable[..., Awaitable[Any]]) -> None:
        self._hand_on = hand_on
        self._recorded = False
        """A call recorded the command without committing it (`NotYetDurable`)."""
        self.under_way = False
        """Whether the command may be recorded as the hand-over ends: a call was under way (cancelled there), or
        one recorded it without committing it (`NotYetDurable`), and none has returned since."""

    async def __call__(self, *args: Any) -> Any:
        self.under_way = True
        try:
            result = await self._hand_on(*args)
        except asyncio.CancelledError:
            raise  # cut off midway: under way it stays
        except BaseException as exc:
            self._recorded = self._recorded or isinstance(exc, NotYetDurable)
            self.under_way = self._recorded
            raise
        self.under_way = False
        return result
