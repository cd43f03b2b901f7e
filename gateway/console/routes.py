"""The operator console's HTTP side: the page, its live state over Server-Sent Events, its actions.

Routes (see docs/console.md):

- ``GET /console``, ``GET /console/static/<file>``: the page (plain files in the package;
  ``live.js``, its token, connection and event-stream code, is the web chat's own file).
- ``GET /console/api/state``: one snapshot (`gateway.console.snapshot`) as JSON.
- ``GET /console/api/events``: Server-Sent Events, a ``state`` event with a fresh snapshot at
  once and again whenever it changes: at most every `MIN_GAP` seconds after something happened
  (a turn, a child, a delivery), and at least every `INTERVAL` seconds looked at. One address (an IPv6
  network of 64 bits) has `platforms.web_events.STREAMS_PER_USER` streams open at most: one more is 429
  (`STREAMS_REFUSED`).
- ``POST /console/api/turns/{id}/stop``: stop a running turn (its chat is told) and every
  live child it launched, or, for a turn that has ended, its children still running.
- ``POST /console/api/children/{id}/stop``: interrupt one child through the lifecycle's host view.
- ``POST /console/api/outbox/{id}/retry`` and ``/dismiss``: a failed (or, to dismiss, pending)
  outbox part, through the outbox.
- ``POST /console/api/dead-letters/{id}/retry`` and ``/dismiss``: retry re-queues the event
  exactly as ``switchboard inbox retry`` does (the gateway takes it up within seconds), or is
  refused (409) for a platform this gateway does not run; dismiss forgets the letter.

Every route but the page and its files is checked by `platforms.web_access.Access` with
``server.console_token`` (401/403); actions take only ``application/json`` posts, which
another site's page cannot send unasked. ``GET /metrics`` is guarded the same way. A method a path
does not take is 405 with ``Allow``, JSON as every other error of the API (`_api`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from gateway.console.snapshot import ConsoleView
from gateway.events import GatewayListener
from gateway.store import row_id
from gateway.store.dead_letters import DamagedLetter
from gateway.unconfigured import TERMINAL
from platforms.web import STATIC_DIR as WEB_STATIC_DIR
from platforms.web_access import Access, Refusal, error_response, refusal_response, stream_owner
from platforms.web_events import STREAMS_PER_USER, ChatStreams, connection_open, serve_events
from platforms.web_pages import page_routes, static_route

if TYPE_CHECKING:
    from gateway.app import Gateway
    from lifecycle import HostView

log = logging.getLogger("gateway.console")

STATIC_DIR = Path(__file__).with_name("static")
SHARED_SCRIPT = WEB_STATIC_DIR / "live.js"
INTERVAL = 1.0
MIN_GAP = 0.1
KEEP_ALIVE_SECONDS = 5.0
"""The page counts its stream dropped after 2.5 intervals with no byte (live.js): a connection that died without a
close (a laptop's Wi-Fi gone) is noticed within 12.5 s, its picture said to be old and its buttons disabled. At 15 s
it read as live, buttons and all, for 37 s. A keep-alive is a comment of 15 bytes."""
BEHIND = 8
"""Snapshots queued for a page that does not keep up before it is cut off (it reconnects to a fresh
one): each is the whole state, hundreds of kilobytes at the console's caps, and only the last counts."""
STOP_REASON = "stopped from the operator console"
STOP_NOT_SAVED = ("the subagents are being stopped, but the stop is not saved yet (the state database cannot be "
                  "written): if the gateway restarts before it is, they may run again")
STREAMS_REFUSED = (f"too many console streams open from this address ({STREAMS_PER_USER}): close some of the"
                   " console's tabs or windows")
"""Uncapped, one client (a script, a loop of tabs) filled ``server.max_connections`` with streams, and every other
page, the web chat's too, was closed to make room. The page shows it after "not connected: " and connects by itself
(it tries every 10 s) once one of that address's streams is closed."""
LOOPBACK_ONLY = ("the operator console answers on localhost only; set server.console_token to serve other hosts")
_STREAM = "console"
NOT_FOUND, CONFLICT, UNAVAILABLE = 404, 409, 503
Problem = tuple[int, str]
"""Why an action did nothing: `NOT_FOUND` (its id names nothing) or `CONFLICT` (what it names
exists, but not in a state that allows the action), and a sentence for the operator."""
NO_MESSAGE = "no such outbox message (settled over a week ago, and pruned?)"
NO_LETTER = "no such dead letter (retried or dismissed already?)"


def console_access(gateway: Gateway) -> Access:
    """The console's (and /metrics') access check: ``server.console_token``, or loopback only. Only the web
    chat's signing-in proxy sets its ``user_header``: a request carrying it is from a person that proxy let in for
    the chat, however local it looks (a bare nginx ``proxy_pass`` keeps the upstream ``Host``), not the operator."""
    user_header = gateway.config.platforms.web.user_header
    return Access(token=gateway.config.server.console_token, loopback_only=LOOPBACK_ONLY,
                  proxy_headers=(user_header,) if user_header else ())


class Console(GatewayListener):
    """Serves one gateway's console; `web_routes` to mount, `close_streams` on shutdown."""

    def __init__(self, gateway: Gateway, *, interval: float = INTERVAL, keep_alive: float = KEEP_ALIVE_SECONDS
                 ) -> None:
        self._gateway = gateway
        self.access = console_access(gateway)
        self.view = ConsoleView(gateway, gateway.recent_errors)
        self._interval = interval
        self._keep_alive = keep_alive
        self._streams = ChatStreams(max_queued=BEHIND, name="console")
        self._nudged = asyncio.Event()
        self._last: str | None = None
        self._last_heard: dict[str, float] = {}
        self._refresher: asyncio.Task[None] | None = None
        gateway.events.subscribe(self)
        for hook in ("subagent_start", "subagent_stop", "tool_start", "tool_end"):
            gateway.host.hooks.register(hook, self._hooked)

    def web_routes(self) -> Sequence[Any]:
        return [
            *page_routes("/console", STATIC_DIR, {"live.js": SHARED_SCRIPT}),
            static_route("/console/static", STATIC_DIR, {"live.js": SHARED_SCRIPT}),
            *_api("GET", "/console/api/state", self._get_state),
            *_api("GET", "/console/api/events", self._get_events),
            *_api("POST", "/console/api/turns/{id}/stop", self._stop_turn),
            *_api("POST", "/console/api/children/{id}/stop", self._stop_child),
            *_api("POST", "/console/api/outbox/{id}/{action:retry|dismiss}", self._outbox_action),
            *_api("POST", "/console/api/dead-letters/{id}/{action:retry|dismiss}", self._dead_letter_action),
        ]

    async def close_streams(self) -> None:
        self._streams.end_all()
        self._gateway.events.unsubscribe(self)
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.gather(self._refresher, return_exceptions=True)
            self._refresher = None

    # -- what makes the view change ------------------------------------------------------------

    def nudge(self) -> None:
        self._nudged.set()

    def turn_started(self, *args: Any) -> None:
        self.nudge()

    def turn_ended(self, *args: Any) -> None:
        self.nudge()

    def settled(self, *args: Any) -> None:
        self.nudge()

    async def _hooked(self, **_: Any) -> None:
        self.nudge()

    async def _refresh(self) -> None:
        """While a page watches: a new snapshot after each nudge (or each interval), published if it changed."""
        while self._streams.watching(_STREAM):
            try:
                await asyncio.wait_for(self._nudged.wait(), self._interval)
            except TimeoutError:
                pass
            self._nudged.clear()
            try:
                await self._publish_if_changed(await self.view.snapshot())
            except Exception:
                log.exception("console: reading the gateway's state failed")
            await asyncio.sleep(MIN_GAP)  # a burst of events makes one snapshot, not one each
        self._refresher = None

    async def _publish_if_changed(self, state: dict[str, Any]) -> None:
        # Ages grow by themselves (the page ticks them): what changes a platform is its connection, or a
        # later last event, which may have changed nothing else (a duplicate, a stranger's). Within a second
        # is the same (ages are rounded, and the page shows seconds).
        text = _comparable(state)
        last_heard = {p["name"]: state["now"] - p["last_inbound_age"] for p in state["platforms"]}
        heard = any(abs(at - self._last_heard.get(name, at)) >= 1 for name, at in last_heard.items())
        self._last_heard = last_heard
        if text != self._last or heard:
            self._last = text
            self._streams.publish(_STREAM, "state", state)

    # -- the page and its API -----------------------------------------------------------------

    async def _get_state(self, request: web.Request) -> web.Response:
        if isinstance(refusal := self.access.check(request), Refusal):
            return refused(request, refusal)
        return web.json_response(await self.view.snapshot())

    async def _get_events(self, request: web.Request) -> web.StreamResponse:
        if isinstance(refusal := self.access.check(request), Refusal):
            return refused(request, refusal)
        # One token, one operator: what tells one client from another is the address it connects from.
        owner = stream_owner(None, request.remote)
        if self._streams.full(owner):  # before the snapshot: a script asking again and again reads no store
            return _too_many_streams()
        # Every event is a whole snapshot, so one taken before subscribing misses nothing the next won't show.
        state = await self.view.snapshot()
        if self._streams.full(owner):  # again: its reads may wait (async), and requests meanwhile found the room too
            return _too_many_streams()
        sub = self._streams.subscribe(_STREAM, owner, lambda: connection_open(request))
        if _comparable(state) != self._last:
            # The last state published is not this page's (kept from before every page went, or older than this
            # snapshot): a state going back to it would be sent to no one, and this page show this one for good.
            self._last = None
        if self._refresher is None:
            self._refresher = asyncio.ensure_future(self._refresh())
        return await serve_events(request, self._streams, sub, ("state", state), self._keep_alive)

    async def _stop_turn(self, request: web.Request) -> web.Response:
        async def stop(turn_id: str) -> Problem | None:
            g = self._gateway
            for session in g.sessions:
                running = session.running
                this = running is not None and running.turn_id == turn_id
                # Only this turn: what the chat queued after it still runs, unlike /stop.
                stopped = this and g.sessions.stop_turn(session, STOP_REASON, why="console")
                children = await g.host.children.interrupt_turn(session.session_id, turn_id, STOP_REASON)
                if stopped or children:
                    log.info("console: stopped turn %s%s", turn_id, f" and {children} subagent(s)" if children else "")
                    return await _stops_saved(g.host.children) if children else None
                if this and running.suppressed:  # stopped already (a /stop), still winding down: as asked
                    return None
            # A session not in memory (not loaded since a restart, replaced by /new, a plugin's own) runs
            # no turn, but its children may run on: stopping them needs no session.
            for session_id in g.host.children.sessions_with_children():
                if g.sessions.by_agent(session_id) is None and (
                        children := await g.host.children.interrupt_turn(session_id, turn_id, STOP_REASON)):
                    log.info("console: stopped %d subagent(s) of turn %s", children, turn_id)
                    return await _stops_saved(g.host.children)
            return CONFLICT, "that turn is not running and has no running subagents"

        return await self._act(request, stop, str)

    async def _stop_child(self, request: web.Request) -> web.Response:
        async def stop(subagent_id: str) -> Problem | None:
            children = self._gateway.host.children
            if not await children.interrupt_child(subagent_id, STOP_REASON):
                return CONFLICT, "that subagent is not running (finished, finishing, or unknown)"
            log.info("console: stopped subagent %s", subagent_id)
            return await _stops_saved(children)

        return await self._act(request, stop, str)

    async def _outbox_action(self, request: web.Request) -> web.Response:
        action = request.match_info["action"]

        async def act(message_id: int) -> Problem | None:
            outbox = self._gateway.outbox
            if self._gateway.store.outbox.message_by_id(message_id) is None:
                return NOT_FOUND, NO_MESSAGE
            if action == "retry" and not outbox.retry(message_id):
                return CONFLICT, "only a failed message can be sent again"
            if action == "dismiss" and not outbox.dismiss(message_id):
                return CONFLICT, "only a failed or pending message can be dismissed"
            log.info("console: outbox message %d: %s", message_id, action)
            return None

        return await self._act(request, act, row_id, NO_MESSAGE)

    async def _dead_letter_action(self, request: web.Request) -> web.Response:
        action = request.match_info["action"]

        async def act(letter_id: int) -> Problem | None:
            store = self._gateway.store
            if action == "retry":
                if (problem := self._not_taken_up(letter_id)) is not None:
                    return problem
                try:
                    letter = store.dead_letters.retry(letter_id, store.inbox.requeue)  # as `switchboard inbox retry`
                except DamagedLetter as exc:  # no event to hand back: kept, for a dismissal
                    return CONFLICT, str(exc)
            else:
                letter = store.dead_letters.dismiss(letter_id)
            if letter is None:  # both forget it: there is no letter that exists but cannot be acted on
                return NOT_FOUND, NO_LETTER
            log.info("console: dead letter %d (%s event %s): %s", letter_id, letter.platform, letter.event_id, action)
            return None

        return await self._act(request, act, row_id, NO_LETTER)

    def _not_taken_up(self, letter_id: int) -> Problem | None:
        """Why this gateway would not take the letter up if handed back: it runs only its own platforms'
        events. Handed back, the letter left the page and its event waited, unseen, for another start."""
        letter = self._gateway.store.dead_letters.get(letter_id)
        if letter is None:
            return NOT_FOUND, NO_LETTER
        if letter.damaged or letter.platform in self._gateway.adapters:
            return None  # a damaged one: its retry says why it cannot be handed back (`DamagedLetter`)
        if letter.platform == TERMINAL:
            return CONFLICT, (f"only `switchboard chat` takes up the terminal's events: hand it back with "
                              f"`switchboard inbox retry {letter_id}`, then run `switchboard chat`")
        return CONFLICT, (f"{letter.platform} does not run in this gateway: handed back, the event would wait "
                          f"for a start with platforms.{letter.platform} enabled; enable it and restart, then retry")

    async def _act(self, request: web.Request, action: Callable[[Any], Awaitable[Problem | None]],
                   parse: Callable[[str], Any], unparsed: str = "") -> web.Response:
        """Run an action on the id in the path: 200 ``{"ok": true}``, or the status and why it did
        nothing: 404 when the id names nothing (``unparsed`` when it cannot name one at all), 409
        when what it names cannot be acted on now."""
        if isinstance(refusal := self.access.check(request), Refusal):
            return refused(request, refusal)
        if request.content_type != "application/json":
            return error_response(415, "send actions with the header Content-Type: application/json"
                                       " (the body may be empty)")
        try:
            target = parse(request.match_info["id"])
        except ValueError:
            return error_response(NOT_FOUND, unparsed)
        try:
            problem = await action(target)
            self.nudge()
            if problem is not None:
                return error_response(*problem)
            await self._gateway.store.durable()
        except sqlite3.Error as exc:  # a full disk: said to the operator, not a traceback and a bare 500
            log.warning("console %s %s: the state database refused it: %s: %s", request.method,
                        request.rel_url.raw_path, type(exc).__name__, exc)
            return error_response(503, f"the state database cannot be written ({exc}): what was done may not "
                                       "hold after a restart; try again once it can be written")
        return web.json_response({"ok": True})


async def _stops_saved(children: HostView) -> Problem | None:
    """None once the stops just asked are committed (`HostView.stops_committed`), else a 503 saying so: "ok" while
    they were only queued, a crash right after left the subagents running in the journal, lost to the restart, and
    ``lifecycle.on_restart: resume`` ran them again."""
    return None if await children.stops_committed() else (UNAVAILABLE, STOP_NOT_SAVED)


def _api(method: str, path: str, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
         ) -> list[web.RouteDef]:
    """The route, and one answering every other method on its path with a 405 and ``Allow``, as aiohttp
    does, but in JSON like every other error of the API: a client reading ``{"error": ...}`` choked on
    aiohttp's line of plain text (as the web chat's `platforms.web._only`)."""
    async def refuse(request: web.Request) -> web.Response:
        response = error_response(405, f"method not allowed here; this path takes {method}")
        response.headers["Allow"] = method
        return response
    # HEAD too is refused on a GET path, as before: it would run the handler (a whole snapshot, an event stream).
    taken = web.get(path, handler, allow_head=False) if method == "GET" else web.route(method, path, handler)
    return [taken, web.route("*", path, refuse)]


def _too_many_streams() -> web.Response:
    response = error_response(429, STREAMS_REFUSED)
    response.headers["Retry-After"] = "10"  # as the page does, whatever it is told
    return response


def _comparable(state: dict[str, Any]) -> str:
    """What of a snapshot tells whether it changed: all but its time, and of each platform only its connection."""
    platforms = [[p["name"], p["connection"]] for p in state["platforms"]]
    return json.dumps({**{k: v for k, v in state.items() if k not in ("now", "platforms")}, "platforms": platforms},
                      sort_keys=True)


def refused(request: web.Request, refusal: Refusal) -> web.Response:
    return refusal_response(request, refusal, realm="switchboard console", what="console")
