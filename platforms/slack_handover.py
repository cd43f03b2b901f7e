"""Handing a Slack message over to the gateway until it is recorded, once Slack will not send it again.

Apart from the adapter (`platforms.slack`) because it is the one retry policy of the inbound side, as
`platforms.discord_handover` is Discord's. Logged under ``platforms.slack``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from platforms.base import Inbound
from platforms.not_recorded import storage_refusal

log = logging.getLogger("platforms.slack")

SINK_RETRY_FIRST, SINK_RETRY_MAX = 0.5, 5.0
"""How long to wait before handing a message the store refused over again."""
ACKED = "after Slack was acknowledged for it"
READ_BACK = "as the catch-up read it back"
"""Why Slack will not send a message again, as `until_taken` logs it: it was acknowledged, or it is
one the catch-up read back (its event was lost while the gateway was down)."""


async def until_taken(hand_on: Callable[[], Awaitable[object]], inbound: Inbound, acked: Callable[[], bool],
                      why: str = ACKED) -> None:
    """``hand_on()`` the message; once Slack will not send it again (``acked()``; ``why`` says so in
    the log), a store that refuses the write (`platforms.not_recorded`) is tried again, backing off,
    until it takes it or the adapter stops (cancelled; its conversations are then kept behind it,
    `platforms.slack_seen.TakenIn`): the next start may be days away, past what its catch-up reads
    back. Before the ack it raises: unacked, Slack sends the message again. Once acked, any other
    failure is the message's own (a bug it trips), which would recur at every try, the next start's
    catch-up included: logged with its traceback and dropped, as Discord does, so it settles as taken."""
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
                return
            log.log(logging.WARNING if delay == SINK_RETRY_FIRST else logging.DEBUG,
                    "slack: message %s was not recorded (%s: %s) %s; handing it over again in %.1f s, and until it"
                    " is", inbound.event_id, type(exc).__name__, exc, why, delay)
        else:
            if delay > SINK_RETRY_FIRST:
                log.info("slack: message %s is recorded", inbound.event_id)
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, SINK_RETRY_MAX)
