"""Handing a Slack message over to the gateway until it is recorded, once Slack will not send it again,
or may not: Slack sends an unacknowledged event again three times, over about five minutes (at once,
after a minute, after five), and then gives up on it, while a full disk may last longer.

Apart from the adapter (`platforms.slack`) because it is the one retry policy of the inbound side, as
`platforms.discord_handover` is Discord's. Logged under ``platforms.slack``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from platforms.base import Inbound, InboundSink
from platforms.not_recorded import storage_refusal

log = logging.getLogger("platforms.slack")

SINK_RETRY_FIRST, SINK_RETRY_MAX = 0.5, 5.0
"""How long to wait before handing a message the store refused over again."""
ACKED = "after Slack was acknowledged for it"
READ_BACK = "as the catch-up read it back"
UNACKED = "while Slack may still send it again"
COMMAND = "as Slack never sends a slash command again"
"""Why the adapter hands a message over again itself, as `until_taken` logs it: Slack was acknowledged
for it; the catch-up read it back (its event was lost while the gateway was down); Slack may give
up on it (`Retries`); or it is a slash command, acknowledged or not (the adapter's until it stops)."""


async def until_taken(hand_on: Callable[[], Awaitable[object]], inbound: Inbound, acked: Callable[[], bool],
                      why: str = ACKED) -> bool:
    """``hand_on()`` the message; once it is the adapter's to keep (``acked()``: Slack will not send it
    again, or may not; ``why`` says which in the log), a store that refuses the write
    (`platforms.not_recorded`) is tried again, backing off, until it takes it or the adapter stops
    (cancelled; its conversations are then kept behind it, `platforms.slack_seen.TakenIn`): the next
    start may be days away, past what its catch-up reads back. Before that it raises: unacked, Slack
    sends the message again. After, any other failure is the message's own (a bug it trips), which
    would recur at every try, the next start's catch-up included: logged with its traceback and
    dropped, as Discord does, so it settles as taken. True once taken, False when dropped so: a slash
    command's user, whom nothing else answers, is then told (`UnderWay.command_settled`)."""
    delay = SINK_RETRY_FIRST
    while True:
        try:
            await hand_on()
        except Exception as exc:
            if not acked():
                raise
            if not storage_refusal(exc):
                log.exception("slack: the gateway refused message %s %s; dropped, as it would fail alike at every"
                              " try", inbound.event_id, why)
                return False
            log.log(logging.WARNING if delay == SINK_RETRY_FIRST else logging.DEBUG,
                    "slack: message %s was not recorded (%s: %s) %s; handing it over again in %.1f s, and until it"
                    " is", inbound.event_id, type(exc).__name__, exc, why, delay)
        else:
            if delay > SINK_RETRY_FIRST:
                log.info("slack: message %s is recorded", inbound.event_id)
            return True
        await asyncio.sleep(delay)
        delay = min(delay * 2, SINK_RETRY_MAX)


class Retries:
    """Live messages the store refused before Slack was acknowledged for them (which it sends again, for a
    few minutes): each is also handed over again here (`until_taken`), until it is taken, here or by
    Slack's own delivery (`taken`), or the adapter stops. Nothing is read from Slack for it: the adapter
    has the event."""

    def __init__(self, background: Callable[[Awaitable[None]], asyncio.Future[Any]]) -> None:
        """``background(work)``: a task the adapter's stop cancels."""
        self._background = background
        self._waiting: set[str] = set()
        """Event ids of the messages handed over again, not taken yet."""

    def refused(self, inbound: Inbound, sink: InboundSink, settled: Callable[[asyncio.Future[None]], None]) -> None:
        """The store refused ``inbound`` before the ack: hand it over again, from `SINK_RETRY_FIRST` on (Slack's
        own first retry comes at once), unless that is under way. ``settled(done)`` is told how that ended,
        unless Slack's delivery took the message first."""
        event_id = inbound.event_id
        if event_id in self._waiting:
            return
        self._waiting.add(event_id)

        async def unless_taken() -> None:
            if event_id in self._waiting:
                await sink(inbound)

        async def again() -> None:
            await asyncio.sleep(SINK_RETRY_FIRST)
            await until_taken(unless_taken, inbound, lambda: True, UNACKED)

        def ended(done: asyncio.Future[None]) -> None:
            if event_id in self._waiting:  # else taken, and settled, by Slack's delivery
                self._waiting.discard(event_id)
                settled(done)

        self._background(again()).add_done_callback(ended)

    def taken(self, inbound: Inbound) -> None:
        """The gateway has the message (Slack sent it again): it is handed over no more."""
        self._waiting.discard(inbound.event_id)
