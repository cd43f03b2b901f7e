"""The ``web`` platform: a chat page served by the gateway's own HTTP server at ``/chat``.

Routes (see docs/platforms/web.md):

- ``GET /chat``: the page; ``GET /chat/static/<file>``: its script and style. Plain
  files shipped in the package (``platforms/web_static``), no build step, no CDN, each with the
  page's headers (`platforms.web_pages`).
- ``POST /chat/api/messages`` with ``{"chat", "text", "key"}``: one message from the
  page, answered 202 ``{"id", "turn_id", "duplicate"}``. ``key`` is the page's
  idempotency key: the same key in the same chat is the same event, so a retried POST
  starts no second turn (the gateway's durable inbox drops it). Its ``user`` event goes to
  the chat's pages once the gateway has recorded it, ahead of what the chat published meanwhile,
  with the text the gateway took (a key sent again with another text shows the first). One it could not
  record for want of storage is 500 (the page posts it again); one it failed on otherwise (a fault the
  message trips, which would fail alike at every try) is a final 422 (`platforms.not_recorded.NOT_HANDLED_STATUS`).
- ``GET /chat/api/history?chat=[&before=]``: ``{"messages": [...], "more"}``, the chat's last
  ``history_limit`` messages from the durable store (``more``: older ones are kept), or with ``before`` the
  ``history_limit`` messages before that one, for a page scrolled up to its oldest (`_older`).
- ``GET /chat/api/events?chat=[&after=]``: Server-Sent Events. First ``history`` (the same
  messages, plus the chat commands and whether a turn is running), then live ``user``,
  ``message``, ``edit``, ``delete``, ``typing`` and ``idle`` events. The history is read right after the
  stream subscribes, with nothing sent in between, so the two neither overlap nor
  leave a gap; a page that reconnects gets a fresh ``history``. ``after`` (or ``Last-Event-ID``: each
  ``history``, ``user`` and ``message`` event carries its newest message's id) names the newest message the
  page holds: the history then reaches back to it, up to `RESUME_LIMIT` messages, so a page away for more
  than ``history_limit`` messages misses none; one away for longer gets ``"gap": true`` (`_resumed`). With
  ``brief=1`` the messages up to ``after``, which the page holds, come as their ids alone (`_held`). A user
  with `platforms.web_events.STREAMS_PER_USER` streams open is refused one more: 429 (`STREAMS_REFUSED`).
- ``GET /chat/api/files/<id>?chat=``: a file the agent sent to that chat, as a download
  (`platforms.web_files`). Its message carries ``file``: ``{"id", "name", "size"}``, or
  ``{"expired": true}`` once the file is no longer kept.

Every ``/chat/api`` route is checked by `platforms.web_access.Access` first (401/403). A method a path does
not take is 405 with ``Allow``, JSON as every other error of the API (`_only`).
Sending is publishing to the chat's open pages: the outbox has journaled the message
before, so a page that is closed now sees it in its history later. A message's id on
the page is its outbox idempotency key; what a person sent is ``user:<key>``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from platforms.base import (
    CommandSpec,
    DisplayTier,
    HistoryReader,
    Inbound,
    InboundSink,
    NetworkError,
    Outbound,
    OutboundFile,
    Sent,
)
from platforms.formatting.blank import is_blank
from platforms.json_body import load_json_body
from platforms.not_recorded import (
    NOT_HANDLED_MESSAGE,
    NOT_HANDLED_STATUS,
    storage_refusal,
)
from platforms.repeated_warnings import RepeatedWarnings
from platforms.web_access import (
    Access,
    Refusal,
    error_response,
    refusal_response,
    stream_owner,
)
from platforms.web_events import (
    ORDER_HOLD_SECONDS,
    STREAMS_PER_USER,
    ChatStreams,
    connection_open,
    serve_events,
)
from platforms.web_files import WebFiles, download_headers
from platforms.web_pages import accepts_gzip, compressed, page_routes, static_route

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).with_name("web_static")
MAX_TEXT = 32_000
MAX_BODY = 512 * 1024
"""Bytes in one POST: room for any text of `MAX_TEXT` characters as a JSON encoder spells it. Python's
``json.dumps`` (and many clients) write a character outside the BMP as ``\\ud83d\\ude00``, 12 bytes: 32,000
emoji are 384,000 bytes, which a limit of 256 KiB refused as "body over" though the text was within its own."""
HISTORY_LIMIT = 200
RESUME_LIMIT = 2000
"""Messages at most that a reconnecting page's history reaches back to find the newest one it holds."""
KEEP_ALIVE_SECONDS = 5.0
"""The page counts its stream dropped after 2.5 intervals with nothing (live.js): a connection that died without a
close (a laptop's Wi-Fi gone, a proxy that hangs) is noticed in 12.5 s, as on the console. At 15 s the page read as
connected for 37 s while what was sent meanwhile never came. A keep-alive is a comment of 15 bytes."""
UPLOAD_LIMIT = 100 * 1000 * 1000
"""Bytes in one file the agent sends: the page holds a download in memory before saving it."""
KEEP_FILES_SECONDS = 7 * 24 * 3600.0
"""How long a sent file stays downloadable: as long as the gateway keeps the chat's messages."""
SWEEP_SECONDS = 3600.0
STREAMS_REFUSED = (f"too many event streams open for this user ({STREAMS_PER_USER}): close some of the chat's tabs"
                   " or windows")
"""The page shows it after "not connected: " and connects by itself once a stream of the user's ends."""
SCOPE_PURPOSE = "web chat page storage"
"""What `WebFiles.derived_id` makes the pages' name for their browser storage for (`WebChatAdapter._scope`)."""
_CHAT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_CHAT_RULE = '"chat" must be 1 to 64 letters, digits, "-" or "_"'
_KEY = re.compile(r"[A-Za-z0-9_-]{8,128}")


class WebChatAdapter:
    """The web chat. Without a ``history_reader`` (bound by the gateway) pages start empty."""

    name = "web"
    tier = DisplayTier(interim_assistant_messages=True, long_running_notifications=True, messaging=False)
    text_limit = 100_000
    typing_interval = 5.0
    """The page shows "working" while typing events keep coming, and a Stop button with it."""
    caption_limit = text_limit
    counts_characters = True  # `measure` is len: `platforms.base.CountsCharacters`

    def __init__(self, *, token: str | None = None, user_header: str | None = None,
                 allowed_users: Iterable[str | int] = (), allow_all: bool = False, trusted_proxies: Iterable[str] = (),
                 check_host: bool | None = None, history_limit: int = HISTORY_LIMIT,
                 history_reader: HistoryReader | None = None, clock: Callable[[], float] = time.time,
                 keep_alive: float = KEEP_ALIVE_SECONDS, files_dir: Path | None = None,
                 keep_files_seconds: float = KEEP_FILES_SECONDS, order_hold: float = ORDER_HOLD_SECONDS) -> None:
        self.access = Access(token=token, user_header=user_header, allowed_users=allowed_users,
                             allow_all=allow_all, trusted_proxies=trusted_proxies, check_host=check_host)
        self.history_limit = history_limit
        self._history = history_reader
        self._clock = clock
        self._keep_alive = keep_alive
        self._streams = ChatStreams(hold_seconds=order_hold)
        self._sink: InboundSink | None = None
        self._commands: list[dict[str, str]] = []
        self._working: set[str] = set()
        """Chats with a turn running (between `typing` and `idle`): a page that opens then shows it at once."""
        self.files = WebFiles(files_dir or Path("web-files"), keep_seconds=keep_files_seconds, clock=clock)
        self._named = files_dir is not None
        """The pages carry the gateway's name (`_scope`), made from what is kept in ``files_dir``: without one of its
        own (a test, a program serving the adapter alone) nothing is made in the working directory for it."""
        self._sweeping: asyncio.Task | None = None
        self._not_recorded = RepeatedWarnings(log)
        """A database that cannot store messages refuses every one while it lasts: warned of once."""

    def measure(self, text: str) -> int:
        return len(text)

    def bind_history_reader(self, reader: HistoryReader) -> None:
        self._history = reader

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        """Accept messages from now on (before, and after `stop`, POSTs answer 503)."""
        self._sink = sink
        self._commands = [{"name": c.name, "description": c.description} for c in commands]
        if self._sweeping is None:
            self._sweeping = asyncio.ensure_future(self.files.sweep_every(SWEEP_SECONDS))

    async def stop(self) -> None:
        """Stop accepting messages and end every open stream (pages reconnect). Idempotent."""
        self._sink = None
        self._streams.end_all()
        if self._sweeping is not None:
            self._sweeping.cancel()
            self._sweeping = None

    async def close_streams(self) -> None:
        self._streams.end_all()

    def _scope(self) -> str | None:
        """The gateway's name for what its pages keep in the browser (a token, drafts, the conversation's id), the
        same at every address a proxy publishes it at and after a restart: scoped by its address, one gateway at
        ``/chat/`` and ``/support/`` was two conversations in one browser. Derived from the files' key (`WebFiles`),
        it tells nothing of it. None (the pages then scope by their address) when that key cannot be had."""
        if not self._named:
            return None
        try:
            return self.files.derived_id(SCOPE_PURPOSE)
        except OSError as exc:
            log.warning("web chat: its pages keep what they store in the browser under their address, one"
                        " conversation per address the gateway is published at: %s", exc)
            return None

    def web_routes(self) -> Sequence[Any]:
        scope = self._scope()
        return [
            *page_routes("/chat", STATIC_DIR, scope=scope),
            static_route("/chat/static", STATIC_DIR, scope=scope),
            web.post("/chat/api/messages", self._post_message),
            web.route("*", "/chat/api/messages", _only("POST")),
            web.get("/chat/api/history", self._get_history, allow_head=False),
            web.route("*", "/chat/api/history", _only("GET")),
            web.get("/chat/api/events", self._get_events, allow_head=False),
            web.route("*", "/chat/api/events", _only("GET")),
            web.get("/chat/api/files/{file_id}", self._get_file, allow_head=False),
            web.route("*", "/chat/api/files/{file_id}", _only("GET")),
        ]

    # -- out: publishing to open pages -------------------------------------------------

    async def send(self, message: Outbound) -> Sent:
        """Publish to the chat's open pages; the id is the outbox's idempotency key, which the
        history shows for the same message."""
        message_id = message.idempotency_key or f"m-{time.monotonic_ns()}"
        self._streams.publish(message.chat_id, "message", {
            "id": message_id, "role": "assistant", "kind": message.kind, "text": message.text,
            "time": self._clock(), "edited": False})  # fmt: skip
        return Sent(message_id)

    def upload_limit(self, chat_id: str) -> int:
        return UPLOAD_LIMIT

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        """Keep the file for the page (the outbox's copy goes once this returns) and publish its
        message: the caption and ``file``. The id is the file's, which the history shows for it.
        It follows from the idempotency key: a send tried again after a restart keeps nothing
        twice and publishes the same message, with the same link (random without a key)."""
        try:
            kept = await asyncio.to_thread(self.files.keep, message.chat_id, file, key=message.idempotency_key)
        except OSError as exc:  # a full disk: worth another try later, as the outbox does for a network error
            raise NetworkError(f"cannot keep the file for the web chat: {exc.strerror or exc}", method="send_file",
                               chat_id=message.chat_id, platform=self.name) from exc
        self._streams.publish(message.chat_id, "message", {
            "id": kept.id, "role": "assistant", "kind": message.kind, "text": message.text, "time": kept.time,
            "edited": False, "file": kept.shown()})  # fmt: skip
        return Sent(kept.id)

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        self._streams.publish(chat_id, "edit", {"id": message_id, "text": text})

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        self._streams.publish(chat_id, "delete", {"id": message_id})

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        self._working.add(chat_id)
        self._streams.publish(chat_id, "typing", {})

    async def idle(self, chat_id: str, thread_id: str | None) -> None:
        self._working.discard(chat_id)
        self._streams.publish(chat_id, "idle", {})

    # -- in: the page and its API ------------------------------------------------------

    async def _post_message(self, request: web.Request) -> web.Response:
        user = self.access.check(request)
        if isinstance(user, Refusal):
            return _refused(request, user)
        if request.content_type != "application/json":
            # A cross-site form or a "simple" fetch cannot send this type without asking first.
            return error_response(415, "send the message with the header Content-Type: application/json")
        if request.content_length is not None and request.content_length > MAX_BODY:
            return error_response(413, f"body over {MAX_BODY} bytes")
        try:
            # Never more than the limit is read: past the server's own cap, read() would answer in plain text.
            await request.content.readexactly(MAX_BODY + 1)
        except asyncio.IncompleteReadError as whole:
            body = whole.partial
        else:
            return error_response(413, f"body over {MAX_BODY} bytes")
        try:
            chat, text, key = _parse(body)
        except ValueError as exc:
            return error_response(400, str(exc))
        if self._sink is None:
            return error_response(503, "not accepting messages right now; retry with the same key")
        named = self.access.user_header is not None
        chat_id = _chat_id(user, chat, named)
        page_id = f"user:{key}"
        inbound = Inbound(platform=self.name, chat_id=chat_id, thread_id=None, user_id=user,
                          user_name=user if named else None, text=text, event_id=f"{key}@{chat_id}",
                          is_command=text.startswith("/"))
        try:
            # Shown only once the gateway has it (a message it failed to record is no message), yet before
            # anything it caused meanwhile (a command's answer), unless taking it is slow (`ORDER_HOLD_SECONDS`).
            # Pages merge by id: a retried POST shows it once.
            with self._streams.in_order(chat_id) as place:
                accepted = await self._sink(inbound)
                # What the gateway took: a key sent again with another text is the first text's message.
                shown = {"id": page_id, "role": "user", "kind": "user", "text": inbound.text, "time": self._clock(),
                         "edited": False}
                if accepted is not None and accepted.duplicate:
                    shown = self._taken(chat_id, page_id)
                if shown is not None:
                    place.event = ("user", shown)
        except Exception as exc:
            if not storage_refusal(exc):
                # A fault the message trips fails alike at every try: answered 500, the page posted it again for
                # ever, and every message typed after it waited behind it, across reloads too.
                log.exception("web chat: the gateway failed on event %s before recording it; answered %d, not"
                              " retried", inbound.event_id, NOT_HANDLED_STATUS)
                return error_response(NOT_HANDLED_STATUS, NOT_HANDLED_MESSAGE)
            # The database's own error line says why, once.
            self._not_recorded.warning("storage", "web chat: the gateway could not record event %s (%s: %s);"
                                       " answered 500, the page posts it again", inbound.event_id,
                                       type(exc).__name__, exc)
            return error_response(500, "internal error; retry with the same key")
        body = {"id": page_id, "turn_id": None, "duplicate": False}
        if accepted is not None:
            body.update(turn_id=accepted.turn_id, duplicate=accepted.duplicate)
        return web.json_response(body, status=202)

    async def _get_history(self, request: web.Request) -> web.Response:
        queried = self._queried_chat(request)
        if isinstance(queried, web.Response):
            return queried
        _, chat_id = queried
        before = request.query.get("before")
        if before is not None:
            return compressed(request, self._older(chat_id, before))
        history = self._read_history(chat_id)
        if isinstance(history, web.Response):
            return history
        return compressed(request, web.json_response(_paged(history, self._stops_short(history))))

    async def _get_events(self, request: web.Request) -> web.StreamResponse:
        queried = self._queried_chat(request)
        if isinstance(queried, web.Response):
            return queried
        user, chat_id = queried
        if self._sink is None:
            return error_response(503, "not serving right now; retry later")
        owner = stream_owner(user if self.access.user_header else None, request.remote)
        if self._streams.full(owner):  # before the history is read: a script asking again and again reads no store
            response = error_response(429, STREAMS_REFUSED)
            response.headers["Retry-After"] = "10"  # as the page does, whatever it is told
            return response
        after = request.query.get("after") or request.headers.get("Last-Event-ID") or None
        history = self._read_history(chat_id)
        if isinstance(history, web.Response):
            return history
        more = self._stops_short(history)
        first = {"messages": history, "commands": self._commands, "working": chat_id in self._working}
        if after is not None:
            resumed = self._resumed(chat_id, history, after)
            if isinstance(resumed, web.Response):
                return resumed
            history, first["gap"], reached = resumed
            more = more if reached is None else reached > 0
            if request.query.get("brief") == "1" and not first["gap"]:
                history = _held(history, after)
        first.update(_paged(history, more))
        # With no await since the reads: nothing was sent in between, and the owner still has room.
        sub = self._streams.subscribe(chat_id, owner, lambda: connection_open(request))
        return await serve_events(request, self._streams, sub, ("history", first), self._keep_alive,
                                  gzipped=accepts_gzip(request))

    async def _get_file(self, request: web.Request) -> web.StreamResponse:
        queried = self._queried_chat(request)
        if isinstance(queried, web.Response):
            return queried
        _, chat_id = queried
        kept = self.files.find(chat_id, request.match_info["file_id"])
        if kept is None:  # another chat's file answers the same: a link tells nothing about other chats
            days = self.files.keep_seconds / 86400
            return error_response(404, f"no such file in this chat (sent files are kept {days:g} days)")
        return web.FileResponse(kept.path, headers=download_headers(kept.name))

    def _queried_chat(self, request: web.Request) -> tuple[str, str] | web.Response:
        """``(user, chat id)`` for the chat a GET names in ``?chat=``, or the answer refusing it: 401/403 from
        the access check first, then 400 for a malformed name."""
        user = self.access.check(request)
        if isinstance(user, Refusal):
            return _refused(request, user)
        chat = request.query.get("chat", "")
        if not _CHAT.fullmatch(chat):
            return error_response(400, _CHAT_RULE)
        return user, _chat_id(user, chat, self.access.user_header is not None)

    def _resumed(self, chat_id: str, history: list[dict[str, Any]], after: str,
                 ) -> tuple[list[dict[str, Any]], bool, int | None] | web.Response:
        """``(messages, gap, at)`` for a page that holds the chat up to the message ``after``: the last
        ``history_limit`` messages, or, when ``after`` is older than those, every message from it on (up to
        `RESUME_LIMIT`; ``at``: how many of those are older than it, else None). Only the last ones, a page away for
        longer kept what it showed above them with nothing between: the replies in between were missing without a
        sign. ``gap``: ``after`` is not among the last `RESUME_LIMIT` (or was deleted), so what the page holds may not
        reach these; it replaces it with them, as a reload would."""
        if len(history) < self.history_limit or any(m["id"] == after for m in history):
            return history, False, None  # all the store has, or it reaches back to the page's newest
        longer = self._read_history(chat_id, RESUME_LIMIT)
        if isinstance(longer, web.Response):
            return longer
        at = next((i for i, m in enumerate(longer) if m["id"] == after), None)
        if at is None:
            return history, True, None
        return longer[at:], False, at

    def _stops_short(self, history: list[dict[str, Any]]) -> bool:
        """Whether ``history``, the last ``history_limit`` messages, may have stopped short of older ones a page can
        ask for (`_older`): not with a limit of `RESUME_LIMIT` or more, which holds all `_older` reaches (a page told
        ``more`` was refused with a 404 at each scroll up)."""
        return len(history) >= self.history_limit and self.history_limit < RESUME_LIMIT

    def _older(self, chat_id: str, before: str) -> web.Response:
        """``GET /chat/api/history?before=``: the ``history_limit`` messages before the message ``before``, for a page
        whose reader scrolled up to it, and ``more``: whether older ones are there to ask for. Found among the chat's
        last `RESUME_LIMIT` messages, as far as a reconnect reaches back: 404 for one not among them (deleted, or older
        than the gateway keeps)."""
        longer = self._read_history(chat_id, RESUME_LIMIT)
        if isinstance(longer, web.Response):
            return longer
        at = next((i for i, m in enumerate(longer) if m["id"] == before), None)
        if at is None:
            return error_response(404, f"no such message among the chat's last {RESUME_LIMIT:,} messages")
        start = max(0, at - self.history_limit)
        return web.json_response(_paged(longer[start:at], start > 0))

    def _taken(self, chat_id: str, page_id: str) -> dict[str, Any] | None:
        """The person's message ``page_id`` as the gateway recorded it, from the history; None when the
        history does not hold it (older than its last ``history_limit`` messages, or unreadable). A
        duplicate's own text may differ (a client that sent a key again with another text): shown, it
        would replace the message in every open page with a text the gateway never took, until a reload."""
        history = self._read_history(chat_id)
        if isinstance(history, web.Response):
            return None
        return next((m for m in history if m["role"] == "user" and m["id"] == page_id), None)

    def _read_history(self, chat_id: str, limit: int | None = None) -> list[dict[str, Any]] | web.Response:
        """The chat's last ``limit`` (``history_limit``) messages for a page, or the 500 answering a store that
        failed to read them: JSON, as every answer of the API is (aiohttp's own would be a page of text), and
        naming nothing of the store."""
        if self._history is None:
            return []
        try:
            messages = self._history(chat_id, self.history_limit if limit is None else limit)
        except Exception:
            log.exception("web chat: reading the history of chat %s failed", chat_id)
            return error_response(500, "internal error; retry later")
        for message in messages:
            if message["role"] == "user":  # the page knows what it sent by its own key
                message["id"] = "user:" + message["id"].removeprefix("user:").partition("@")[0]
            elif message.get("file"):
                kept = self.files.find(chat_id, message["id"])
                message["file"] = kept.shown() if kept is not None else {"expired": True}
        return messages


def _paged(messages: list[dict[str, Any]], more: bool) -> dict[str, Any]:
    """A history's ``messages``, with ``"more": true`` when the gateway may keep older ones for a page to ask for
    (`_older`): a history as long as its limit may have stopped short of the first. Left out otherwise, as before."""
    return {"messages": messages, "more": True} if more else {"messages": messages}


def _held(messages: list[dict[str, Any]], after: str) -> list[dict[str, Any]]:
    """``messages`` for a client that holds them up to ``after`` and asked for them ``brief=1``: those up to it (itself
    included) as ``{"id"}`` alone, which the client fills in from its own, so a phone reconnecting after a lock or a
    network switch is not sent its whole history again. Not an edited message (a progress card, edited all turn long,
    may have changed while the client was away) nor a file (its link expires): those come whole. Ids alone still say
    the order and what the gateway no longer has (a deleted card), so the client merges as it does a whole history;
    one it does not hold (taken before ``after`` while it was away) it asks for whole."""
    at = next((i for i, m in enumerate(messages) if m["id"] == after), -1)
    return [{"id": m["id"]} if i <= at and not m.get("edited") and not m.get("file") else m
            for i, m in enumerate(messages)]


def _only(allowed: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of every other method on an API path that takes ``allowed``: 405 with ``Allow``, as aiohttp
    answers, but JSON like every other error of the API (aiohttp's own was a line of plain text)."""
    async def refuse(request: web.Request) -> web.Response:
        response = error_response(405, f"method not allowed here; this path takes {allowed}")
        response.headers["Allow"] = allowed
        return response
    return refuse


def _refused(request: web.Request, refusal: Refusal) -> web.Response:
    return refusal_response(request, refusal, realm="switchboard", what="web chat")


def _chat_id(user: str, chat: str, named: bool) -> str:
    """The gateway's chat id: each signed-in user's chats are their own (``named``: a signing-in proxy names the
    user), a user the proxy names ``web`` too, whose chats were those of the gateway without one."""
    return f"{user}:{chat}" if named else chat


def _parse(body: bytes) -> tuple[str, str, str]:
    """``(chat, text, key)`` from the JSON body; ValueError naming the problem."""
    data = load_json_body(body)
    if not isinstance(data, dict):
        raise ValueError("body must be a JSON object")
    chat, text, key = data.get("chat"), data.get("text"), data.get("key")
    if not isinstance(chat, str) or not _CHAT.fullmatch(chat):
        raise ValueError(_CHAT_RULE)
    text = message_text(text)
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError('"key" must be 8 to 128 letters, digits, "-" or "_" (a new one per message)')
    return chat, text, key


def message_text(text: object) -> str:
    """``text`` as a message typed by a person or sent by a program (the web chat's API, a webhook's); ValueError
    naming the problem: not a string, nothing shown (empty, whitespace, or only invisible characters), or longer
    than `MAX_TEXT`."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError('"text" must be a non-empty string')
    if len(text) > MAX_TEXT:
        raise ValueError(f'"text" must be at most {MAX_TEXT} characters')
    if is_blank(text):
        # Zero-width spaces, joiners, a byte order mark: a chat shows none of them, yet each such text cost a turn
        # of the model, answering what no one could read.
        shown = list(dict.fromkeys(c for c in text if not c.isspace()))
        named = ", ".join(f"U+{ord(c):04X}" for c in shown[:3]) + (", …" if len(shown) > 3 else "")
        raise ValueError(f'"text" must be a non-empty string, not only invisible characters ({named})')
    return text
