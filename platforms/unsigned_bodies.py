"""How many request bodies are read before anyone knows who sent them.

A signed request (a webhook, Slack's HTTP mode) can only be checked once its whole body
(up to 1–2 MiB) is in memory. Adapters refuse what would certainly fail from the headers
alone; what is left is read through `UnsignedBodies`, which lets at most ``limit`` such
reads run at once, so strangers holding open connections at the server's connection cap
make the gateway buffer ``limit`` bodies, not hundreds.

A read that finds every place taken waits up to ``wait`` seconds (a legitimate burst from
Slack: dozens of small bodies, each read in milliseconds). When the oldest read has been
going on for ``patience`` seconds, a waiting request cuts it off and takes its place: a
stranger trickling bodies slowly cannot keep the places, and the senders that matter send
their bodies at once. A request that gets no place in time, and one cut off, raise `Busy`;
adapters answer it 503 with ``Retry-After``, which Slack and webhook callers retry.

A client that sends ``Expect: 100-continue`` waits for leave before sending its body; what
the headers already refuse gets that refusal instead of leave (`refuse_before_continue`).

The time a request waits here counts against its sender's deadline (Slack's 3 s): `arrived` tells
what follows in the request's handler when the request came.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TypeVar

from aiohttp import web
from aiohttp.web_urldispatcher import _default_expect_handler

T = TypeVar("T")

LIMIT = 16
"""Bodies read at once before their signature is checked: at most 16–32 MiB buffered."""
WAIT = 2.0
"""Seconds a request waits for a place: Slack wants its answer within 3."""
PATIENCE = 1.0
"""Seconds a read keeps its place while others wait."""
RETRY_AFTER = 1
"""Seconds a sender refused with `Busy` is told to wait."""


_arrived: ContextVar[float] = ContextVar("unsigned_bodies_arrived")


def arrived() -> float | None:
    """When (the event loop's clock) the request this task handles came to `UnsignedBodies.check`, its
    body still to be read; None in a task that handles none. Set for the rest of the request's handler:
    aiohttp runs each request in a task of its own, and what the handler runs (bolt's listeners) sees it."""
    return _arrived.get(None)


Early = Callable[[web.Request], web.StreamResponse | None]
"""A route's refusal from the headers alone (None: the body is needed to tell)."""


def refuse_before_continue(early: Early) -> Callable[[web.Request], Awaitable[web.StreamResponse | None]]:
    """A route's ``expect_handler``: a request that ``early`` refuses gets the refusal instead of
    the "100 Continue" aiohttp sends before any handler runs, so its client never sends the body it
    asked leave for; any other request gets aiohttp's usual answer."""

    async def expect(request: web.Request) -> web.StreamResponse | None:
        refusal = early(request)
        if refusal is None:
            return await _default_expect_handler(request)  # private, but the route's own default
        refusal.force_close()  # a client that stopped waiting may be sending its body already
        return refusal

    return expect


class Busy(Exception):
    """No place to read this request's body now (or it took too long while others waited)."""


class UnsignedBodies:
    """The bound on unauthenticated body reads of one adapter's routes (see the module)."""

    def __init__(self, limit: int = LIMIT, *, wait: float = WAIT, patience: float = PATIENCE) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit, self.wait, self.patience = limit, wait, patience
        self.cut_off = 0
        """Reads cut off to make room, since the start."""
        self._reading: dict[object, tuple[web.Request, float]] = {}  # oldest first: when each read began
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def reading(self) -> int:
        """Bodies being read (and checked) now."""
        return len(self._reading)

    async def check(self, request: web.Request, read_and_verify: Callable[[], Awaitable[T]]) -> T:
        """``read_and_verify()`` once a place is free, holding it until that returns: it should
        read ``request``'s body and check its signature, nothing more. Raises `Busy`."""
        _arrived.set(asyncio.get_running_loop().time())
        place = await self._enter(request)
        try:
            return await read_and_verify()
        except _CutOff:
            raise Busy("cut off to make room for another request") from None
        finally:
            self._leave(place)

    async def _enter(self, request: web.Request) -> object:
        """A place for reading ``request`` (a key of ``_reading``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        first = True
        # Those already waiting go first; a newcomer never overtakes them.
        while len(self._reading) >= self.limit or (first and self._waiting):
            first = False
            now = loop.time()
            if self._reading:
                oldest, (_, since) = next(iter(self._reading.items()))
                if now - since >= self.patience:
                    self._cut(oldest)
                    continue
                until = min(deadline, since + self.patience)
            else:
                until = deadline
            if deadline <= now:
                raise Busy(f"{self.limit} request bodies are being read already")
            waiter = loop.create_future()
            self._waiting.append(waiter)
            self._pass_on()  # there may be a place for it already, behind those woken before it
            try:
                await asyncio.wait_for(waiter, until - now)
            except TimeoutError:
                pass
            except BaseException:  # cancelled: a place it was woken for is the next one's
                self._waiting.remove(waiter)
                self._pass_on()
                raise
            self._waiting.remove(waiter)
        place = object()
        self._reading[place] = (request, loop.time())
        self._pass_on()
        return place

    def _leave(self, place: object) -> None:
        if self._reading.pop(place, None) is not None:
            self._pass_on()

    def _cut(self, place: object) -> None:
        request, _ = self._reading.pop(place)
        self.cut_off += 1
        # Its read raises at once; a read already done finishes its check unhindered.
        request.content.set_exception(_CutOff())

    def _pass_on(self) -> None:
        """Wake the first waiter not yet woken, if there is a place for it."""
        woken = sum(w.done() for w in self._waiting)
        if len(self._reading) + woken >= self.limit:
            return
        for waiter in self._waiting:
            if not waiter.done():
                waiter.set_result(None)
                return


class _CutOff(Exception):
    """Set on the body stream of a read cut off to make room."""
