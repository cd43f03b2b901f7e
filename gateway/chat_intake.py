"""One event of a chat handed to its session at a time, in the order they arrived.

Handling an event is quick and does not wait, except for a built-in command: ``/new``
withdraws the chat's children (their ``subagent_stop`` hooks may take a while) before
the text after it (``/new plan the trip``) is queued. Slack and the web chat hand events
over concurrently, so a message sent right after would otherwise be queued first and
answered before the text, or before the command's own answer. `ChatIntake` makes it wait
until the event before it in the same chat is handled; other chats never wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class ChatIntake:
    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._holders: dict[str, int] = {}  # events of the chat being handled or waiting: its lock goes with the last

    def turn(self, key: str, before_waiting: Callable[[], Awaitable[None]]) -> _Hold:
        """``async with`` it to hold the chat ``key`` while handling one event. Without an event
        before it this never yields to the loop; else ``before_waiting()`` is awaited first (the
        event is made durable, so the platform's acknowledgement need not wait for the chat)."""
        return _Hold(self, key, before_waiting)

    def _leave(self, key: str) -> None:
        self._holders[key] -= 1
        if not self._holders[key]:
            del self._holders[key], self._locks[key]


class _Hold:
    """One event's hold on its chat: a plain async context manager, not an async generator's,
    whose set-up and tear-down would cost every event more than the hold itself."""

    __slots__ = ("_intake", "_key", "_before_waiting", "_lock")

    def __init__(self, intake: ChatIntake, key: str, before_waiting: Callable[[], Awaitable[None]]) -> None:
        self._intake, self._key, self._before_waiting = intake, key, before_waiting

    async def __aenter__(self) -> None:
        intake, key = self._intake, self._key
        lock = intake._locks.get(key)
        if lock is None:
            lock = intake._locks[key] = asyncio.Lock()
        self._lock = lock
        intake._holders[key] = intake._holders.get(key, 0) + 1
        try:
            if intake._holders[key] > 1:
                await self._before_waiting()
            await lock.acquire()  # FIFO: a waiter is never overtaken by a later event
        except BaseException:
            intake._leave(key)
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._lock.release()
        self._intake._leave(self._key)
