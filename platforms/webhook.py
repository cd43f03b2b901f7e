"""The ``webhook`` platform: signed JSON over HTTP, in and out, one named route per caller.

In: ``POST /webhooks/<route>`` with ``{"text", "chat_id"?, "user"?}``, signed as
`platforms.webhook_signing` describes, answers 202 ``{"turn_id", "session",
"duplicate"}``. Checks run cheapest-first and stop at the first failure: unknown
route 404, signature headers missing or malformed 401, ``Content-Length`` over ``max_body``
413 (all before a byte of the body is read), too many bodies being read already 503 with
``Retry-After`` (`platforms.unsigned_bodies`), body over ``max_body`` 413, signature or clock
401, one of the route's own deliveries sent back 401 (`SentBack`), payload 400 (a text field holding a
lone surrogate included: it is refused, never stored; a ``text`` over the web chat's `MAX_TEXT` too; a file in
``file``, ``files``, ``attachment`` or ``attachments``, which no webhook message carries). A 401 for
the signature says what to fix (``detail``, `platforms.webhook_signing.explain`). A route rotating its secret names
the old one as ``previous_secret``: requests signed with either are taken, deliveries signed with ``secret``.
Then the gateway: 500 when it could not record the event for want of storage (send it again), a final 422 when it
failed on it otherwise (`platforms.not_recorded.NOT_HANDLED_STATUS`).

Out: each message is POSTed, signed, to the route's ``deliver_url`` (through the proxy the environment
names for that URL, `platforms.proxies`) with an ``Idempotency-Key``; a 429 or 5xx answer with a
``Retry-After`` header raises `RateLimited` with the seconds it asks for (the outbox waits that long, capped by
``delivery.max_retry_after``); a refusal the receiver would repeat (405, 410, 413, 415, 422:
`_REFUSED_FOR_GOOD`) raises `NotFound`, final (the message is not sent again; the error quotes the start of the
answer); any other non-2xx answer or connection failure raises `NetworkError` and the outbox backs off. Either of
those it retries for ``retry_for_seconds``. Each message names the request it answers (``origin_turn_id``, from
the gateway's `platforms.base.TurnOrigin`): a background result comes in a turn of its own. At most
`ROUTE_CONNECTIONS` deliveries per route are in flight at once, each route its own. A route without a
``deliver_url`` is read instead: ``GET /webhooks/<route>/turns/<turn_id>``, signed,
answers with what ``turn_reader`` returns from the outbox. A route with one may be read too, each
message then saying how its delivery went (``delivery``): how its caller learns one was given up on.

Files (`send_file`): the adapter keeps its own copy (`platforms.webhook_files`) and delivers a
message of kind ``file`` naming it; ``GET /webhooks/<route>/files/<id>``, signed like the turn
read, downloads it while it is kept, to the route it was sent in only.

A method a path does not take is 405 with ``Allow``, JSON as every other answer (`_only`).

Webhook callers are programs, not people: no typing, no edits, never interim
messages (dropped here, whatever the display config says). See docs/platforms/webhook.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import re
import time
from base64 import b64encode
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yarl
from aiohttp import web

from platforms.base import (
    CommandSpec,
    DisplayTier,
    EditUnsupported,
    Inbound,
    InboundSink,
    NetworkError,
    NotFound,
    Outbound,
    OutboundFile,
    RateLimited,
    Sent,
    TurnOrigin,
    TurnReader,
    has_surrogates,
    scalar_text,
)
from platforms.json_body import load_json_body
from platforms.not_recorded import (
    NOT_HANDLED_MESSAGE,
    NOT_HANDLED_STATUS,
    STOPPING,
    STOPPING_RETRY_AFTER,
    storage_refusal,
)
from platforms.proxies import proxy_for
from platforms.repeated_warnings import RepeatedWarnings
from platforms.retry_after import header_seconds
from platforms.unsigned_bodies import RETRY_AFTER, Busy, UnsignedBodies, refuse_before_continue
from platforms.web import MAX_TEXT, message_text
from platforms.web_files import WebFiles, download_headers
from platforms.webhook_files import KEEP_SECONDS, SWEEP_SECONDS, UPLOAD_LIMIT, described
from platforms.webhook_signing import (
    SCHEME,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    explain,
    get_payload,
    malformed,
    signed_headers,
    verify,
)

log = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024
DELIVERY_TIMEOUT = 10.0
ROUTE_CONNECTIONS = 100
"""Deliveries in flight at once per route: a receiver that hangs holds its own route's, never another's."""
ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")  # no ":" (it splits chat ids) and no "/"
_MAX_ID = 256
SENT_BACK = "a delivery of this route sent back, not a request to it"
_DELIVERY_FIELDS = ("route", "turn_id", "kind", "sequence")
"""What a delivery (`_message`) has and a request does not."""
_FILE_FIELDS = ("file", "files", "attachment", "attachments")
"""Fields a caller puts a file in, expecting the agent to get it. Other unknown fields are ignored, but a file
ignored is a caller told 202 for a question about a file the agent never saw: it is refused instead."""
_MESSAGE_KEYS = frozenset({"text", "fallback", "pretext", "title", "fields", "blocks", "color", "footer"})
_FILE_KEYS = frozenset({"url", "data", "content", "path", "base64", "bytes", "name", "filename", "file_name", "size",
                        "mimetype", "mime_type", "content_type", "url_private", "url_private_download"})
"""Keys of a Slack-format message attachment (Slack's incoming webhooks, Mattermost, Rocket.Chat: blocks of
alert text that GitLab and many scripts written for Slack send beside ``text``), and of a file."""
_DELIVERY = {"pending": "pending", "sent": "delivered", "failed": "failed", "dropped": "dropped"}
"""A read message's ``delivery``, by its outbox status."""
_SETTLED = ("sent", "failed", "dropped")
_CONNECT_ERRORS = frozenset({OSError, ConnectionRefusedError, ConnectionResetError, ConnectionAbortedError,
                             TimeoutError})
"""A connect's failures whose errno says why (refused, no route to host, unreachable, timed out); not TLS's."""
_DELIVERY_JSON = json.JSONEncoder(ensure_ascii=False)
"""Encodes every delivery: ``json.dumps`` given any option builds a new encoder for each call."""
_REFUSED_FOR_GOOD = {405: "method not allowed", 410: "gone", 413: "content too large", 415: "unsupported media type",
                     422: "unprocessable content"}
"""A receiver's answers that refuse the delivery itself, which it would refuse again however long it waited (410:
a conversation it closed). Retried, each was sent again for retry_for_seconds, every later message of its chat
waiting behind it. Not 400 or 401 or 403 (a receiver not yet given a rotated secret: Stripe's and Svix's examples
answer a bad signature with 400), 404 (an ingress's default backend answers it while the receiver is deployed),
408, 409 (one still handling the same Idempotency-Key), 425 or 429: they pass."""
_ANSWER_CHARS = 200
"""Characters of a final refusal's answer the log quotes: a receiver's reason, not its error page."""
_TOKEN_CHARS = 8
"""A deliver_url's part (a path segment, a query name or value, a host's label) this long that reads as no word
(`_word`) may be a token a receiver names on its own: masked too."""
_ALWAYS_CHARS = 12
"""A part this long is masked though it reads as words: a token of letters alone may (one of twelve lower-case
letters in three), and few words in a URL are as long."""
_SHORT_CHARS = 4
"""A part shorter is no secret (``v2``, an address's ``127``): nor is the path or URL holding it, alone, one."""
_CREDENTIAL_ENDS = ("token", "secret", "key", "pass", "pwd", "sig", "auth", "credential")
_CREDENTIAL_STARTS = ("token", "secret", "pwd", "passw", "credential")
_CREDENTIAL_WORDS = frozenset("authcode authentication authorization passcode passphrase sign signature".split())
_NOT_CREDENTIALS = frozenset("bypass compass donkey hockey jockey lackey monkey oauth overpass surpass trespass turkey "
                             "turnkey underpass whiskey".split())
"""A query parameter's, or a path segment's, name that a credential follows (``?api_key=``, IFTTT's ``/with/key/…``)
has a word (`_NAME_WORDS`, any case) ending with one of `_CREDENTIAL_ENDS` (``key``, ``apikey``, ``accesstoken``,
``basicauth``) but no common word so ending (`_NOT_CREDENTIALS`), starting with one of `_CREDENTIAL_STARTS`
(``tokens``, ``password``, ``secretvalue``), or one of `_CREDENTIAL_WORDS`: what follows is masked whatever it reads
as. The log's own masking (`gateway.config.secret_values.CREDENTIAL_NAMES`) takes any name holding their letters;
here what is masked is masked wherever the receiver's words say it, and ``signals`` (``sig``), ``oauth``, ``keys``
or ``passthrough`` made the segment after them, ``incoming``, a credential."""
_NAME_WORDS = re.compile(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])")
"""Where a name splits into words: at a sign or a digit, and before a capital after a small letter (``apiKey``);
``SASToken`` and ``OAuth`` stay one word each."""
_PIECE = "(?:[a-z]+(?:[A-Z][a-z]+)*|(?:[A-Z][a-z]+)+|[A-Z]{1,5})"
_WORDS = re.compile(rf"{_PIECE}(?:[-_.~]{_PIECE})*")
"""Words as a URL spells them: letters cased as words are (``hooks``, ``AlertHook``, ``API``), one of ``-_.~``
between two."""
_UNSPOKEN = re.compile(r"[b-df-hj-np-tv-xz]{5}|([a-z])\1\1", re.IGNORECASE)
"""Five consonants in a row, or a letter three times: in a random string of letters, rarely in a word."""
_SPLIT_WORDS = re.compile(r"[-_.~]|(?<=[a-z])(?=[A-Z])")
_URL_WORDS = frozenset("""
    alert alerts api app apps bot bots callback callbacks catch channel channels chat chats deliver deliveries delivery
    event events example gateway hook hooks inbound incoming ingest integration integrations internal message messages
    notice notices notify ops outbound prod production receive receiver relay report reports service services
    staging status switchboard team teams trigger triggers update updates webhook webhooks workflow workflows
""".split())
"""Words a part of `_TOKEN_CHARS` or more may be made of and still be shown: a token of letters alone reads as words
as often as not (`_word`), so only these common ones are taken for words there."""


class SentBack(Exception):
    """The body is one of the route's own deliveries (see `_parse`)."""


@dataclass(frozen=True, slots=True)
class Route:
    secret: str = field(repr=False)
    """Shared with the caller; signs requests both ways."""
    deliver_url: str | None = None
    """Where replies are POSTed; None: the caller reads them with the signed GET."""
    previous_secret: str | None = field(default=None, repr=False)
    """The secret being rotated out: requests signed with it are still taken; deliveries are signed with
    ``secret`` alone."""

    def secrets(self) -> tuple[str, ...]:
        return (self.secret,) if not self.previous_secret else (self.secret, self.previous_secret)


class WebhookAdapter:
    """``routes`` maps route names to `Route`s, ``(secret, deliver_url[, previous_secret])`` tuples or any
    object with those attributes (the config's route settings; ``previous_secret`` optional). ``session`` is a
    seam for tests; one the adapter did not create is left open by `stop`."""

    name = "webhook"
    tier = DisplayTier(interim_assistant_messages=False, long_running_notifications=False, messaging=False)
    text_limit = 100_000
    caption_limit = text_limit
    counts_characters = True  # `measure` is len: `platforms.base.CountsCharacters`
    typing_interval = 0.0  # no progress to show: typing() and idle() are never called

    def __init__(
        self,
        routes: Mapping[str, Route | tuple[str, str | None] | Any],
        *,
        retry_for_seconds: float = 3600.0,
        turn_reader: TurnReader | None = None,
        session: aiohttp.ClientSession | None = None,
        clock: Callable[[], float] = time.time,
        max_body: int = MAX_BODY,
        delivery_timeout: float = DELIVERY_TIMEOUT,
        bodies: UnsignedBodies | None = None,
        files_dir: Path | None = None,
        keep_files_seconds: float = KEEP_SECONDS,
    ) -> None:
        self.routes: dict[str, Route] = {}
        for name, spec in routes.items():
            route = Route(*spec) if isinstance(spec, tuple) else Route(
                spec.secret, spec.deliver_url, getattr(spec, "previous_secret", None))
            if not ROUTE_NAME.fullmatch(name):
                raise ValueError(f"webhook route name {name!r}: use letters, digits, '-' and '_' (at most 64)")
            if not route.secret:
                # An unsigned route would let anyone on the network talk to the agent: fail closed.
                raise ValueError(f"webhook route {name!r} needs a secret")
            for key, secret in (("secret", route.secret), ("previous_secret", route.previous_secret)):
                if secret and (problem := secret_problem(secret)):
                    raise ValueError(f"webhook route {name!r}: its {key} {problem}")
            # Signatures cover the timestamp and body, not the route: a caller of either could use both. A secret
            # being rotated out still signs requests, so it counts as well.
            shared = (n for n, r in self.routes.items() if set(r.secrets()) & set(route.secrets()))
            if (other := next(shared, None)) is not None:
                raise ValueError(f"webhook routes {other!r} and {name!r} share one secret: give each its own")
            self.routes[name] = route
        self.retry_for_seconds = retry_for_seconds
        """How long the gateway's outbox keeps retrying a failed delivery."""
        self.max_body = max_body
        self._bodies = bodies or UnsignedBodies()
        """Bounds the bodies read before their signature is checked (a seam for tests)."""
        self._turn_reader = turn_reader
        self._turn_origin: TurnOrigin = _own_origin
        self._session = session
        self._owns_session = False
        self._clock = clock
        self._timeout = aiohttp.ClientTimeout(total=delivery_timeout)
        self._in_flight = {name: asyncio.Semaphore(ROUTE_CONNECTIONS) for name in self.routes}
        self._sink: InboundSink | None = None
        self.files = WebFiles(files_dir or Path("webhook-files"), keep_seconds=keep_files_seconds, clock=clock,
                              label="webhook")
        """The files sent in the routes' chats, kept for their downloads."""
        self._sweeping: asyncio.Task | None = None
        self._not_recorded = RepeatedWarnings(log)
        """A database that cannot store events refuses every one while it lasts: warned of once."""
        self._refusals = RepeatedWarnings(log)
        """A caller signing wrong (its secret, its clock) is refused at every request, a stranger at every
        guess: warned of once per route and reason, then counted."""
        self._previous = RepeatedWarnings(log, level=logging.INFO)
        """Requests signed with a route's ``previous_secret``: said once per route, then counted."""

    def measure(self, text: str) -> int:
        return len(text)

    def bind_turn_reader(self, reader: TurnReader) -> None:
        """Where ``GET /webhooks/<name>/turns/<id>`` reads messages from (the gateway's outbox)."""
        self._turn_reader = reader

    def bind_turn_origin(self, origin: TurnOrigin) -> None:
        """What a delivery's ``origin_turn_id`` says (the gateway's `TurnOrigin`); unbound, a turn is its own."""
        self._turn_origin = origin

    async def start(self, sink: InboundSink, commands: Sequence[CommandSpec] = ()) -> None:
        """Accept requests from now on (before, and after `stop`, POSTs answer 503)."""
        self._sink = sink
        self._client()
        if self._sweeping is None:
            self._sweeping = asyncio.ensure_future(self.files.sweep_every(SWEEP_SECONDS))

    async def stop(self) -> None:
        """`stop_within`, then `close`. Idempotent."""
        try:
            await self.stop_within(0)
        finally:
            await self.close()

    async def stop_within(self, seconds: float) -> None:
        """Stop accepting requests (they get 503). Waits on nothing. The HTTP session stays open for the
        replies of the turns still ending, until `close`. Idempotent."""
        self._sink = None
        if self._sweeping is not None:
            self._sweeping.cancel()
            self._sweeping = None

    async def close(self) -> None:
        """Close the HTTP session if the adapter made it, after `stop_within`. Idempotent."""
        session, self._session = self._session, None
        if session is not None and self._owns_session:
            await session.close()
        self._owns_session = False

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            # No shared cap (aiohttp's is 100 in all): each route has its own (`ROUTE_CONNECTIONS`).
            connector = aiohttp.TCPConnector(limit=0)
            self._session, self._owns_session = aiohttp.ClientSession(timeout=self._timeout, connector=connector), True
        return self._session

    def web_routes(self) -> Sequence[Any]:
        return [
            web.post("/webhooks/{name}", self._handle_post, expect_handler=refuse_before_continue(self._early)),
            web.route("*", "/webhooks/{name}", _only("POST")),
            # HEAD off: a HEAD would be checked against a "GET " signature it was not made for.
            web.get("/webhooks/{name}/turns/{turn_id}", self._handle_get, allow_head=False),
            web.route("*", "/webhooks/{name}/turns/{turn_id}", _only("GET")),
            web.get("/webhooks/{name}/files/{file_id}", self._handle_file, allow_head=False),
            web.route("*", "/webhooks/{name}/files/{file_id}", _only("GET")),
        ]

    # -- in --------------------------------------------------------------------------

    def _early(self, request: web.Request) -> web.Response | None:
        """What no body could make valid, refused before a byte of it is read (or asked for)."""
        name = request.match_info["name"]
        if name not in self.routes:
            return _error(404, f"unknown route {name!r}")
        if self._sink is None:
            return _stopping()
        headers = request.headers
        if reason := malformed(headers.get(TIMESTAMP_HEADER), headers.get(SIGNATURE_HEADER)):
            return self._refusal(request, reason, "the body")
        if request.content_length is not None and request.content_length > self.max_body:
            return _error(413, f"body over {self.max_body} bytes")
        return None

    async def _handle_post(self, request: web.Request) -> web.Response:
        if (refusal := self._early(request)) is not None:
            return refusal
        name = request.match_info["name"]
        route = self.routes[name]
        try:
            body, reason = await self._bodies.check(request, lambda: self._read_and_verify(route, request))
        except Busy:
            log.info("webhook POST %s: answered 503, too many unverified bodies at once", request.rel_url.raw_path)
            return _error(503, "too many requests at once; retry shortly", busy=True)
        if body is None:
            return _error(413, f"body over {self.max_body} bytes")
        if reason is not None:
            return self._refusal(request, reason, _body_payload(request, body))
        try:
            text, chat, user = _parse(body, name)
        except SentBack:
            return self._refusal(request, SENT_BACK)
        except ValueError as exc:
            return _error(400, str(exc))
        timestamp = request.headers[TIMESTAMP_HEADER]
        # The canonical signature (verified equal to the header's, lower-cased), not the header
        # as sent: a replay spelled differently (upper-case hex) is the same event.
        signature = request.headers[SIGNATURE_HEADER].strip().partition("=")[2].lower()
        event = f"{name}\n{timestamp}\n{SCHEME}={signature}"
        inbound = Inbound(platform=self.name, chat_id=f"{name}:{chat or 'default'}", thread_id=None,
                          user_id=user or f"webhook:{name}", user_name=user, text=text,
                          event_id=hashlib.sha256(event.encode()).hexdigest(), is_command=text.startswith("/"))
        if self._sink is None:  # stopped while the body came in: as one that came after the stop
            return _stopping()
        try:
            accepted = await self._sink(inbound)
        except Exception as exc:
            if not storage_refusal(exc):
                # A fault the message trips fails alike at every try: a 500 invited the caller to send it again
                # for as long as it retries (many, for ever), each time in vain.
                log.exception("webhook route %r: the gateway failed on event %s before recording it; answered %d,"
                              " final", name, inbound.event_id, NOT_HANDLED_STATUS)
                return _error(NOT_HANDLED_STATUS, NOT_HANDLED_MESSAGE)
            # The caller may send the same signed request again: it is the same event id. The database's own error
            # line says why, once.
            self._not_recorded.warning("storage", "webhook route %r: the gateway could not record event %s"
                                       " (%s: %s); answered 500, for the caller to send it again", name,
                                       inbound.event_id, type(exc).__name__, exc)
            return _error(500, "internal error; retry the same request")
        answer = {"turn_id": None, "session": None, "duplicate": False}  # the sink dropped it quietly
        if accepted is not None:
            answer = {"turn_id": accepted.turn_id, "session": accepted.session, "duplicate": accepted.duplicate}
        return web.json_response(answer, status=202)

    async def _read_and_verify(self, route: Route, request: web.Request) -> tuple[bytes | None, str | None]:
        """``(body, why it was refused)``; no body when it is over ``max_body``."""
        body = await _read_bounded(request, self.max_body)
        return body, None if body is None else self._unverified(route, request, body)

    def _unverified(self, route: Route, request: web.Request, payload: bytes) -> str | None:
        headers = request.headers
        reason = None
        for previous, secret in enumerate(route.secrets()):  # the current one first, the one rotated out second
            reason = verify(secret, headers.get(TIMESTAMP_HEADER), headers.get(SIGNATURE_HEADER), payload,
                            now=self._clock())
            if reason is None and previous:
                # How the operator learns when the rotation is over: once these lines stop.
                self._previous.warning(request.match_info["name"], "webhook route %r: a request signed with its"
                                       " previous_secret was taken; remove previous_secret once the caller signs with"
                                       " secret", request.match_info["name"])
            if reason != "bad signature":
                return reason
        return reason

    def _refusal(self, request: web.Request, reason: str, payload: str | None = None) -> web.Response:
        """401 for ``reason``; with ``payload`` (what the signature covers, in words), what to fix as ``detail``."""
        self._refusals.warning((request.match_info["name"], reason), "webhook %s %s refused: %s", request.method,
                               request.rel_url.raw_path, reason)
        detail = None if payload is None else explain(
            reason, request.headers.get(TIMESTAMP_HEADER), request.headers.get(SIGNATURE_HEADER), now=self._clock(),
            payload=payload)
        return _error(401, reason, detail=detail)

    def _signed_get(self, request: web.Request) -> web.Response | None:
        """Why a signed GET of a route is refused (404 or 401), or None when it may be answered."""
        name = request.match_info["name"]
        route = self.routes.get(name)
        if route is None:
            return _error(404, f"unknown route {name!r}")
        path = request.rel_url.raw_path
        if reason := self._unverified(route, request, get_payload(path)):
            # The path as received: a proxy that rewrote it is a reason a caller's signature fails.
            return self._refusal(request, reason, f'"GET {path}", the path as this server received it')
        return None

    async def _handle_get(self, request: web.Request) -> web.Response:
        if (refusal := self._signed_get(request)) is not None:
            return refusal
        name, turn_id = request.match_info["name"], request.match_info["turn_id"]
        if self._turn_reader is None:
            return _error(404, "this gateway does not serve turn reads")
        try:
            read = await self._turn_reader(name, turn_id)
        except LookupError:
            return _error(404, f"unknown turn {turn_id!r}")
        except Exception:
            # JSON, as every answer of the route is (aiohttp's own 500 is a page of text), naming nothing of
            # the store. A read changes nothing: the caller reads again later, as it polls anyway.
            log.exception("webhook route %r: reading turn %r failed", name, turn_id)
            return _error(500, "internal error; retry later")
        pushed = self.routes[name].deliver_url is not None
        # A file is there once it is kept; one given up on (pushed) was kept, or its read says it is not.
        messages = [self._read_message(name, m, pushed, turn_id) for m in read.messages
                    if m.get("op") != "file" or m.get("status") in (_SETTLED if pushed else ("sent",))]
        return web.json_response({"turn_id": turn_id, "complete": read.complete, "messages": messages})

    def _read_message(self, route: str, m: Mapping[str, Any], pushed: bool, origin: str) -> dict[str, Any]:
        """A delivery's fields, ``origin`` the turn read (every message of a read answers it: `TurnRead`); read on a
        route that has a ``deliver_url``, also how its delivery went: the one way its caller learns that a message
        was given up on (no note is delivered in its place)."""
        message = _message(route, m["chat_id"], m["turn_id"], origin, m["kind"], m["text"], m["sequence"])
        if pushed:
            message["delivery"] = _DELIVERY[m["status"]]
        if m.get("op") != "file":
            return message
        file_id = m["message_id"] or self._file_id(m["key"])
        kept = self.files.get(file_id or "")
        return {**message, "kind": "file",
                "file": described(route, kept) if kept is not None else {"id": file_id, "expired": True}}

    def _file_id(self, key: str) -> str | None:
        """The id a file send that never went out kept its file under (`send_file`); None when the
        folder's id key cannot be read."""
        try:
            return self.files.id_for(key)
        except OSError:
            return None

    async def _handle_file(self, request: web.Request) -> web.StreamResponse:
        """A kept file, to the route it was sent in; any other (or none) is unknown, as turns are."""
        if (refusal := self._signed_get(request)) is not None:
            return refusal
        name, file_id = request.match_info["name"], request.match_info["file_id"]
        kept = self.files.get(file_id)
        if kept is None or kept.chat_id.partition(":")[0] != name:
            return _error(404, f"unknown file {file_id!r}")
        return web.FileResponse(kept.path, headers=download_headers(kept.name))

    # -- out -------------------------------------------------------------------------

    async def send(self, message: Outbound) -> Sent:
        """POST the message to the route's ``deliver_url``; returns the idempotency key as
        the message id. Each attempt is signed afresh (an hour of retries would outlive
        any timestamp) but carries the same ``Idempotency-Key``, which receivers dedupe
        on. Raises `NotFound` for a chat of no configured route, `NetworkError` for a
        non-2xx answer (redirects included: a signed body is not forwarded) or a
        connection failure or timeout, `NotFound` (final) for a refusal the receiver would repeat (a 410, a 422...).
        Interim messages are dropped, reported as sent."""
        name = message.chat_id.partition(":")[0]
        route = self.routes.get(name)
        if route is None:
            raise NotFound(f"no webhook route {name!r}", method="send", chat_id=message.chat_id)
        key = message.idempotency_key or _fallback_key(message)
        if route.deliver_url is None or message.kind == "interim":
            return Sent(key)
        payload = _message(name, message.chat_id, message.turn_id, self._origin(message), message.kind, message.text,
                           message.sequence)
        await self._deliver(name, route, payload, key, message.chat_id)
        return Sent(key)

    def upload_limit(self, chat_id: str) -> int:
        return UPLOAD_LIMIT

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        """Keep the file for its download (the outbox's copy goes once this returns) and deliver a
        message of kind ``file`` describing it, its text the caption; returns the file's id. The
        id follows from the idempotency key, so a send tried again keeps nothing twice and
        announces the same download. Raises as `send` does; `NetworkError` when the file cannot
        be kept (a full disk: worth another try)."""
        name = message.chat_id.partition(":")[0]
        route = self.routes.get(name)
        if route is None:
            raise NotFound(f"no webhook route {name!r}", method="send_file", chat_id=message.chat_id)
        key = message.idempotency_key or _fallback_key(message)
        try:
            kept = await asyncio.to_thread(self.files.keep, message.chat_id, file, key=key)
        except OSError as exc:
            raise NetworkError(f"webhook route {name!r}: cannot keep the file: {exc.strerror or exc}",
                               method="send_file", chat_id=message.chat_id, platform=self.name) from exc
        if route.deliver_url is not None:
            payload = _message(name, message.chat_id, message.turn_id, self._origin(message), "file", message.text,
                               message.sequence)
            await self._deliver(name, route, {**payload, "file": described(name, kept)}, key, message.chat_id)
        return Sent(kept.id)

    def _origin(self, message: Outbound) -> str | None:
        return None if message.turn_id is None else self._turn_origin(message.turn_id)

    async def _deliver(self, name: str, route: Route, payload: dict[str, Any], key: str, chat_id: str) -> None:
        assert route.deliver_url is not None
        body = _DELIVERY_JSON.encode(payload).encode("utf-8")
        try:
            async with self._in_flight[name]:  # signed once it has its turn, so the wait cannot make it stale
                headers = {**signed_headers(route.secret, body, now=self._clock()), "Idempotency-Key": key,
                           "Content-Type": "application/json"}
                # Chosen per URL: a route's deliver_url may be an internal host that $no_proxy exempts.
                async with self._client().post(
                    route.deliver_url, data=body, headers=headers, allow_redirects=False, timeout=self._timeout,
                    proxy=proxy_for(route.deliver_url),
                ) as response:
                    status, retry_after = response.status, response.headers.get("Retry-After")
                    said = await _answer(response, route) if status in _REFUSED_FOR_GOOD else ""
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise NetworkError(f"webhook route {name!r}: delivery failed: {self._failure(exc)}",
                               method="send", chat_id=chat_id) from exc
        if 200 <= status < 300:
            return
        if (refused := _REFUSED_FOR_GOOD.get(status)) is not None:
            raise NotFound(f"webhook route {name!r}: deliver_url answered HTTP {status} ({refused}): not sent again"
                           f"{said}", method="send", chat_id=chat_id)
        wait = header_seconds(retry_after, self._clock()) if status == 429 or status >= 500 else None
        if wait is not None:
            raise RateLimited(f"webhook route {name!r}: deliver_url answered HTTP {status}, retry after {wait:g} s",
                              retry_after=wait, method="send", chat_id=chat_id)
        # Location left out: a URL may carry a token.
        redirect = " (a redirect: not followed, a signed body goes nowhere else)" if 300 <= status < 400 else ""
        raise NetworkError(f"webhook route {name!r}: deliver_url answered HTTP {status}{redirect}",
                           method="send", chat_id=chat_id)

    def _failure(self, exc: BaseException) -> str:
        """Why a delivery failed, for the log: the error's type and, where it has one, the operating system's reason
        or the time waited. Never the error's own text: a ClientError's carries the URL, and URLs carry tokens (the
        type alone left the operator guessing between a receiver down, a firewall and a slow one)."""
        if isinstance(exc, TimeoutError):
            return f"{type(exc).__name__} (no answer within {self._timeout.total:g} s)"
        cause = getattr(exc, "os_error", None)
        # A positive errno's words name no host; a resolver's (negative) or TLS error's may, or are the type's own.
        if type(cause) in _CONNECT_ERRORS and isinstance(cause.errno, int) and cause.errno > 0:
            return f"{type(exc).__name__} ({os.strerror(cause.errno)})"
        return type(exc).__name__

    async def edit(self, chat_id: str, thread_id: str | None, message_id: str, text: str) -> None:
        raise EditUnsupported("webhook deliveries cannot be edited", method="edit", chat_id=chat_id)

    async def typing(self, chat_id: str, thread_id: str | None) -> None: ...

    async def idle(self, chat_id: str, thread_id: str | None) -> None: ...


CALLERS_REFUSED = "its callers sign with the secret they were given, without it, and would all be refused"


def secret_problem(secret: str, consequence: str = CALLERS_REFUSED) -> str | None:
    """Why a route cannot sign with ``secret`` as its callers will (words to follow "its secret"), else None;
    ``consequence`` says what it would do instead (`gateway.config.rules` holds other secrets to this rule).

    Whitespace at either end is a file's last line break or a stray space, kept by ``${VAR}``: the caller signs
    with the secret it was given, without it, and every request would be refused ``bad signature`` (every
    delivery refused by the receiver alike), with nothing to say why. Whitespace inside is a passphrase's."""
    if secret == secret.strip():
        return None
    starts = secret[0].isspace()
    what = "a line break" if secret[0 if starts else -1] in "\r\n" else "whitespace"
    return (f"{'starts' if starts else 'ends'} with {what} (a secret file's last line break, or a stray space):"
            f" {consequence}; remove it")


def _message(route: str, chat_id: str, turn_id: str | None, origin: str | None, kind: str, text: str,
             sequence: int) -> dict[str, Any]:
    """A message as callers see it, delivered or read: the same fields either way. ``origin``: the turn of the
    request it answers, the one its 202 named (`TurnOrigin`)."""
    chat = chat_id.partition(":")[2]
    # A model may emit a lone surrogate ("\\ud800"); UTF-8 cannot carry it, the caller gets U+FFFD.
    return {"route": route, "chat_id": None if chat in ("", "default") else chat, "turn_id": turn_id,
            "origin_turn_id": origin, "kind": kind, "text": scalar_text(text), "sequence": sequence}


async def _answer(response: aiohttp.ClientResponse, route: Route) -> str:
    """``"; its answer: "`` and the start of ``response``'s body on one line, for the log of a final refusal (the
    operator's one clue to why: a field the receiver misses, a size it takes); ``""`` for an empty or unreadable
    one. A receiver may echo what it was sent: the route's secrets are masked, and the URL's (`_hidden`), in either
    case, also one cut short by the end of what is read."""
    limit = 4 * _ANSWER_CHARS  # bytes: enough for that many characters, however encoded
    head = b""
    try:
        while len(head) < limit and (chunk := await response.content.read(limit - len(head))):
            head += chunk
    except (aiohttp.ClientError, TimeoutError):
        pass  # the status says enough; what came is quoted
    cut = len(head) >= limit
    # A character the read cut in two decodes as U+FFFD, which would hide the start of a secret before it.
    text = head.decode("utf-8", "replace").rstrip("\ufffd" if cut else "")
    hidden = _hidden(route)
    if hidden:  # in any case: percent-encoding's hex digits and a URL's host are echoed in either
        text = _masked(text, re.compile("|".join(map(_spelled, hidden)), re.IGNORECASE))
    if cut:  # what the read cut short ends the text: drop any start of one there
        for one in hidden:
            folded = text.lower()
            text = text[:len(text) - next((n for n in range(len(one) - 1, 0, -1)
                                           if folded.endswith(one[:n].lower())), 0)]
    # Control characters (a terminal's escapes) and invisible ones as spaces, then one line.
    shown = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    if len(shown) > _ANSWER_CHARS or cut:
        shown = shown[:_ANSWER_CHARS] + "…"
    return f"; its answer: {shown}" if shown else ""


def _hidden(route: Route) -> list[str]:
    """What a receiver's answer quoted in the log must not show, longest first (a URL before its path): the
    secrets; the URL's credentials (a password, a user name alone, what follows a name of one, `_names_credential`);
    each part that may be a token (`_token`), named alone ("unknown token …"); and, when it holds any of these, the
    URL (and without its user info when the rest holds one), and its path and query, with and without each other,
    each only when it holds one (Spring's error body names the path alone); each raw and decoded, and with JSON's
    ``\\/`` for ``/``. Not a part that reads as a word (``/hooks/webhooks``), nor the path of words of a URL with a
    user name: masked, they made holes in the receiver's own words, where it named what was wrong."""
    hidden = set(route.secrets())
    whole: set[str] = set()
    # As sent (yarl's normalising: %2F in a query is sent as /) and as written in the configuration.
    for url in (yarl.URL(route.deliver_url or ""), yarl.URL(route.deliver_url or "", encoded=True)):
        pairs = [pair.partition("=")[::2] for pair in url.raw_query_string.split("&")] + list(url.query.items())
        users = [url.raw_password or url.raw_user or "", url.password or url.user or ""]
        if url.user is not None or url.password is not None:  # aiohttp sends them as `Authorization: Basic …`
            users.append(b64encode(f"{url.user or ''}:{url.password or ''}".encode("latin1", "replace")).decode())
        named = [value for name, value in pairs if _names_credential(name)]
        followed = [part for parts in (url.raw_parts, url.parts) for before, part in zip(parts, parts[1:])
                    if _names_credential(before, segment=True)]
        labels = re.split("[.:]", url.raw_host or "")[:1]  # a request bin's token is its host's first label
        path = [*url.raw_parts, *url.parts]
        query = [p for pair in pairs for p in pair]
        hidden |= {c for c in [*users, *named, *followed] if len(c) >= _SHORT_CHARS}
        hidden |= {p for p in [*labels, *path, *query] if _token(p, _TOKEN_CHARS)}
        in_path = any(followed) or any(_token(p, _SHORT_CHARS) for p in path)
        in_query = any(named) or any(_token(p, _SHORT_CHARS) for p in query)
        if in_path or in_query or any(_token(p, _SHORT_CHARS) for p in labels):
            whole |= {route.deliver_url or "", str(url), str(url.with_user(None))}
        if any(users):
            whole |= {route.deliver_url or "", str(url)}
        whole |= {url.raw_path_qs, url.path_qs} if in_path or in_query else set()
        whole |= {url.raw_path, url.path} if in_path else set()
        whole |= {url.raw_query_string, url.query_string} if in_query else set()
    hidden = (hidden | whole) - {"", "/"}
    return sorted(hidden | {h.replace("/", "\\/") for h in hidden}, key=len, reverse=True)


def _names_credential(name: str, segment: bool = False) -> bool:
    """Whether a query parameter's or, ``segment``, a path segment's ``name`` is a credential's (`_CREDENTIAL_ENDS`).
    A segment only when shorter than `_ALWAYS_CHARS` (one that long is masked as a token itself) and, its digits
    (and signs beside them) dropped, it reads as words, is one, or is capitals (``key2``, ``SASToken``, ``HMAC_SIG``):
    a token's letters split as words may end with ``Key`` or ``sig``, and the segment after it was masked."""
    letters = re.sub("[-_.~]*[0-9]+[-_.~]*", "", name)
    if segment and not (len(name) < _ALWAYS_CHARS
                        and (_word(letters) or letters.isupper() or not _NAME_WORDS.search(letters))):
        return False
    return any(word in _CREDENTIAL_WORDS or word.startswith(_CREDENTIAL_STARTS)
               or word.endswith(_CREDENTIAL_ENDS) and word not in _NOT_CREDENTIALS
               for word in map(str.lower, _NAME_WORDS.split(name)))


def _masked(text: str, hidden: re.Pattern[str]) -> str:
    """``text`` with each match of ``hidden`` as ``***``, and the rest of a word it starts or ends inside: shown,
    the rest cut a word of the receiver's and told what was masked ("***ed" of a key ``open``)."""
    spans: list[list[int]] = []
    for match in hidden.finditer(text):
        start, end = match.span()
        while start and text[start].isalnum() and text[start - 1].isalnum():
            start -= 1
        while end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
            end += 1
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    for start, end in reversed(spans):
        text = f"{text[:start]}***{text[end:]}"
    return text


def _spelled(one: str) -> str:
    """A pattern of ``one`` as a receiver may echo it: each character that is no letter or digit also
    percent-encoded (``%2F``) or escaped as JSON may (``\\u002f``: .NET's ``+``, Go's ``&``; ``\\/``), a path
    or URL of short parts otherwise shown whole."""
    return "".join(re.escape(c) if c.isalnum() else "(?:{}|{}|\\\\u{:04x}|\\\\{})".format(
        re.escape(c), "".join(f"%{b:02x}" for b in c.encode()), ord(c), re.escape(c)) for c in one)


def _token(part: str, shortest: int) -> bool:
    """Whether ``part`` of a deliver_url, ``shortest`` characters or more, may be a token: `_ALWAYS_CHARS` or
    more; `_TOKEN_CHARS` or more and not made of `_URL_WORDS` alone; shorter and not `_word` (then it is no secret
    named alone, but the path or URL holding it may be one)."""
    if len(part) < shortest:
        return False
    if len(part) >= _TOKEN_CHARS:
        return len(part) >= _ALWAYS_CHARS or not (
            _word(part) and all(w.lower() in _URL_WORDS for w in _SPLIT_WORDS.split(part)))
    return not _word(part)


def _word(part: str) -> bool:
    """Whether ``part`` reads as words (``webhooks``, ``AlertHook``, ``ops-alerts``: `_WORDS`, not `_UNSPOKEN`). A
    token's digits, mixed case or runs tell it apart, not always: a random one of eight letters and digits passes
    about 1 in 60, one of letters alone as often as not (`_URL_WORDS` decide for a part that long)."""
    return bool(_WORDS.fullmatch(part)) and not _UNSPOKEN.search(part)


def _own_origin(turn_id: str) -> str:
    """A turn's origin where no gateway tells another (an adapter used on its own)."""
    return turn_id


def _only(allowed: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of every other method on a route's path that takes ``allowed``: 405 with ``Allow``, as aiohttp
    answers, but JSON like every other error of the routes (aiohttp's own was a line of plain text). The body is
    not read: the answer depends on the method alone."""
    async def refuse(request: web.Request) -> web.Response:
        response = _error(405, f"method not allowed here; this path takes {allowed}")
        response.headers["Allow"] = allowed
        return response
    return refuse


def _stopping() -> web.Response:
    """A request that came while the gateway is not taking messages (starting, stopping): try again shortly."""
    return web.json_response({"error": STOPPING}, status=503, headers={"Retry-After": str(STOPPING_RETRY_AFTER)})


def _error(status: int, reason: str, *, busy: bool = False, detail: str | None = None) -> web.Response:
    """``{"error": reason}``, and ``"detail"``, what to fix in words, when there is one."""
    body = {"error": reason} if detail is None else {"error": reason, "detail": detail}
    if not busy:
        return web.json_response(body, status=status)
    # The body may be half read (cut off to make room): this connection cannot carry another request.
    response = web.json_response(body, status=status, headers={"Retry-After": str(RETRY_AFTER)})
    response.force_close()
    return response


def _body_payload(request: web.Request, body: bytes) -> str:
    """A POST's signed payload, in words: the bytes the server checked, which a sender may compare with its own."""
    coding = request.headers.get("Content-Encoding", "").strip().lower()
    decoded = f" (once {coding}-decoded)" if coding in ("gzip", "deflate") else ""
    return f"the {len(body)} bytes of the body as received{decoded}"


async def _read_bounded(request: web.Request, limit: int) -> bytes | None:
    """The body, or None as soon as it grows past ``limit``: never reads more than that."""
    chunks: list[bytes] = []
    size = 0  # counted here: Content-Length may be absent (chunked) or lie
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _parse(body: bytes, route: str) -> tuple[str, str | None, str | None]:
    """``(text, chat_id, user)`` from the JSON body sent to ``route``; ValueError naming the problem.
    `SentBack` for one of the route's deliveries: one secret signs both ways, so a delivery someone
    saw (a plain-http ``deliver_url``, a receiver's log) verifies as a request to its own route, and
    the agent's reply would be taken for the caller's message."""
    data = load_json_body(body)
    if not isinstance(data, dict):
        raise ValueError("body must be a JSON object")
    if data.get("route") == route and all(field in data for field in _DELIVERY_FIELDS):
        raise SentBack
    for name in _FILE_FIELDS:
        if _holds_file(data.get(name), name.startswith("attachment")):
            raise ValueError(f'"{name}" cannot be taken: a webhook message carries text only, so the agent would'
                             f' never see it; put what it should read in "text" (at most {MAX_TEXT} characters)')
    # The bound a message typed into the web chat or the terminal has (`MAX_TEXT`): the body's 1 MiB let a caller
    # start a turn on a quarter of a million tokens, more than most models' windows, kept whole in the session.
    text = message_text(data.get("text"))
    _require_scalars("text", text)
    chat = data.get("chat_id")
    if isinstance(chat, bool) or not isinstance(chat, str | int | float | None) or chat in (math.inf, -math.inf):
        raise ValueError('"chat_id" must be a string or a finite number')  # 1e400 parses as inf
    if isinstance(chat, float) and chat.is_integer():
        chat = int(chat)  # 1e2 and 100.0 are the number 100, as is 100: one chat, not "100.0" beside "100"
    chat = None if chat is None else str(chat)
    _require_scalars("chat_id", chat)
    if chat is not None and not 0 < len(chat) <= _MAX_ID:
        raise ValueError(f'"chat_id" must be 1 to {_MAX_ID} characters')
    user = data.get("user")
    if not isinstance(user, str | None) or (user is not None and len(user) > _MAX_ID):
        raise ValueError(f'"user" must be a string of at most {_MAX_ID} characters')
    _require_scalars("user", user)
    return text, chat, user or None


def _holds_file(value: object, may_be_message: bool) -> bool:
    """Whether ``value`` may hold a file: anything but an empty value (which loses nothing) and, in an
    ``attachment(s)`` field, Slack-format message attachments, which are text and were answered for the body's
    ``text`` before files were refused: a sender relaying Slack's format had every alert refused."""
    if value in (None, False, "", [], {}):
        return False
    entries = value if isinstance(value, list) else [value]
    return not (may_be_message and all(isinstance(e, dict) and e.keys() & _MESSAGE_KEYS and not e.keys() & _FILE_KEYS
                                       for e in entries))


def _require_scalars(field: str, value: str | None) -> None:
    # JSON may spell a lone surrogate ("\ud800"), which no UTF-8 store or receiver can hold: the
    # caller made a mistake worth telling it about, rather than a message to repair.
    if value is not None and has_surrogates(value):
        raise ValueError(f'"{field}" is not valid Unicode text: it holds a lone surrogate (\\ud800-\\udfff)')


def _fallback_key(message: Outbound) -> str:
    """A key stable across retries, for the rare message that came without one."""
    basis = f"{message.chat_id}\n{message.turn_id}\n{message.sequence}\n{message.kind}\n{message.text}"
    return hashlib.sha256(basis.encode()).hexdigest()[:32]
