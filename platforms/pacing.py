"""How fast an adapter's platform lets the gateway write: an adapter that is `Paced` gives the
`Pacing` of each chat (and of the whole account), which the outbox keeps to; one that also writes
to chats itself (`WritesAside`, `WaitsAside`) has those writes counted in and waiting their turn. An
adapter may also keep its account's overall rate itself (`AccountRate`)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
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


class AccountRate:
    """At most ``count`` calls in any ``per`` seconds, whichever chats they go to: a limit on the whole
    account (Telegram's bot FAQ: about 30 messages a second overall). The outbox paces each chat on its
    own (`Pacing`), so a burst to many chats at once (a background result for each of 100 chats, a
    restart's held replies) went out all together, and Telegram refused what was past its limit with
    429s, each held in its chat for ``retry_after``. Awaiting `turn` before each write spaces them:
    callers go in the order they came (each reserves its slot as it asks), and a caller cancelled while
    it waits leaves its slot taken, which only spaces the next ones a little more. ``clock`` and ``sleep``
    are seams for tests (the event loop's by default)."""

    def __init__(self, count: int, per: float, *, clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        if count < 1 or per <= 0:
            raise ValueError(f"an account rate needs count >= 1 and per > 0, not {count} in {per} s")
        self.count, self.per = count, per
        self._clock = clock
        self._sleep = sleep or asyncio.sleep
        self._slots: deque[float] = deque()
        """When the latest ``count`` calls went (or will go), oldest first."""

    async def turn(self) -> None:
        """Returns once a call may go: fewer than ``count`` went in the ``per`` seconds before it."""
        now = self._clock() if self._clock is not None else asyncio.get_running_loop().time()
        slot = max(now, self._slots[0] + self.per) if len(self._slots) >= self.count else now
        self._slots.append(slot)
        if len(self._slots) > self.count:
            self._slots.popleft()
        if slot > now:
            await self._sleep(slot - now)
