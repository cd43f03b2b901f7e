"""Catching up, at start, on what was said to the bot while the gateway was down (and after a long outage).

Slack delivers an event to an open Socket Mode connection or the Events API URL, retries it a few
times over a few minutes (at once, after a minute, after five) and then gives up: a message sent
while the gateway was stopped, crashed or being deployed for longer than that never comes as an
event. So at each start the adapter reads the conversations it was talking in, for the messages
after the newest one the gateway took in there (`CatchUp.run`, ``conversations.history`` for a
DM's or channel's top level, ``conversations.replies`` for a thread), and hands each on as the
live event would have been, oldest first: the same checks (only what is addressed to the bot, no
bot's message, no edits, joins or other subtypes), the same ``event_id``, so the gateway's inbox
drops a message that also comes as a late retried event. Its ``ts`` is when it was sent, so the
answer opens with the late note (`gateway.late_notes`).

Socket Mode's connection lost while the gateway runs loses events alike, once the outage outlasts
Slack's retries: a reconnect after `Limits.after_outage` or more catches up the same way
(`SlackAdapter._reconnected`), from the newest message recorded as taken in per conversation
(`platforms.slack_seen.TakenIn.recorded`), within the same bounds, and one INFO line counts what it
handed on. It replaces a catch-up still running, reading the conversations that one had still to
read (`CatchUp.pending`); what that one left unread stays `CatchUp.behind` unless this one reads it.

Live events come meanwhile (Slack sends them as soon as the connection is open, and the catch-up
may take minutes): one in a conversation still to be caught up (a thread a message read back opens is
one from the moment that message is handed on) waits until what was read there is handed on
(`CatchUp.hand_on_after`), so that it comes after the older ones, as they were sent, and that
conversation is read next. It waits `Limits.live_wait` at most: should Slack not answer a read, it
is handed on all the same, before the older ones, rather than held for good, and the later ones there
do not wait any more. What came after the catch-up began came live: a read stops there (by Slack's
clock, which its first answer tells ours apart from, with a minute's margin), so that the messages
missed are the ones read, however busy the conversation was since. A live message in a channel's
thread new to the catch-up, whose parent came after what was taken in at the channel's top level, is
recorded only once that top level is read (`CatchUp.record_now`): a mention read back there opens the
thread, which is then read from it; recorded at once, the live message passed the replies missed
there, and a crash before that read lost them for good. Meanwhile the thread is recorded just after its
parent, so that a stop or a crash before then leaves it to the next start, which reads it right after
its channel.

A read that fails for a reason that passes (Slack failing or unreachable, a 429 waited out
`RATE_LIMITED_TRIES` times, the bot token refused) is tried again while the adapter runs, after a
wait that depends on the reason (`platforms.rereads`), until the conversation is read, or what was
missed there is too old to answer: left to the next start, which may be days away, its messages
were as good as lost. Meanwhile its conversation is recorded no further than before (what came live
there is, once it is read). The retries last as long as the outage, and the warning of what was
skipped comes at their end: so a warning says how far the first pass got when some wait for a retry
(it is over once each conversation was tried, or at a read that failed for all of Slack,
`Rereads.down`: the others wait with it), and an INFO line says when none waits any more.

Bounds: messages older than `Limits.max_age` (by Slack's clock, as above) and all but the newest
`Limits.max_messages` for the bot in a conversation are skipped, and only the
`Limits.max_conversations` most recently active conversations are read; one warning says what was
skipped. Both methods are Slack's Tier 3 (about 50 calls a minute, shared with the placeholder
clean-up): calls are `Limits.pace` seconds apart, and a 429 is waited out (``Retry-After``, a minute
at most: `Limits.max_retry_after`) a few times before the read counts as failed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from platforms.base import RateLimited
from platforms.connection import TokenWatch
from platforms.rereads import FIRST_WAIT, MAX_WAIT, Rereads

log = logging.getLogger("platforms.slack")

Where = tuple[str, str | None]
"""A conversation: a channel (or DM), and a thread's ts in it or None for its top level."""
Page = Callable[..., Awaitable[tuple[list[dict[str, Any]], str | None]]]
"""``page(channel, thread_ts, oldest=..., cursor=...)``: one page of messages and the next cursor."""
PAGES = 5
"""Pages read per conversation at most (of the adapter's page size)."""
RATE_LIMITED_TRIES = 3
CLOCK_SKEW = 60.0
"""Seconds past the catch-up's start that its reads still ask for: Slack's servers' clocks may differ from one
another, and the ``Date`` its answers are timed by (`Messages.answered_at`) is in whole seconds."""


def conversation_key(where: Where) -> str:
    """How the gateway's store names a conversation: ``C1``, or ``C1/<thread ts>`` for a thread
    (Slack's channel ids have no slash)."""
    channel, thread = where
    return channel if thread is None else f"{channel}/{thread}"


def where_of(key: str) -> Where:
    """The conversation a `conversation_key` names."""
    channel, _, thread = key.partition("/")
    return channel, thread or None


def ts_key(ts: str) -> tuple[int, int]:
    """A Slack ``ts`` (``seconds.micros``, a string) in order; a float would round the micros away."""
    seconds, _, micros = ts.partition(".")
    return int(seconds), int(micros.ljust(6, "0")[:6] or 0)


@dataclass(frozen=True)
class Limits:
    max_age: float = 24 * 3600.0
    """Seconds: an older message is not answered any more (it is counted as skipped)."""
    max_messages: int = 20
    """Messages for the bot handed on per conversation at most: the newest ones."""
    max_conversations: int = 100
    """Conversations read per start at most: those with the newest message taken in."""
    pace: float = 60 / 50
    """Seconds between two reads: Slack allows about 50 a minute of each method."""
    live_wait: float = 60.0
    """Seconds a live message waits at most for the catch-up of its conversation to be handed on."""
    first_retry: float = FIRST_WAIT
    """Seconds before a read that failed for an outage (a 5xx, no connection) is tried again, doubling
    after each failed read in a row (`platforms.rereads`)."""
    max_retry: float = MAX_WAIT
    """Seconds at most between two tries of a read that keeps failing for an outage."""
    max_retry_after: float = 60.0
    """Seconds a 429's ``Retry-After`` is waited at most, between tries and before the read is tried again
    (`platforms.rereads`): Slack's rate limits count by the minute, and a proxy's 86400 or far-off HTTP-date
    held the whole catch-up, and the messages it hands on, for a day."""
    after_outage: float = 60.0
    """Seconds the Socket Mode connection was lost for, at least, for its reconnect to catch up as a start
    does: Slack retries an event at once, after a minute and after five, then drops it, so a longer outage
    loses the messages sent meanwhile (a shorter one, such as Slack's own refresh of the connection, is
    left to the retries: a catch-up reads up to `max_conversations` conversations, ``pace`` apart)."""


@dataclass
class _Skipped:
    too_old: int = 0
    too_many: int = 0
    unread: list[str] = field(default_factory=list)
    """Conversations not read (or not to the end): why, one line each."""
    refused: int = 0
    """Conversations whose read Slack refused for good."""


class CatchUp:
    """One start's catch-up of the conversations in ``last_seen`` (where -> the newest ts taken in).
    ``addressed(event)`` says whether the live path would hand the message on; ``take(event)``
    hands it on and returns once the gateway has it (handing it over again while the gateway's
    store refuses it, the catch-up waiting) with the conversations it is now the newest message of;
    ``seen(channel, thread_ts, ts)`` records how far a conversation was read; ``token`` watches the
    bot token, which a refused read waits for; ``clock`` (epoch seconds) ages the messages read until Slack's
    first answer tells its time, counted on from then on ``monotonic`` (`_slack_clock`), which also counts when
    reads failing are given up (`Rereads`: a day after the start, not when a stepped wall clock says so).
    Made before live events can come, so that from the first one on `holds` knows what is still to
    be read."""

    def __init__(self, page: Page, last_seen: dict[Where, str], *, addressed: Callable[[dict[str, Any]], bool],
                 take: Callable[[dict[str, Any]], Awaitable[Sequence[Where]]],
                 seen: Callable[[str, str | None, str], None], token: TokenWatch, limits: Limits = Limits(),
                 clock: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic,
                 after: str | None = None, behind: set[Where] | frozenset[Where] = frozenset()) -> None:
        """``after``: what the catch-up follows when not a start (an outage of Socket Mode), named in the
        line that counts what it read; ``behind``: the conversations an earlier catch-up left unread, which
        stay `behind` unless this one reads them."""
        self._page, self._addressed, self._take, self._seen = page, addressed, take, seen
        self._limits, self._clock, self._monotonic, self._after = limits, clock, monotonic, after
        self._reads = 0
        self._handed_on = 0
        started = clock()
        self._started = monotonic()
        self._latest = f"{started + CLOCK_SKEW:.6f}"
        """The newest ``ts`` a read asks for: what came later came live. On Slack's clock once its first answer
        tells its time (`_slack_clock`)."""
        self._slack_ahead: float | None = None
        """Slack's time less ``monotonic``'s, from its first answer; None until then. Not ``clock``'s: NTP
        stepping a stale clock right during the catch-up, as it soon does, would put Slack's time off by as much."""
        self._rereads = Rereads(token, log, platform="slack", give_up_at=self._started + limits.max_age,
                                clock=monotonic, first=limits.first_retry, most=limits.max_retry,
                                max_retry_after=limits.max_retry_after)
        self._last_seen = last_seen
        order = sorted(last_seen.items(), key=lambda item: _read_at(item, last_seen), reverse=True)
        self._queue = deque(order[:limits.max_conversations])
        self._quiet = len(order) - len(self._queue)
        self.reading: dict[Where, str | None] = {where: None for where, _ in self._queue}
        """Conversations being caught up, or still to be -> the newest ts a live event took in there
        meanwhile: recorded only once the older messages read have been handed on, so a crash cannot
        skip them."""
        self.behind: set[Where] = set(behind) - set(self.reading)
        """Conversations left unread, or not read to the end (a failure, a thread's newest): what was said
        there while the gateway was down is not handed on yet, so a live message must not be recorded
        past it; the next start reads them from where they were left (the inbox drops what was answered
        live meanwhile)."""
        self._handed: dict[Where, asyncio.Event] = {}
        """Set once what was read in a conversation is handed on: the live messages there wait for it."""
        self._let_through: set[Where] = set()
        """Conversations still to be read where a live message waited `Limits.live_wait` out: the later
        ones there do not wait (a read failing for long would hold each of them that long)."""
        self._left_to_threads: dict[Where, dict[str, dict[str, Any]]] = {}
        """Thread -> its replies also sent to the channel that the channel's read, recorded past them, left to
        the thread's read (`_read_in_its_thread`), by ts, until handed on there or after (`_hand_on_left`)."""
        self._unopened: set[Where] = set()
        """Threads new to the catch-up that a live message was taken in, whose parent its channel's read is still
        to come to (`_parent_unread`): in `reading`, so not recorded, until that read opens them (a mention read
        back there: `_opening`) or ends without (`_release_unopened`). Recorded at once, the live message passed
        the replies missed there, which the thread's read opened by the mention would hand on: a crash before
        then lost them for good. Live messages there do not wait meanwhile (`holds`): the thread may be people's.
        Recorded just after its parent meanwhile, for the next start to read should this one never come to it."""

    async def run(self) -> None:
        """Catch up on the conversations, the most recently active first (one a live message waits
        for, next); one whose read failed for a reason that passes is read again, after the others,
        once `platforms.rereads.Rereads` says so. Never raises but for cancellation: a failure of
        another kind, a stop, or reads failing until what is left is too old to answer, leaves the
        conversation where it was, for the next start."""
        skipped = _Skipped()
        if self._quiet:
            skipped.unread.append(f"{self._quiet} conversation(s) quiet longest, over {self._limits.max_conversations}")
        tried: set[Where] = set()
        ended = 0  # conversations read, or refused for good
        first_pass: int | None = None  # those read when the first pass ended with some waiting for a retry
        try:
            while self._queue:
                if first_pass is None and (self._rereads.down or all(where in tried for where, _ in self._queue)):
                    first_pass = ended - skipped.refused
                    log.warning("slack: catching up: first pass over, %d conversation(s) read, %s%d waiting for a"
                                " retry (see the failed reads above); a line says when all are read", first_pass,
                                f"{skipped.refused} refused, " if skipped.refused else "", len(self._queue))
                if not await self._rereads.turn():
                    skipped.unread.append(f"{', '.join(_name(where) for where, _ in self._queue)}: reads failed"
                                          f" until what was missed there was older than"
                                          f" {self._limits.max_age / 3600:g} h")
                    break
                where, ts = self._queue.popleft()
                tried.add(where)
                opened = await self._conversation(where, ts, skipped)
                if opened is None:  # to be read again, after the others
                    self._queue.append((where, ts))
                    continue
                ended += 1
                self._done(where)
                for other in opened:  # a thread a caught-up mention opened: read it too, next if a live one waits
                    (self._queue.appendleft if other[0] in self._handed else self._queue.append)(other)
            for thread in list(self._left_to_threads):  # reads given up on, or one whose handing on failed
                await self._hand_on_left(thread)
        finally:  # ended, given up or cancelled: no live message waits any more
            self.behind.update(self.reading)  # what was not read, the next start reads
            for where in list(self.reading):
                self._done(where)
            waiting = len(self._queue)
            self._queue.clear()
            self._last_seen = {}
        if self._after is not None:
            log.info("slack: caught up after %s: %d message(s) for the bot handed on, from %d conversation(s) read",
                     self._after, self._handed_on, ended - skipped.refused)
        if first_pass is not None and not waiting:
            read = ended - skipped.refused
            log.info("slack: catching up: nothing left waiting for a retry: %d conversation(s) read, %d of them after"
                     " the first pass", read, read - first_pass)
        if skipped.too_old or skipped.too_many or skipped.unread:
            log.warning("slack: catching up on messages sent while the gateway was down skipped %d older than %g h"
                        " and %d over %d per conversation%s", skipped.too_old, self._limits.max_age / 3600,
                        skipped.too_many, self._limits.max_messages,
                        "; not read: " + "; ".join(skipped.unread) if skipped.unread else "")

    def pending(self) -> dict[Where, str]:
        """The conversations still to be read, and after which ts: carried over by a catch-up that replaces
        this one (the one being read now is recorded no further than where its read began)."""
        return dict(self._queue)

    def _done(self, where: Where) -> None:
        self.reading.pop(where, None)
        self._let_through.discard(where)
        if (handed := self._handed.pop(where, None)) is not None:
            handed.set()
        if where[1] is None:
            self._release_unopened(where[0])

    def _release_unopened(self, channel: str) -> None:
        """The threads held for their parent at ``channel``'s top level that its read did not open (`_unopened`):
        recorded as far as the live messages there went, or, the read left unfinished (it may hold the parent),
        behind with it."""
        for thread in [where for where in self._unopened if where[0] == channel]:
            self._unopened.discard(thread)
            live = self.reading.get(thread)
            if (channel, None) in self.behind:
                self.behind.add(thread)
            elif live is not None:
                self._seen(*thread, live)
            self._done(thread)

    def holds(self, conversations: Sequence[Where]) -> bool:
        """Whether a live message in ``conversations`` must wait (`hand_on_after`): one is still to be
        caught up, and no live message there waited that out already."""
        return any(self._waits_for(where) for where in conversations)

    def _waits_for(self, where: Where) -> bool:
        return where in self.reading and where not in self._let_through and where not in self._unopened

    async def hand_on_after(self, conversations: Sequence[Where], hand_on: Callable[[], Awaitable[None]]) -> None:
        """``hand_on()`` a live message once the catch-up has handed on what it read in
        ``conversations`` (those of the message), so that it comes after the older ones, as they were
        sent; a conversation still to be read is read next. After `Limits.live_wait` seconds it is
        handed on all the same, with a warning: perhaps before older ones, but never held for long; and
        the later ones there are handed on at once (`holds`)."""
        waiting = [where for where in conversations if self._waits_for(where)]
        queued = [item for item in self._queue if item[0] in waiting]
        for item in queued:
            self._queue.remove(item)
        self._queue.extendleft(reversed(queued))
        try:
            async with asyncio.timeout(self._limits.live_wait):
                for where in waiting:
                    if where in self.reading:
                        await self._handed.setdefault(where, asyncio.Event()).wait()
        except TimeoutError:
            self._let_through.update(where for where in waiting if where in self.reading)
            log.warning("slack: a live message in %s waited %g s for the catch-up there; handed on now, perhaps"
                        " before older ones, and the later ones there at once", ", ".join(map(_name, waiting)),
                        self._limits.live_wait)
        await hand_on()

    def record_now(self, where: Where, ts: str) -> bool:
        """Whether a message's ``ts`` taken in ``where`` may be recorded now: not where the catch-up
        left messages unread (the next start reads on from there), nor, until it is done there, where
        it is to read (it records the newest of what it read and what came live meanwhile then), a thread
        whose parent it has still to read at its channel's top level included (`_unopened`)."""
        if where in self.behind:
            return False
        if where not in self.reading and self._parent_unread(where):
            self._unopened.add(where)
            self.reading[where] = None
            # Just after its parent meanwhile: a stop, a crash, a reconnect's catch-up or a refused read before the
            # channel's read opened it or let it go left it unrecorded, and no later start read it at all.
            self._seen(*where, str(where[1]))
        if where in self.reading:
            held = self.reading[where]
            if held is None or ts_key(ts) > ts_key(held):
                self.reading[where] = ts
            return False
        return True

    def _parent_unread(self, where: Where) -> bool:
        """Whether ``where`` is a channel's thread new to the catch-up whose parent the read of the channel's top
        level, still to come or under way, may hand on: sent after what was taken in there, before the catch-up
        began (a later one came live). A mention there opens the thread, read from it (`_opening`)."""
        channel, thread = where
        top = (channel, None)
        if thread is None or channel.startswith("D") or where in self._last_seen or top not in self.reading:
            return False
        last = self._last_seen.get(top)
        return last is not None and ts_key(last) < ts_key(thread) <= ts_key(self._latest)

    async def _conversation(self, where: Where, last: str, skipped: _Skipped) -> list[tuple[Where, str]] | None:
        """Hand on what came after ``last`` there, with one line saying what it found; the other
        conversations the messages handed on are the newest of (a thread a mention opened), now being
        caught up (`reading`). How far it got is recorded whatever happens. None when the read failed and
        is to be tried again
        (`platforms.rereads`): nothing was handed on, nor recorded."""
        channel, thread = where
        try:
            messages, more = await self._read(where, last)
        except Exception as exc:  # Slack failing, or refusing the read
            if self._rereads.failed(_name(where), exc):
                return None  # read again later, in order: handed on at the end of the run should that never work
            await self._hand_on_left(where)  # refused for good: out of order now rather than lost
            skipped.unread.append(f"{_name(where)}: {exc}")
            skipped.refused += 1
            self.behind.add(where)
            return []
        self._rereads.read(_name(where))
        done, complete, handed = last, False, 0
        opened: list[tuple[Where, str]] = []
        try:
            cutoff = self._now() - self._limits.max_age
            mine = [m for m in messages if self._addressed(m)]
            fresh = [m for m in mine if float(m["ts"]) >= cutoff]
            kept = fresh[-self._limits.max_messages:]
            left_here = self._left_to_threads.get(where, {})
            # Within the channel's limit, the channel's read kept those it left here: handed on in their place.
            keep = {id(m) for m in kept} | {id(m) for m in fresh if m["ts"] in left_here}
            too_old, too_many = len(mine) - len(fresh), len(fresh) - len(keep)
            skipped.too_old += too_old
            skipped.too_many += too_many
            for message in messages:
                if id(message) in keep and self._read_in_its_thread(where, message):
                    self._left_to_threads.setdefault((channel, str(message["thread_ts"])), {})[message["ts"]] = message
                elif id(message) in keep:
                    left_here.pop(message["ts"], None)
                    opens = self._opening(where, message)
                    for other in await self._take(message):
                        if other == opens:  # recorded here: `record_now` held it, being read
                            self._seen(*other, message["ts"])
                            opened.append((other, message["ts"]))
                            opens = None
                        elif other != where and other not in self.reading and other not in self._last_seen:
                            self.reading[other] = None
                            opened.append((other, message["ts"]))
                    if opens is not None:  # it opened none: no live message there waits any more
                        self._done(opens)
                    handed += 1
                    self._handed_on += 1
                done = message["ts"]
            handed += await self._hand_on_left(where)  # past the pages read
            complete = not (more and thread)  # a thread's newest are unread: a live ts must not pass over them
            if more:
                skipped.unread.append(f"{_name(where)} past its first {len(messages)} new messages (the next start"
                                      " reads on)" if thread else f"{_name(where)}'s messages before the newest"
                                      f" {len(messages)}")
            if kept or too_old or too_many:
                log.info("slack: caught up on %s: %d message(s) for the bot handed on, %d skipped", _name(where),
                         handed, too_old + too_many)
        except Exception as exc:  # a message that could not be handed on
            skipped.unread.append(f"{_name(where)}: {exc}")
        finally:
            live = self.reading.get(where)
            if not complete:
                self.behind.add(where)
            elif live is not None and ts_key(live) > ts_key(done):
                done = live
            if done != last:
                self._seen(channel, thread, done)
        return opened

    def _read_in_its_thread(self, where: Where, message: dict[str, Any]) -> bool:
        """Whether a message read at a top level is a reply also sent there (a ``thread_broadcast``) whose thread
        this catch-up reads too: handed on there, after the replies sent before it, not here ahead of them
        (the agent was asked the last question first), or after that read if it does not (`_left_to_threads`).
        Checked as it comes: a mention read just before may have opened the thread."""
        channel, thread = where
        thread_ts = message.get("thread_ts")  # at a top level, only a broadcast reply's (`_as_event`)
        return thread is None and thread_ts is not None and (channel, str(thread_ts)) in self.reading \
            and (channel, str(thread_ts)) not in self._unopened

    async def _hand_on_left(self, thread: Where) -> int:
        """Hand on the replies the channel's read left to ``thread``'s that it did not hand on (it failed, stopped
        short of them, or never came): out of order rather than lost, the channel's record being past them. One
        handed on there too, later or at the next start, is dropped by the inbox (the same ``<channel>:<ts>``).
        How many it handed on."""
        left = self._left_to_threads.pop(thread, {})
        for ts in sorted(left, key=ts_key):
            await self._take(left[ts])
            self._handed_on += 1
        return len(left)

    def _opening(self, where: Where, message: dict[str, Any]) -> Where | None:
        """The thread a message read at a channel's top level may open (a mention starts one; a
        thread_broadcast is in one), if it is new: from now on being caught up (`reading`), before the
        message is handed on. Handing it on puts the bot in that thread: a live reply there meanwhile
        was handed on before the replies missed there, and recorded past them (a stop or a crash
        before the thread was read then lost them for good)."""
        channel, thread = where
        if thread is not None or message.get("channel_type") == "im":
            return None
        opens = (channel, str(message.get("thread_ts") or message["ts"]))
        if opens in self._unopened:  # a live message there is held in `reading`, recorded once the thread is read
            self._unopened.discard(opens)
            return opens
        if opens in self.reading or opens in self._last_seen:
            return None
        self.reading[opens] = None
        return opens

    async def _read(self, where: Where, last: str) -> tuple[list[dict[str, Any]], bool]:
        """The messages after ``last`` (and before the catch-up began, `CLOCK_SKEW` aside), oldest first,
        and whether more were left unread (a thread's newest, or a top level's oldest:
        `conversations.history` pages from the newest)."""
        channel, thread = where
        while True:
            asked, messages, cursor = self._latest, [], None
            for _ in range(PAGES):
                page, cursor = await self._paced(channel, thread, last, cursor)
                self._slack_clock(page)
                messages += [m for m in page if ts_key(str(m.get("ts") or "0")) > ts_key(last)]
                if not cursor:
                    break
            if self._slack_ahead is None or float(asked) >= self._started + self._slack_ahead:
                break  # else asked up to before the catch-up began, by Slack's clock: read again, up to it (once)
        if thread is None:
            messages.reverse()
        return [_as_event(m, channel, thread) for m in messages], cursor is not None

    def _slack_clock(self, page: list[dict[str, Any]]) -> None:
        """Learn from Slack's first answer how far our clock is off, and bound the reads and ages by Slack's clock
        from then on: the messages' ts are on it. On ours, a clock behind (a VM resumed, a board that booted with a
        stale time, before NTP stepped it) asked for none of the messages sent while the gateway was down, and a
        live one recorded past them lost them for good; one ahead by a day skipped them all as too old."""
        answered_at = getattr(page, "answered_at", None)
        if self._slack_ahead is not None or answered_at is None:
            return
        self._slack_ahead = answered_at - self._monotonic()
        if abs(ahead := answered_at - self._clock()) > CLOCK_SKEW:
            log.warning("slack: this host's clock is %.0f s %s Slack's; catching up on Slack's", abs(ahead),
                        "behind" if ahead > 0 else "ahead of")
        self._latest = f"{self._started + self._slack_ahead + CLOCK_SKEW:.6f}"

    def _now(self) -> float:
        """Now on Slack's clock, once its first answer told it (`_slack_clock`); on ours until then."""
        return self._clock() if self._slack_ahead is None else self._monotonic() + self._slack_ahead

    async def _paced(self, channel: str, thread: str | None, last: str,
                     cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
        tries = 0
        while True:
            if self._reads:
                await asyncio.sleep(self._limits.pace)
            self._reads += 1
            try:
                return await self._page(channel, thread, oldest=last, latest=self._latest, cursor=cursor)
            except RateLimited as exc:
                tries += 1
                # Capped on the error itself: the read's retry after the last try waits its retry_after too.
                exc.retry_after = min(exc.retry_after, self._limits.max_retry_after)
                if tries == RATE_LIMITED_TRIES:
                    raise
                await asyncio.sleep(exc.retry_after)


def _read_at(item: tuple[Where, str], last_seen: dict[Where, str]) -> tuple[tuple[int, int], int]:
    """Where ``item`` comes in the order of the reads, the most recently active first: a thread recorded just after
    its parent, which its channel's record is older than (`CatchUp.record_now` held it so), right after its channel,
    whose read may hand on the parent first, a mention putting the bot in the thread that its replies then address."""
    (channel, thread), ts = item
    top = last_seen.get((channel, None))
    if thread == ts and top is not None and ts_key(top) < ts_key(ts):
        return ts_key(top), 0
    return ts_key(ts), 1


def _as_event(message: dict[str, Any], channel: str, thread: str | None) -> dict[str, Any]:
    """A message read back, as its live ``message`` event had it: the event names its channel, and a
    top-level message has no ``thread_ts`` (read back, a thread's parent carries its own ts as one)."""
    event = {**message, "channel": channel, "channel_type": "im" if channel.startswith("D") else "channel"}
    if thread is None and event.get("thread_ts") == event.get("ts"):
        del event["thread_ts"]
    return event


def _name(where: Where) -> str:
    channel, thread = where
    return f"{channel} thread {thread}" if thread else channel
