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
`DEADLINE`, naming the channels it did not get to. A read looks no further than the moment the
catch-up began (`CLOCK_SKEW` later, for the clocks): what came after came live. That moment, and the
messages' ages, are on Discord's clock (`DiscordTime`: the ``Date`` of its latest answer), which the
snowflakes are on: on the host's, a clock days behind (a VM resumed, a board without a battery clock,
before NTP sets it) asked for none of what was sent while the gateway was down, and a live message
recorded past it lost it for good; one a day ahead skipped it all as too old.

A channel whose read failed for a reason that passes (Discord failing or unreachable, a 429 longer
than discord.py waits out, the bot token refused), and one the deadline came first for, is read
again once live events flow (`reread`), one at a time, after a wait that depends on why
(`platforms.rereads`), until it is read or what was missed there is too old to answer: left for the
next session, which may be the next start days away, its messages were as good as lost. A read that
failed for all of Discord (an outage, the token refused) ends the catch-up there, with a warning
naming the channels not looked at yet: each would fail alike (a 500 only after discord.py's own
five tries, 25 s), spending the deadline on a Discord that is down and asking it all the more; they
are read again likewise (the reads that went at once with the failed one end as they will). One whose
history Discord refuses for good (the channel deleted, the bot removed) is left for the next start.
Until a channel is read, the adapter keeps its last message seen where it was (`platforms.discord_seen`),
so that a stop or crash meanwhile leaves it to the next catch-up; what came live there is answered as
it comes, and dropped by the inbox when read back.

Only channels where a message for the bot came are caught up on: a baseline of every guild
channel at READY (the ``last_message_id`` Discord sends with each) would catch a first mention
in a channel never seen, at one history request per channel that had any message during the
downtime, holding live events and sharing the rate limit with the channels the bot talks in:
not worth it (docs/platforms/discord.md, "Messages sent while the gateway was down").
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any, Literal

import aiohttp

from platforms.connection import TokenWatch
from platforms.discord_errors import delivery_error
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.http_dates import date_of
from platforms.rereads import FIRST_WAIT, LOOP_TIMER, MAX_RETRY_AFTER, MAX_WAIT, Rereads, Timer

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
CLOCK_SKEW = 60.0
"""Seconds past the catch-up's start that its reads still look: Discord's servers' clocks may differ from one
another, and the ``Date`` its answers are timed by (`DiscordTime`) is in whole seconds."""
FIRST_RETRY, MAX_RETRY = FIRST_WAIT, MAX_WAIT
"""Seconds before a channel whose read failed for an outage is read again, doubling up to `MAX_RETRY`."""
HISTORY = "GET /channels/{channel_id}/messages"

Deliver = Callable[[discord.Message], Awaitable[None]]
"""Hands one message over as a live one is (if it is for the bot), then records it as seen."""
Seen = Callable[[int, int], None]
"""``seen(channel_id, message_id)``: record a message as seen without handing it over."""


class DiscordTime:
    """Now on Discord's clock, which a message's snowflake is on: the ``Date`` of Discord's latest REST answer,
    counted on from then on ``monotonic``; on ``clock`` (the host's, epoch seconds) until one came. The login's
    answers come before READY, so a catch-up begins on Discord's clock; from the latest answer, not the first,
    since the monotonic clock may not count the time a host was suspended. Not on ``clock`` from then on: NTP
    stepping a stale clock right, as it soon does after a boot, would put Discord's time off by as much."""

    def __init__(self, clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._clock, self._monotonic = clock, monotonic
        self._ahead: float | None = None
        """Discord's time less ``monotonic``'s, from its latest answer; None until one came."""

    def watch(self, trace: aiohttp.TraceConfig) -> None:
        """Learn Discord's time from each answer to the client whose ``http_trace`` is ``trace`` (before its login,
        which freezes it)."""

        async def answered(_: aiohttp.ClientSession, __: SimpleNamespace,
                           params: aiohttp.TraceRequestEndParams) -> None:
            self.answered(params.response.headers)

        trace.on_request_end.append(answered)

    def answered(self, headers: Mapping[str, str]) -> None:
        """Discord answered with ``headers``: its time is their ``Date`` (kept as it was without one)."""
        if (told := date_of(headers.get("Date"))) is None:
            return
        # In whole seconds: Discord's time was within the second after it. Ours, when within, is taken as it is, so
        # that a clock that is right changes nothing (a read asks for no less).
        self._ahead = min(max(self._clock(), told), told + 1.0) - self._monotonic()

    def now(self) -> float:
        return self._clock() if self._ahead is None else self._monotonic() + self._ahead

    def began(self) -> float:
        """`now`, for a catch-up beginning; a warning when the host's clock is off by more than `CLOCK_SKEW`."""
        now = self.now()
        if abs(ahead := now - self._clock()) > CLOCK_SKEW:
            log.warning("discord: this host's clock is %.0f s %s Discord's; catching up on Discord's", abs(ahead),
                        "behind" if ahead > 0 else "ahead of")
        return now


@dataclass
class Left:
    """The channels a catch-up did not catch up on."""

    unread: list[int]
    """Those whose history Discord refused for good: left for the next start."""
    again: list[int]
    """Those to read again while live events flow (`reread`): their read failed for a reason that
    passes, or the deadline came first."""
    rereads: Rereads
    """When the next of them may be read."""
    before: int
    """The newest message id a read looks at: what came after came live."""

    @property
    def channels(self) -> list[int]:
        return self.unread + self.again


async def catch_up(client: discord.Client, last_seen: Mapping[int, int], deliver: Deliver, seen: Seen, *,
                   now: float, token: TokenWatch, deadline: float = DEADLINE,
                   timer: Timer = LOOP_TIMER, max_retry_after: float = MAX_RETRY_AFTER) -> Left:
    """Look in each channel of ``last_seen`` (channel id -> last message id seen) for what came
    after, `LOOKUPS` channels at once, handing over what each found one channel at a time. A
    channel that cannot be read is logged and passed over: to be read again (`reread`) if the reason
    passes (`platforms.rereads`), else at the next start; one that failed for all of Discord
    (`Rereads.down`) ends the catch-up, the channels not looked at yet read again; what is not done
    within ``deadline`` seconds (Discord not answering, or discord.py waiting out a 429) is given up
    with a warning naming the channels left, since live events wait for the catch-up, and read again
    too. Never raises but for a cancellation. ``now`` is when it began on Discord's clock (`DiscordTime.began`),
    ``token`` the bot token's watch, ``timer`` the time the waits before reads again take and that their giving
    up, a day after the start, is counted on (`Rereads`: monotonic, so NTP stepping the host's clock does not bring
    it on), ``max_retry_after`` the longest a 429's ``retry_after`` holds the next read (``delivery.max_retry_after``,
    as the outbox waits it)."""
    left = Left([], [], Rereads(token, log, platform="discord", give_up_at=timer.monotonic() + MAX_AGE,
                                clock=timer.monotonic, first=FIRST_RETRY, most=MAX_RETRY,
                                max_retry_after=max_retry_after, timer=timer),
                _snowflake(now + CLOCK_SKEW))
    order = sorted(last_seen, key=last_seen.__getitem__, reverse=True)
    chosen, quiet = order[:MAX_CHANNELS], order[MAX_CHANNELS:]
    if quiet:
        log.warning("discord: %d channel(s) quiet longest, over the %d caught up on, not caught up: %s; what was sent"
                    " there while the gateway was down is not answered", len(quiet), MAX_CHANNELS, _listed(quiet))
    queue: deque[int] = deque(chosen)
    done: set[int] = set()
    handing = asyncio.Lock()  # the sink takes one event at a time, as from the live path
    stopped = False

    async def look() -> None:
        nonlocal stopped
        while queue and not stopped:
            channel_id = queue.popleft()
            read = await _read(client, channel_id, last_seen[channel_id], deliver, seen, now, handing, left)
            if read != "read":
                (left.again if read == "again" else left.unread).append(channel_id)
            done.add(channel_id)
            if read == "again" and left.rereads.down and not stopped:
                stopped = True
                if queue:
                    log.warning("discord: the catch-up stopped at a read that failed for all of Discord (channel %s,"
                                " above): channel(s) %s not looked at yet; what was sent there while the gateway was"
                                " down is looked for once Discord answers again", channel_id, _listed(list(queue)))

    try:
        async with asyncio.timeout(deadline), asyncio.TaskGroup() as looking:
            for _ in range(min(LOOKUPS, len(chosen))):
                looking.create_task(look())
    except TimeoutError:
        log.warning("discord: the catch-up did not finish within %g s: channel(s) %s not caught up; what was sent"
                    " there while the gateway was down is looked for again while live messages flow", deadline,
                    _listed([c for c in chosen if c not in done]))
    left.again += [c for c in chosen if c not in done]
    return left


async def reread(client: discord.Client, left: Left, after: Mapping[int, int], deliver: Deliver, seen: Seen,
                 caught_up: Callable[[int], None], *, clock: Callable[[], float]) -> None:
    """Read again the channels ``left.again``, one at a time, each once `Rereads.turn` lets it, after
    the message ``after[channel_id]`` (its last one seen) and no later than the catch-up looked; each
    read is `caught_up`. One whose read fails again goes after the others; one refused for good, or
    all of them once what was missed is too old to answer, are left for the next start with a warning.
    Live events flow meanwhile; ``clock`` (Discord's, `DiscordTime.now`) ages what is read. Never raises but for
    a cancellation (a stop, a new session)."""
    queue: deque[int] = deque(left.again)
    while queue:
        if not await left.rereads.turn():
            log.warning("discord: channel(s) %s not caught up: their reads failed until what was sent there while"
                        " the gateway was down was older than %g h; looked for again at the next start",
                        _listed(list(queue)), MAX_AGE / 3600)
            return
        channel_id = queue.popleft()
        read = await _read(client, channel_id, after[channel_id], deliver, seen, clock(), asyncio.Lock(), left)
        if read == "read":
            caught_up(channel_id)
        elif read == "again":
            queue.append(channel_id)


async def _read(client: discord.Client, channel_id: int, after: int, deliver: Deliver, seen: Seen, now: float,
                handing: asyncio.Lock, left: Left) -> Literal["read", "again", "unread"]:
    """`_channel`: ``read``, or how it failed (logged; by ``left.rereads`` for a reason that passes):
    ``again`` to be read again, ``unread`` left for the next start."""
    name = f"channel {channel_id}"
    try:
        await _channel(client, channel_id, after, deliver, seen, now, handing, left.before)
    except Exception as exc:
        if left.rereads.failed(name, delivery_error(exc, route=HISTORY, chat_id=str(channel_id))):
            return "again"
        log.warning("discord: could not catch up on channel %s: %s: %s; it is looked at again at the next start",
                    channel_id, type(exc).__name__, exc)
        return "unread"
    left.rereads.read(name)
    return "read"


def _snowflake(epoch: float) -> int:
    return discord.utils.time_snowflake(datetime.fromtimestamp(epoch, timezone.utc))


def _listed(channels: list[int], most: int = 10) -> str:
    shown = ", ".join(map(str, channels[:most]))
    return shown if len(channels) <= most else f"{shown} and {len(channels) - most} more"


async def _channel(client: discord.Client, channel_id: int, after: int, deliver: Deliver, seen: Seen,
                   now: float, handing: asyncio.Lock, before: int) -> None:
    channel: Any = client.get_channel(channel_id) or await client.fetch_channel(channel_id)
    newest = getattr(channel, "last_message_id", None)
    if newest is not None and newest <= after:
        return  # nothing since
    # Newest first, so that past the bound it is the oldest that are left out; one more than the
    # bound says whether any were.
    messages = [m async for m in channel.history(limit=MAX_MESSAGES + 1, after=discord.Object(after),
                                                 before=discord.Object(before), oldest_first=False)]
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
