"""How fast an adapter's platform lets the gateway write: an adapter that is `Paced` gives the
`Pacing` of each chat (and of the whole account), which the outbox keeps to; one that also writes
to chats itself (`WritesAside`, `WaitsAside`) has those writes counted in and waiting their turn. An
adapter may also keep its account's overall rate itself (`AccountRate`)."""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Pacing:
    """How far apart the platform wants calls for one chat (and, ``account_*``, for all of them)."""

    call_interval: float = 0.0
    """Seconds between any two calls (sends, edits, deletes) to the chat."""
    edit_interval: float = 0.0
    """Seconds between two edits of the same message."""
    account_edit_interval: float = 0.0
    """Seconds between two edits in any of the bot's chats: a limit on the account, not the chat
    (Slack's ``chat.update``, 50 a minute per workspace)."""
    account_file_interval: float = 0.0
    """Seconds between two file sends in any of the bot's chats (Slack's upload methods)."""
    account_delete_interval: float = 0.0
    """Seconds between two deletions in any of the bot's chats, the adapter's own included (`WaitsAside`):
    Slack's ``chat.delete``, 50 a minute per workspace."""
    account_lookup_interval: float = 0.0
    """Seconds between two looks, in any of the bot's chats, for whether a part went out already
    (`platforms.base.FindsSent`): Slack's ``conversations.history`` and ``conversations.replies``, 50 a
    minute per workspace. After an outage every chat whose post lost its answer looks at once, and a
    lookup refused twice is sent blind: spaced, they are not refused."""


@runtime_checkable
class Paced(Protocol):
    """An adapter whose platform limits how fast one chat may be written to."""

    def pacing(self, chat_id: str) -> Pacing:
        """The limits for this chat (they may differ between private chats and groups)."""


@runtime_checkable
class WritesAside(Protocol):
    """A `Paced` adapter that also writes to chats itself, outside the outbox (Slack's "working"
    placeholder is a message): those writes count against the chat's pacing as the outbox's do,
    or the outbox's next call to the chat would be refused."""

    def bind_writes(self, wrote: Callable[..., None]) -> None:
        """Called once, before `Adapter.start`, with ``wrote``, which the adapter calls with the
        chat id as such a write starts and again once answered (it counts from both);
        ``wrote(chat_id, op="delete")`` for a deletion, counted only against the platform-wide
        spacing of deletions (`Pacing.account_delete_interval`); ``wrote(chat_id, op="delete",
        refused_for=seconds)`` when the platform refused one with a 429: every deletion, the
        outbox's and the adapter's in any chat, waits that long."""


@runtime_checkable
class WaitsAside(Protocol):
    """A `WritesAside` adapter whose own writes also wait their turn: without it, such a write right
    after the outbox's message to the chat is refused (Slack's placeholder drew a 429 so)."""

    def bind_turns(self, turn: Callable[..., Awaitable[None]]) -> None:
        """Called once, before `Adapter.start`, with ``turn``: awaited with the chat id, it returns
        once a progress write to the chat may go by the outbox's pacing and 429s;
        ``turn(chat_id, op="delete")``, once a deletion may go by the platform-wide spacing of
        deletions (the outbox's included), the chat's own pace aside."""


GIVE_WAY_MOST = 5
"""How many ``per`` a write that gives way waits at most before it queues as any other: its own chat's answer
waits behind it in the chat's order (the outbox sends a chat's writes one at a time), and other chats' answers
coming without end, at the account's rate, held it back without end."""
GIVES_WAY: ContextVar[bool] = ContextVar("gives_way", default=False)
"""True while the write under way only says how work is going (a progress card, a notice): the outbox sets it
around such a call (`gateway.sender`), and an `AccountRate` lets every other write waiting go first."""
STEPS_ASIDE: ContextVar[asyncio.Event | None] = ContextVar("steps_aside", default=None)
"""Set around a progress card's edit (`gateway.sender`): the event its chat sets once an answer is queued there. The
outbox sends a chat's writes one at a time, so the answer waited behind its own card's edit waiting in an
`AccountRate` (up to `GIVE_WAY_MOST` rounds: 7 s with 120 busy cards); such a wait ends with `SteppedAside` once it is
set, the edit not made. It goes after the answer, unless the card's next change (its final state) replaces it."""


class SteppedAside(Exception):
    """An `AccountRate` wait ended without a turn: the write's own chat has an answer to send first (`STEPS_ASIDE`)."""


class AccountRate:
    """At most ``count`` calls in any ``per`` seconds, whichever chats they go to: a limit on the whole
    account (Telegram's bot FAQ: about 30 messages a second overall). The outbox paces each chat on its
    own (`Pacing`), so a burst to many chats at once (a background result for each of 100 chats, a
    restart's held replies) went out all together, and Telegram refused what was past its limit with
    429s, each held in its chat for ``retry_after``. Awaiting `turn` before each write spaces them:
    callers go in the order they came, but a write that gives way (`GIVES_WAY`: a progress card's edit)
    goes after every other one waiting, for `GIVE_WAY_MOST` rounds at most. Taken in the order they came, the
    edits of many busy cards (a hundred chats, each card changing every second) took the slots an answer in
    another chat would have had, and it came seconds late. A card's edit steps aside for its own chat's answer
    (`STEPS_ASIDE`). A caller cancelled while it waits, or stepping aside, gives its place to those behind it.
    ``clock`` and ``sleep`` are seams for tests (the event loop's by default)."""

    def __init__(self, count: int, per: float, *, clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        if count < 1 or per <= 0:
            raise ValueError(f"an account rate needs count >= 1 and per > 0, not {count} in {per} s")
        self.count, self.per = count, per
        self._clock = clock
        self._sleep = sleep or asyncio.sleep
        self._taken: deque[float] = deque(maxlen=count)
        """When the latest ``count`` calls went, oldest first."""
        self._lines: tuple[deque[asyncio.Event], deque[asyncio.Event]] = (deque(), deque())
        """The callers waiting, each by the event that wakes it early: those that go first, those that give way."""

    async def turn(self) -> None:
        """Returns once a call may go: fewer than ``count`` went in the ``per`` seconds before it, and every
        caller ahead of it has gone."""
        now = self._now()
        if not self._lines[0] and not self._lines[1] and self._free(0, now) <= now:
            self._taken.append(now)
            return
        aside = STEPS_ASIDE.get()
        me = asyncio.Event()
        line = self._lines[GIVES_WAY.get()]
        line.append(me)
        behind_by = now + GIVE_WAY_MOST * self.per  # when one giving way goes to the end of the first line
        try:
            while (at := self._free(self._place(me), now := self._now())) > now:
                if aside is not None and aside.is_set():
                    raise SteppedAside("its own chat's answer goes first")
                if line is self._lines[1] and now >= behind_by:
                    line.remove(me)
                    line = self._lines[0]
                    line.append(me)
                    continue
                # Woken at its turn, or early when one ahead gave up; a caller put ahead of it meanwhile (an
                # answer ahead of an edit) makes it wait on when it wakes.
                await self._wait(me, min(at, behind_by) if line is self._lines[1] else at, aside)
        except BaseException:
            place = self._place(me)
            line.remove(me)
            for behind in itertools.islice(itertools.chain(*self._lines), place, None):
                behind.set()  # their turns come a slot sooner
            raise
        line.remove(me)
        self._taken.append(now)

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def _place(self, me: asyncio.Event) -> int:
        """How many callers wait ahead of ``me``."""
        urgent, giving_way = self._lines
        if me in giving_way:
            return len(urgent) + giving_way.index(me)
        return urgent.index(me)

    def _free(self, place: int, now: float) -> float:
        """When a caller with ``place`` callers waiting ahead of it may go, each of them going as soon as it may.
        The ``n``-th call from now (0: the next) goes ``per`` after the one ``count`` before it, and not before
        ``now``."""
        nth = len(self._taken) + place - self.count
        if nth < 0:
            return now
        rounds, slot = divmod(nth, self.count)
        after = self._taken[slot] if slot < len(self._taken) else now
        return max(now + rounds * self.per, after + (rounds + 1) * self.per)

    async def _wait(self, me: asyncio.Event, until: float, aside: asyncio.Event | None) -> None:
        me.clear()
        waits = [asyncio.ensure_future(self._sleep_until(until)), asyncio.ensure_future(me.wait())]
        if aside is not None:
            waits.append(asyncio.ensure_future(aside.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _sleep_until(self, until: float) -> None:
        """Until the time ``until``, read when the sleep starts: the loop may run other work between a caller
        working out its turn and its sleep's task starting, and a length counted from then passed its turn."""
        if (left := until - self._now()) > 0:
            await self._sleep(left)
