"""When the outbox may next call a platform for one chat, and waits that yield to urgent work.

Three limits combine: the adapter's spacing of calls to one chat (Telegram: 20 messages a
minute in groups), its spacing of edits to one message (Telegram: one a second), and a
platform's 429, which holds the chat for ``retry_after``: all of it when a reply was
refused, only its progress messages (notices, cards) when one of those was — a storm of
refused card edits never holds back the answer. A wait for a progress message gives way
the moment a reply is queued in the same chat.
"""

from __future__ import annotations

import asyncio

from agent import Clock
from platforms.base import Adapter, Paced, Pacing

ChatKey = tuple[str, str, str | None]
NO_PACING = Pacing()
_PRUNE_AT = 1024


def pacing_of(adapter: Adapter, chat_id: str) -> Pacing:
    return adapter.pacing(chat_id) if isinstance(adapter, Paced) else NO_PACING


class Pacer:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last_call: dict[ChatKey, float] = {}
        self._last_edit: dict[tuple[ChatKey, str], float] = {}
        self._blocked: dict[tuple[ChatKey, bool], float] = {}

    def delay(self, chat: ChatKey, adapter: Adapter, *, edit_of: str | None = None, progress: bool = False) -> float:
        """Seconds until a call to ``chat`` (an edit of message ``edit_of``; a progress message)
        may go; 0 when now."""
        now = self._clock.monotonic()
        pacing = pacing_of(adapter, chat[1])
        blocked = self._blocked.get((chat, False), 0.0)
        if progress:
            blocked = max(blocked, self._blocked.get((chat, True), 0.0))
        due = max(blocked, self._last_call.get(chat, -1e18) + pacing.call_interval)
        if edit_of is not None:
            due = max(due, self._last_edit.get((chat, edit_of), -1e18) + pacing.edit_interval)
        return max(0.0, due - now)

    def called(self, chat: ChatKey, *, edit_of: str | None = None) -> None:
        now = self._clock.monotonic()
        self._last_call[chat] = now
        if edit_of is not None:
            self._last_edit[(chat, edit_of)] = now
        if len(self._last_call) + len(self._last_edit) > _PRUNE_AT:  # forget what no interval still covers
            horizon = now - 3600.0
            self._last_call = {c: t for c, t in self._last_call.items() if t > horizon}
            self._last_edit = {k: t for k, t in self._last_edit.items() if t > horizon}
            self._blocked = {k: t for k, t in self._blocked.items() if t > now}

    def block(self, chat: ChatKey, seconds: float, *, progress: bool = False) -> None:
        """The platform asked the chat to wait (a 429): every call to it waits too, or with
        ``progress`` (a progress message was refused) only its progress messages."""
        key = (chat, progress)
        self._blocked[key] = max(self._blocked.get(key, 0.0), self._clock.monotonic() + seconds)

    async def wait(self, seconds: float, preempt: asyncio.Event | None = None) -> bool:
        """Sleep ``seconds`` on the clock; False (at once) if ``preempt`` is set first."""
        if preempt is not None and preempt.is_set():
            return False
        if seconds <= 0:
            return True
        if preempt is None:
            await self._clock.sleep(seconds)
            return True
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        waiter = asyncio.ensure_future(preempt.wait())
        try:
            await asyncio.wait((sleeper, waiter), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, waiter):
                task.cancel()
        return not preempt.is_set()
