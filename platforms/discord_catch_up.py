"""What was said to the bot while the gateway was down, asked of Discord at each new session.

Discord sends a message once, over the live gateway connection; discord.py replays what was
missed only when it RESUMEs a session, never after a new IDENTIFY (a restart, a crash, a
session Discord invalidated). So at each READY the adapter asks, for every channel it has seen
a message in (the last one's id kept in the gateway's store: `gateway.store.last_seen`), for
the messages after that one (``GET /channels/{id}/messages``), and hands them over oldest first
exactly as if they had come live: the same rules say which are for the bot, and the gateway's
inbox drops one that also came live.

Bounds, as a user would expect of a bot that was away: messages older than `MAX_AGE` (a day,
as long as Telegram keeps updates) are not answered, and at most `MAX_MESSAGES` per channel
are looked at, the newest (one more is asked for, to know whether any were left out: one page of
Discord's history, and a second request of one message only when the page is all new); each bound
that left messages out says so in a warning. Channels are looked at most recently active first, at
most `MAX_CHANNELS` of them (a warning names the others); one whose newest message
(``last_message_id``, which Discord sends with the channel) is the last one seen costs no request
for messages. A DM's channel, or an archived thread's, is not sent with READY and its guilds, and
Discord gives a bot no list of its DMs: each costs a request however little happened there, so
`LOOKUPS` channels are looked at at once, and a hundred quiet DMs do not spend the deadline one
round trip after another while the channels after them wait. What they find is handed over one
channel at a time, as live events are. Live events wait for the catch-up, so it is given up after
`DEADLINE`, naming the channels it did not get to: the adapter keeps their last message seen where
it was, so that the next catch-up reads them again, as it does for a channel whose history could
not be read.

Only channels where a message for the bot came are caught up on: a baseline of every guild
channel at READY (the ``last_message_id`` Discord sends with each) would catch a first mention
in a channel never seen, at one history request per channel that had any message during the
downtime, holding live events and sharing the rate limit with the channels the bot talks in:
not worth it (docs/platforms/discord.md, "Messages sent while the gateway was down").
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import discord  # imported by platforms.discord, after discord_urls has imported it without its audioop warning

log = logging.getLogger("platforms.discord")

MAX_AGE = 24 * 3600.0
"""Seconds: an older message is not answered after a restart."""
MAX_MESSAGES = 100
"""Messages looked at per channel, the newest: one page of Discord's history."""
MAX_CHANNELS = 1000
"""Channels looked at, those with the most recent last-seen message first."""
LOOKUPS = 5
"""Channels looked at at once: Discord limits each channel's routes apart, and all of a bot's requests
to 50 a second, which five round trips at once stay well under."""
DEADLINE = 60.0
"""Seconds the whole catch-up may take: live events wait for it, so it must end."""

Deliver = Callable[[discord.Message], Awaitable[None]]
"""Hands one message over as a live one is (if it is for the bot), then records it as seen."""
Seen = Callable[[int, int], None]
"""``seen(channel_id, message_id)``: record a message as seen without handing it over."""


async def catch_up(client: discord.Client, last_seen: Mapping[int, int], deliver: Deliver, seen: Seen, *,
                   now: float, deadline: float = DEADLINE) -> list[int]:
    """Look in each channel of ``last_seen`` (channel id -> last message id seen) for what came
    after, `LOOKUPS` channels at once, handing over what each found one channel at a time. A
    channel that cannot be read (Discord failing, the channel deleted, the bot removed) is logged
    and passed over; what is not done within ``deadline`` seconds (Discord not answering, or
    discord.py waiting out a 429) is given up with a warning naming the channels left, since live
    events wait for the catch-up. Returns the channels not caught up: those it could not read, and
    those left at the deadline (those it was in among them). Never raises but for a cancellation."""
    order = sorted(last_seen, key=last_seen.__getitem__, reverse=True)
    chosen, quiet = order[:MAX_CHANNELS], order[MAX_CHANNELS:]
    if quiet:
        log.warning("discord: %d channel(s) quiet longest, over the %d caught up on, not caught up: %s; what was sent"
                    " there while the gateway was down is not answered", len(quiet), MAX_CHANNELS, _listed(quiet))
    queue: deque[int] = deque(chosen)
    done: set[int] = set()
    unread: list[int] = []
    handing = asyncio.Lock()  # the sink takes one event at a time, as from the live path

    async def look() -> None:
        while queue:
            channel_id = queue.popleft()
            try:
                await _channel(client, channel_id, last_seen[channel_id], deliver, seen, now, handing)
            except Exception as exc:
                log.warning("discord: could not catch up on channel %s: %s: %s; it is looked at again at the next"
                            " start", channel_id, type(exc).__name__, exc)
                unread.append(channel_id)
            done.add(channel_id)

    try:
        async with asyncio.timeout(deadline), asyncio.TaskGroup() as looking:
            for _ in range(min(LOOKUPS, len(chosen))):
                looking.create_task(look())
    except TimeoutError:
        log.warning("discord: the catch-up did not finish within %g s: channel(s) %s not caught up; what was sent"
                    " there while the gateway was down is looked for again at the next start", deadline,
                    _listed([c for c in chosen if c not in done]))
    return unread + [c for c in chosen if c not in done]


def _listed(channels: list[int], most: int = 10) -> str:
    shown = ", ".join(map(str, channels[:most]))
    return shown if len(channels) <= most else f"{shown} and {len(channels) - most} more"


async def _channel(client: discord.Client, channel_id: int, after: int, deliver: Deliver, seen: Seen,
                   now: float, handing: asyncio.Lock) -> None:
    channel: Any = client.get_channel(channel_id) or await client.fetch_channel(channel_id)
    newest = getattr(channel, "last_message_id", None)
    if newest is not None and newest <= after:
        return  # nothing since
    # Newest first, so that past the bound it is the oldest that are left out; one more than the
    # bound says whether any were.
    messages = [m async for m in channel.history(limit=MAX_MESSAGES + 1, after=discord.Object(after),
                                                 oldest_first=False)]
    left_out = len(messages) > MAX_MESSAGES
    messages = messages[:MAX_MESSAGES]
    if not messages:
        return
    messages.reverse()
    bound = now - MAX_AGE
    old = [m for m in messages if m.created_at.timestamp() < bound]
    async with handing:
        if old:  # never answered, so never looked at again
            seen(channel_id, old[-1].id)
        for message in messages[len(old):]:
            await deliver(message)
    log.info("discord: caught up on channel %s: %s message(s) since the last one seen, %d of them too old to answer",
             channel_id, f"over {MAX_MESSAGES}" if left_out else len(messages), len(old))
    if old or left_out:
        log.warning("discord: channel %s: %s were sent while the gateway was down and are not answered",
                    channel_id, " and ".join(filter(None, (
                        f"{len(old)} message(s) older than {MAX_AGE / 3600:g} h" if old else "",
                        f"any before the newest {MAX_MESSAGES}" if left_out else ""))))
