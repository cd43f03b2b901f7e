"""Live events for open web chat pages, and their Server-Sent Events encoding.

Every open page of a chat holds one `Subscription`. `ChatStreams.publish` hands an
event to each of them without waiting: a page that does not keep up (more than
``max_queued`` events behind) is cut off, reconnects, and starts again from the
durable history, so a slow page never holds the gateway up and never misses a
message. Memory holds only what is in flight to open pages; what a page shows after
a reconnect comes from the store.

Each user (`platforms.web_access.stream_owner`) has `STREAMS_PER_USER` streams open at most, so one user's script
or loop of tabs cannot fill the server's connections (``server.max_connections``) and cut everyone else's pages
off. One more is refused (`ChatStreams.full`), never made room for: ending an open stream had its page reconnect
and end another in turn, for as long as the user kept more tabs than that open.

`ChatStreams.in_order` keeps a place among a chat's events for one that is not known yet
(whether a person's message is recorded): what the chat publishes meanwhile waits behind it, for
``hold_seconds`` at most (`ORDER_HOLD_SECONDS`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web

from platforms.repeated_warnings import RepeatedWarnings

log = logging.getLogger(__name__)

MAX_QUEUED = 1000
STREAMS_PER_USER = 20
"""Event streams one user may have open at once, in all their chats: a page holds one per tab, and a browser holds 6
connections to one server at most over HTTP/1.1 (more through an HTTP/2 proxy). Well above what a person keeps
open: the page of one more is refused, says why, and tries again every 10 s (live.js)."""
ORDER_HOLD_SECONDS = 2.0
"""How long a place kept by `ChatStreams.in_order` may hold the chat's later events back. The gateway takes a
message in milliseconds, but a /stop returns once the chat's subagents have stopped (their plugins' hooks
run), and a store waiting on a lock takes seconds: held all that while, every page of the chat froze (no
typing, no progress edits, another tab's replies withheld), and its "working" lapsed. Past it, the events go
on; the place's own event goes out when it is known, after them."""

Event = tuple[str, dict[str, Any]]
IDLE: Event = ("", {})
"""What `Subscription.next` returns after a quiet spell: time to send a keep-alive."""
_END: Event = ("end", {})


class Subscription:
    """One open page's queue of events. Iterate `next` until it returns None (the stream ended)."""

    def __init__(self, chat_id: str, max_queued: int, owner: str | None = None,
                 connected: Callable[[], bool] = lambda: True) -> None:
        self.chat_id = chat_id
        self.owner = owner
        self.connected = connected
        """Whether the page's connection is still open: the stream itself notices a closed one at its next write."""
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._max = max_queued
        self.ended = False

    def put(self, event: Event) -> None:
        if self.ended:
            return
        if self._queue.qsize() >= self._max:  # too far behind: it reloads the history on reconnect instead
            while not self._queue.empty():  # none of it will be sent: not held while the page hangs
                self._queue.get_nowait()
            self.end()
            return
        self._queue.put_nowait(event)

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            self._queue.put_nowait(_END)

    async def next(self, timeout: float) -> Event | None:
        """The next event; `IDLE` after ``timeout`` seconds of nothing; None once the stream has ended."""
        try:
            event = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None if self.ended else IDLE
        return None if event is _END else event


class Place:
    """A chat's next event, known once `ChatStreams.in_order`'s block ends: ``event``, or nothing if left None."""

    __slots__ = ("event", "settled", "overdue")

    def __init__(self) -> None:
        self.event: Event | None = None
        self.settled = False
        self.overdue = False
        """Held the chat's events for `ORDER_HOLD_SECONDS`: no longer among them; its event is published as it comes."""


class ChatStreams:
    def __init__(self, max_queued: int = MAX_QUEUED, hold_seconds: float = ORDER_HOLD_SECONDS, *,
                 name: str = "web chat") -> None:
        """``name``: whose streams they are, in the log (the web chat's, the console's)."""
        self._name = name
        self._chats: dict[str, set[Subscription]] = {}
        self._max = max_queued
        self._owned: dict[str, set[Subscription]] = {}
        self._refused = RepeatedWarnings(log, level=logging.INFO)  # a page refused tries again every 10 s
        self._hold = hold_seconds
        self._held: dict[str, list[Place | Event]] = {}
        """Per chat with a `Place` unsettled: it, and everything published after it, in order."""

    def full(self, owner: str) -> bool:
        """Whether ``owner`` has `STREAMS_PER_USER` streams open already: their next one is refused (logged once per
        owner, then counted), and none of those open is touched. One that has ended, or whose page's connection has
        closed (a tab closed), counts no longer: it makes room at once, not at its next write (a keep-alive later)."""
        owned = self._owned.get(owner)
        if owned is None:
            return False
        for gone in [s for s in owned if s.ended or not s.connected()]:
            owned.discard(gone)
            gone.end()  # its stream stops waiting for an event to write
        if len(owned) < STREAMS_PER_USER:
            return False
        self._refused.warning(owner, "%s: %s has %d event streams open, the most one user may; refused another"
                              " (its page tries again every 10 s)", self._name, owner, STREAMS_PER_USER)
        return True

    def subscribe(self, chat_id: str, owner: str | None = None,
                  connected: Callable[[], bool] = lambda: True) -> Subscription:
        """A new subscription to the chat, counted among ``owner``'s (None: no owner, no cap), whether or not they
        have room (ask `full` first). ``connected``: whether its page's connection is still open."""
        sub = Subscription(chat_id, self._max, owner, connected)
        if owner is not None:
            self._owned.setdefault(owner, set()).add(sub)
        self._chats.setdefault(chat_id, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._chats.get(sub.chat_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._chats[sub.chat_id]
        owned = self._owned.get(sub.owner) if sub.owner is not None else None
        if owned is not None:
            owned.discard(sub)
            if not owned:
                del self._owned[sub.owner]

    def publish(self, chat_id: str, kind: str, data: dict[str, Any]) -> None:
        held = self._held.get(chat_id)
        if held is not None:
            held.append((kind, data))
        else:
            self._hand_out(chat_id, (kind, data))

    @contextmanager
    def in_order(self, chat_id: str) -> Iterator[Place]:
        """A `Place` for an event published when the block ends (set ``place.event``; left None,
        or on an exception, there is none). What the chat publishes within the block follows it, unless the
        block lasts longer than ``hold_seconds``: then that goes on, and the place's event follows it."""
        place = Place()
        self._held.setdefault(chat_id, []).append(place)
        timer = asyncio.get_running_loop().call_later(self._hold, self._overdue, chat_id, place)
        try:
            yield place
        except BaseException:
            place.event = None
            raise
        finally:
            timer.cancel()
            place.settled = True
            if not place.overdue:
                self._release(chat_id)
            elif place.event is not None:
                self.publish(chat_id, *place.event)

    def _overdue(self, chat_id: str, place: Place) -> None:
        place.overdue = True
        held = self._held[chat_id]
        held.remove(place)  # by identity: a Place equals nothing else
        self._release(chat_id)

    def _release(self, chat_id: str) -> None:
        held = self._held[chat_id]
        while held:
            event = held[0]
            if isinstance(event, Place):
                if not event.settled:
                    break
                event = event.event
            held.pop(0)
            if event is not None:
                self._hand_out(chat_id, event)
        if not held:
            del self._held[chat_id]

    def _hand_out(self, chat_id: str, event: Event) -> None:
        for sub in list(self._chats.get(chat_id, ())):
            sub.put(event)

    def end_all(self) -> None:
        for sub in self._all():
            sub.end()

    def watching(self, chat_id: str) -> int:
        """How many pages of the chat are open."""
        return len(self._chats.get(chat_id, ()))

    def _all(self) -> Iterator[Subscription]:
        for subs in list(self._chats.values()):
            yield from list(subs)


def encode(kind: str, data: dict[str, Any]) -> bytes:
    """One SSE event. JSON never holds a raw newline, so ``data`` is one line; ASCII escapes
    keep text with lone surrogates (which models emit) encodable. An event that brings messages carries the
    newest one's id (`event_id`), which a client reconnecting sends back (``Last-Event-ID``)."""
    last = event_id(kind, data)
    head = f"id: {last}\n" if last is not None else ""
    return f"{head}event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def event_id(kind: str, data: dict[str, Any]) -> str | None:
    """The id of the newest message a ``history``, ``user`` or ``message`` event brings; None for the others
    (an event without an id keeps the stream's last one) and for an id SSE cannot carry."""
    if kind == "history":
        messages = data.get("messages") or [{}]
        found = messages[-1].get("id")
    elif kind in ("user", "message"):
        found = data.get("id")
    else:
        return None
    if not isinstance(found, str) or not found or any(c in found for c in "\r\n\0"):
        return None
    return found


KEEP_ALIVE = b": keep-alive\n\n"
KEEP_ALIVE_HEADER = "Switchboard-Keep-Alive"
"""The stream's answer carries its keep-alive interval (seconds): a page that hears nothing for
longer knows the connection died without a word (live.js), with no constant of its own to drift."""


WRITE_TIMEOUT = 30.0
"""Seconds a page may take nothing before its stream is closed. A hung tab, or a stopped process,
keeps its connection open (its kernel acknowledges, nobody reads): without this, its stream would
wait for ever and stay subscribed."""


GZIP_WINDOW_BITS = 16 + 12
"""gzip framing, a 4 KB window: with ``memLevel`` 5, 32 KB of memory a stream (zlib's default takes 256 KB, for
every open page) for most of what gzip saves on a history's JSON."""


async def serve_events(request: web.Request, streams: ChatStreams, sub: Subscription, first: Event,
                       keep_alive: float, *, write_timeout: float = WRITE_TIMEOUT,
                       gzipped: bool = False) -> web.StreamResponse:
    """Stream ``first``, then ``sub``'s events, to a page as Server-Sent Events until the
    stream ends or the page goes away (a keep-alive after ``keep_alive`` quiet seconds, which
    `KEEP_ALIVE_HEADER` tells the page; a page that takes nothing for ``write_timeout`` seconds
    is taken for gone); ``sub`` is unsubscribed from ``streams`` at the end. ``gzipped``: in gzip, each event
    flushed whole as it is written (``Z_SYNC_FLUSH``), so the page reads it at once, not when more has come."""
    headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no",
               KEEP_ALIVE_HEADER: f"{keep_alive:g}", "Vary": "Accept-Encoding"}
    zipper = zlib.compressobj(wbits=GZIP_WINDOW_BITS, memLevel=5) if gzipped else None
    if zipper is not None:
        headers["Content-Encoding"] = "gzip"

    def framed(data: bytes) -> bytes:
        return data if zipper is None else zipper.compress(data) + zipper.flush(zlib.Z_SYNC_FLUSH)

    response = web.StreamResponse(headers=headers)
    try:
        await response.prepare(request)
        async with asyncio.timeout(write_timeout):
            await response.write(framed(encode(*first)))
        while (event := await sub.next(keep_alive)) is not None:
            async with asyncio.timeout(write_timeout):
                await response.write(framed(KEEP_ALIVE if event is IDLE else encode(*event)))
        if zipper is not None:  # the gzip stream's end: a client may take one cut short for a broken answer
            async with asyncio.timeout(write_timeout):
                await response.write(zipper.flush())
    except ConnectionError:  # the page went away
        pass
    except TimeoutError:  # the page hangs: its connection goes, and what its stream held with it
        if request.transport is not None:
            request.transport.abort()
    finally:
        streams.unsubscribe(sub)
    return response


def connection_open(request: web.Request) -> bool:
    """Whether the connection ``request`` came on is still open; aiohttp lets its handler run on once it closed
    (a stream's `ChatStreams.subscribe` ``connected``)."""
    return request.transport is not None and not request.transport.is_closing()
