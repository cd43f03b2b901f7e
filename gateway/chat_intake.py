"""One event of a chat handed to its session at a time, in the order they arrived.

Handling an event is quick and does not wait, except for a built-in command: ``/new``
withdraws the chat's children (their ``subagent_stop`` hooks may take a while) before
the text after it (``/new plan the trip``) is queued. Slack and the web chat hand events
over concurrently, so a message sent right after would otherwise be queued first and
answered before the text, or before the command's own answer. `ChatIntake` makes it wait
until the event before it in the same chat is handled; other chats never wait.

A start queues the events it replays (those that waited for their turns when the last process ended) only once
its platforms have started, and a platform started first may hand over a newer event of the same chat before
that: `Replays` makes it wait until they are queued, so that the chat is answered in the order it was written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable


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


class Replays:
    """The chats a start replays events of, while it has not queued them all."""

    def __init__(self) -> None:
        self._due: dict[str, _Due] = {}

    def due(self, keys: Iterable[str]) -> None:
        """At start, before any platform does: the chat of each event to replay, once per event."""
        self._due = {}
        for key in keys:
            self._due.setdefault(key, _Due()).left += 1

    def queued(self, key: str) -> None:
        """One replayed event of the chat ``key`` is queued: its last lets the chat's new events go on."""
        if (due := self._due.get(key)) is not None:
            due.left -= 1
            if not due.left:
                del self._due[key]
                due.queued = True
                due.set()

    def give_up(self) -> None:
        """The start failed or was stopped before it queued them: from now on, the new events of those chats wait
        no more, and are not handled in this process either (`behind`). Nothing once the start queued them all."""
        for due in self._due.values():
            due.set()

    async def behind(self, key: str, message_id: str | None = None) -> bool:
        """Wait until the replayed events of the chat ``key`` are queued; never yields to the loop when it has
        none. Whether a new event of the chat may be handled now: not after the start gave up (it is kept,
        unhandled, for the next start, which replays it after them). ``message_id``: the platform's id of the
        event's message, which an edit of it handed over meanwhile names (`edited`)."""
        due = self._due.get(key)
        if due is None:
            return True
        if message_id is not None:
            due.messages.add(message_id)
        await due.wait()
        return due.queued

    async def edited(self, key: str, message_id: str) -> None:
        """Before an edit of the message ``message_id`` of the chat ``key`` is applied: one that waits `behind` the
        replay is not in its session's queue yet, where the edit looks for it, and the edit was lost. The edit waits
        with it, and, woken after it, finds it queued (`ChatIntake` holds the chat for it first)."""
        due = self._due.get(key)
        if due is not None and message_id in due.messages:
            await due.wait()


class _Due(asyncio.Event):
    """A chat's replayed events not queued yet, and the messages of the new events waiting behind them."""

    left = 0
    queued = False

    def __init__(self) -> None:
        super().__init__()
        self.messages: set[str] = set()
