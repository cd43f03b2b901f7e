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
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager


class ChatIntake:
    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._holders: dict[str, int] = {}  # events of the chat being handled or waiting: its lock goes with the last

    @asynccontextmanager
    async def turn(self, key: str, before_waiting: Callable[[], Awaitable[None]]) -> AsyncIterator[None]:
        """Hold the chat ``key`` while handling one event. Without an event before it this
        never yields to the loop; else ``before_waiting()`` is awaited first (the event is
        made durable, so the platform's acknowledgement need not wait for the chat)."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        self._holders[key] = self._holders.get(key, 0) + 1
        try:
            if self._holders[key] > 1:
                await before_waiting()
            async with lock:  # FIFO: a waiter is never overtaken by a later event
                yield
        finally:
            self._holders[key] -= 1
            if not self._holders[key]:
                del self._holders[key], self._locks[key]
