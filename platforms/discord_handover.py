"""Handing a Discord event to the gateway until it is recorded: Discord never sends it again.

Apart from the adapter (`platforms.discord`) because it is the one retry policy of the inbound
side, shared by live events and those a catch-up finds, and the one way an edit or a deletion finds the message it
changes (`by_either_key`). Logged under ``platforms.discord``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from platforms.base import Inbound, InboundSink
from platforms.not_recorded import storage_refusal

log = logging.getLogger("platforms.discord")

SINK_RETRY_FIRST, SINK_RETRY_MAX = 0.5, 5.0
"""How long to wait before handing an event the gateway failed to record over again."""


Told = Callable[[str, str | None], Awaitable[bool]]
"""``told(chat_id, thread_id)``: the gateway told of an edit or a deletion of a message handed over in that
conversation; whether it found the message there (`platforms.base.MessageEdited`, `MessageDeleted`)."""

Outcome = Literal["recorded", "dropped", "left"]
"""How a hand-over ended (`until_recorded`): the gateway recorded the event; it failed on it otherwise than for
want of storage, and the event was dropped; or the adapter stopped while the gateway could not record it."""


async def until_recorded(sink: InboundSink, inbound: Inbound, stopping: asyncio.Event) -> Outcome:
    """Hand ``inbound`` over until the gateway has recorded it, backing off: Discord sends an event
    once and never again, so one the gateway failed to record (its database full) would be lost.
    The events after it wait, in order. Any other failure is the event's own, and would recur at
    every try, holding up every later event: it is logged and the event ``"dropped"`` (settled as
    seen, as recorded); a slash command's user, whom nothing else answers, is then told so (its
    interaction showed "thinking…" until its token expired: `discord_commands.NOT_HANDLED`), and so is a text
    command (``!stop``), whose user waits for the stop; another message is not: nothing on screen waits for it, as
    on Telegram and Slack. Once the
    adapter stops, an event refused is not tried again: the stop's grace is the gateway's to share (the
    running turns, the outbox's flush), not the adapter's to spend waiting for room: ``"left"`` (a
    later start's catch-up finds a message again, a command is answered to be sent again)."""
    delay = SINK_RETRY_FIRST
    while True:
        try:
            await sink(inbound)
        except Exception as exc:
            if not storage_refusal(exc):
                log.exception("discord: the gateway refused event %s", inbound.event_id)
                return "dropped"
            if stopping.is_set():
                log.warning("discord: event %s was not recorded (%s: %s) and the gateway stops: a message is"
                            " looked for again at the next start, a command is answered to send it again",
                            inbound.event_id, type(exc).__name__, exc)
                return "left"
            first = delay == SINK_RETRY_FIRST  # said once, with why: every later try fails alike
            log.log(logging.WARNING if first else logging.DEBUG, "discord: event %s was not recorded (%s: %s);"
                    " handing it over again in %.1f s, and until it is", inbound.event_id, type(exc).__name__, exc,
                    delay)
        else:
            if delay > SINK_RETRY_FIRST:
                log.info("discord: event %s is recorded", inbound.event_id)
            return "recorded"
        with contextlib.suppress(TimeoutError):  # a stop cuts the wait short: one last try
            await asyncio.wait_for(stopping.wait(), delay)
        delay = min(delay * 2, SINK_RETRY_MAX)


async def by_either_key(told: Told, chat_id: str, thread_id: str | None) -> bool:
    """``told`` of a message in (``chat_id``, ``thread_id``), and, when the gateway found nothing there, in (the
    thread, no thread): a message of a thread Discord did not name in time (`DiscordAdapter._in_thread`) was handed
    over as the channel's own, keyed by the thread alone, and its edit or deletion, heard once the thread is known,
    is keyed by the parent and the thread. Whether either found it."""
    found = await told(chat_id, thread_id)
    if not found and thread_id is not None:
        found = await told(thread_id, None)
    return found
