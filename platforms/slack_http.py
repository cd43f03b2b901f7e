"""Slack's HTTP Events API endpoint: the signed requests Slack posts to `EVENTS_PATH`.

Apart from the adapter (`platforms.slack`) because it is HTTP mode's own edge: the checks a
request passes before bolt sees it (headers, size, signature), the bound on bodies read
before their signature is known, and the one request bolt has no listener for
(`_rate_limited`). Socket Mode never comes here. Logged under ``platforms.slack``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier

from platforms.unsigned_bodies import RETRY_AFTER, Busy, UnsignedBodies, refuse_before_continue

log = logging.getLogger("platforms.slack")

EVENTS_PATH = "/slack/events"
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_HEADER = "X-Slack-Signature"
SIGNATURE_WINDOW = 300
"""Seconds a request's timestamp may be off, either way (slack-sdk's `SignatureVerifier`)."""
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")


class SignedEvents:
    """Serves `EVENTS_PATH` for the bolt app ``app()`` returns (None until the adapter has
    started, or once it stopped: then every request is answered 503)."""

    def __init__(self, signing_secret: str | None, bodies: UnsignedBodies,
                 app: Callable[[], AsyncApp | None]) -> None:
        self._verifier = SignatureVerifier(signing_secret) if signing_secret else None
        self._bodies = bodies
        self._app = app

    def routes(self) -> Sequence[Any]:
        return [web.post(EVENTS_PATH, self._handle_http, expect_handler=refuse_before_continue(self._early))]

    async def _handle_http(self, request: web.Request) -> web.Response:
        """Events, slash commands and url_verification over HTTP. bolt checks the v0 signature
        (HMAC-SHA256, 5-minute window; 401 on failure) and answers url_verification.

        A request whose headers no body could make valid (no signature or timestamp, either
        malformed, the timestamp out of the window) or whose ``Content-Length`` is over the
        server's limit is refused before its body is read; the rest are read and checked
        through `UnsignedBodies` (503 with ``Retry-After`` when too many are, which Slack retries)."""
        if (refusal := self._early(request)) is not None:
            return refusal
        # Dispatched to this app even should the adapter stop while the body is read: its listeners
        # then turn the request away as a stop does (a message unacknowledged, a command answered).
        app = self._app()
        assert app is not None
        timestamp, signature = request.headers.get(TIMESTAMP_HEADER), request.headers.get(SIGNATURE_HEADER)
        try:
            signed = await self._bodies.check(request, lambda: self._signed(request, timestamp, signature))
        except Busy:
            log.info("slack %s: answered 503, too many unverified bodies at once", EVENTS_PATH)
            busy = web.json_response({"error": "busy"}, status=503, headers={"Retry-After": str(RETRY_AFTER)})
            busy.force_close()  # its body may be half read
            return busy
        except ConnectionResetError:  # its sender hung up mid-body: aiohttp logged each at ERROR, with a traceback
            return web.Response(status=400, text="body cut short")  # to no one
        if not signed:
            return web.json_response({"error": "invalid request"}, status=401)
        if (limited := await _rate_limited(request)) is not None:
            return limited
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    def _early(self, request: web.Request) -> web.Response | None:
        """What no body could make valid, refused before a byte of it is read (or asked for)."""
        if self._app() is None or self._verifier is None:
            return web.Response(status=503, text="slack adapter not started")
        if not self._plausible(request.headers.get(TIMESTAMP_HEADER), request.headers.get(SIGNATURE_HEADER)):
            return web.json_response({"error": "invalid request"}, status=401)
        if request.content_length is not None and request.content_length > request.client_max_size:
            return web.json_response({"error": f"body over {request.client_max_size} bytes"}, status=413)
        return None

    def _plausible(self, timestamp: str | None, signature: str | None) -> bool:
        """Whether some body could pass the verifier with these headers: it wants ``v0=`` and 64
        lower-case hex digits, and a timestamp ``int()`` reads within 5 minutes of its clock."""
        assert self._verifier is not None
        if timestamp is None or signature is None or not _SIGNATURE.fullmatch(signature):
            return False
        try:
            sent = int(timestamp)
        except ValueError:
            return False
        return abs(self._verifier.clock.now() - sent) <= SIGNATURE_WINDOW

    async def _signed(self, request: web.Request, timestamp: str | None, signature: str | None) -> bool:
        # bolt parses the body before it checks the signature, and fails with a 500 and a traceback
        # on one that is not a JSON object or form (or on a timestamp that is not a number). The
        # verifier's own check raises too: ValueError for a body that is not UTF-8 or such a
        # timestamp, TypeError (from hmac.compare_digest) for a signature that is not ASCII;
        # reading the body as text raises LookupError for a charset Python does not know.
        assert self._verifier is not None
        try:
            return self._verifier.is_valid(await request.text(), timestamp, signature)
        except (ValueError, TypeError, LookupError):
            return False


async def _rate_limited(request: web.Request) -> web.Response | None:
    """Slack's notice that it drops this app's events (over 30,000 an hour from one workspace), if
    ``request`` is that: bolt has no listener for it and answered 404, which Slack counts against the
    app (under 95% of deliveries answered 200 gets its subscriptions disabled), and logged only
    "Unhandled request". Answered 200 and told in a warning: the messages dropped meanwhile may never
    reach the gateway."""
    text = await request.text()  # the text the signature was checked on, kept by aiohttp
    if request.content_type != "application/json" or "app_rate_limited" not in text:
        return None  # every other request's body parsed once, by bolt
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return None  # bolt's to refuse
    if not (isinstance(body, dict) and body.get("type") == "app_rate_limited"):
        return None
    minute = body.get("minute_rate_limited")
    readable = isinstance(minute, int) and 0 < minute < 10**11  # time.gmtime's range
    since = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(minute)) if readable else "now"
    log.warning("slack: Slack is rate limiting this app's events for workspace %s since %s (over 30,000 an hour): "
                "the messages it drops meanwhile may never reach the gateway", body.get("team_id"), since)
    return web.json_response({})
