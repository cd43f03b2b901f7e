"""One event of a chat handed to its session at a time, in the order they arrived.

Handling an event is quick and does not wait, except for a built-in command: ``/new``
withdraws the chat's children (their ``subagent_stop`` hooks may take a while) before
the text after it (``/new plan the trip``) is queued. Slack and the web chat hand events
over concurrently, so a message sent right after would otherwise be queued first and
answered before the text, or before the command's own answer. `ChatIntake` makes it wait
until the event before it in the same chat is handled; other chats never wait.

A start queues the events it replays (those that waited for their turns when the last process ended) only once
its platforms have started, and a platform started first may hand over a newer event of the same chat before
that: `Replays` keeps it, recorded, and queues it after them, so that the chat is answered in the order it was
written; the platform goes on handing over the other chats' events meanwhile, and an edit of it changes it
where it waits (`Replays.waiting`), and its deletion drops it there (`Replays.drop`), also once a start that failed
has left it to the next start.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Awaitable, Callable, Iterable

from platforms.base import Inbound


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
    """The chats a start replays events of, while it has not queued them all, and the new events of those chats
    that wait behind them. ``hand_on(event, turn_id, route)``: queue a waiting event, once the replay is through
    (`gateway.app.Gateway._handle_accepted`; never raises)."""

    def __init__(self, hand_on: Callable[[Inbound, str | None, object], Awaitable[object]]) -> None:
        self._hand_on = hand_on
        self._due: dict[str, _Due] = {}

    def due(self, keys: Iterable[str]) -> None:
        """At start, before any platform does: the chat of each event to replay, once per event."""
        self._due = {}
        for key in keys:
            self._due.setdefault(key, _Due()).left += 1

    async def queued(self, key: str) -> None:
        """One replayed event of the chat ``key`` is queued. After its last, the new events that wait behind them
        are queued, in the order they came, those that come meanwhile too; then the chat's new events go on."""
        if (due := self._due.get(key)) is None:
            return
        due.left -= 1
        if due.left:
            return
        while due.waiting:
            # Taken and handed to the chat's intake with no await between: an edit finds it in one or the other.
            waiting = due.waiting.popleft()
            await self._hand_on(waiting.event, waiting.turn_id, waiting.route)
        del self._due[key]  # with no await since the last was taken: a newer event comes after it

    def waits(self, key: str, event: Inbound, turn_id: str | None, route: object) -> bool:
        """Whether the new ``event`` of the chat ``key``, recorded, waits behind the chat's replayed events (and
        the new ones before it) instead of being handled now: its caller returns at once, so an adapter that hands
        events over one at a time goes on with the other chats' (the chat's next ones wait likewise). Never
        yields to the loop. After the start gave up, it waits for good, unhandled, for the next start."""
        due = self._due.get(key)
        if due is None:
            return False
        due.waiting.append(Waiting(event, turn_id, route))
        return True

    def waiting(self, key: str, message_id: str) -> Waiting | None:
        """The new event of the message ``message_id`` of the chat ``key`` that waits behind the replay, not
        handed on yet: one its user edits is changed here (`gateway.message_edits`), as it is not in its
        session's queue yet, nor in the chat's intake, and is queued as edited (or, the start given up, is
        replayed as edited by the next start, from the inbox the edit changed too)."""
        due = self._due.get(key)
        for waiting in due.waiting if due is not None else ():
            if waiting.event.message_id == message_id:
                return waiting
        return None

    def drop(self, key: str, waiting: Waiting) -> None:
        """``waiting`` (`waiting`) is never handed on: its user deleted it (`gateway.message_edits`)."""
        self._due[key].waiting.remove(waiting)


@dataclasses.dataclass(slots=True)
class Waiting:
    """A new event waiting behind its chat's replay, as `Replays.waits` took it."""

    event: Inbound
    turn_id: str | None
    route: object
    """`gateway.app.Gateway._route`'s: None for a message that starts a turn."""


class _Due:
    """A chat's replayed events not queued yet, and the new events waiting behind them."""

    __slots__ = ("left", "waiting")

    def __init__(self) -> None:
        self.left = 0
        self.waiting: collections.deque[Waiting] = collections.deque()
