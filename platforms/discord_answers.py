"""Rate-limit waits on answers to slash commands, held to what the gateway can afford.

discord.py sends answers through its webhook adapter, which sleeps out a 429's
``retry_after`` however long it is: `discord.Client`'s ``max_ratelimit_timeout`` does
not reach it.

- Follow-ups and edits: one answer told to wait an hour would hold its chat in the
  outbox for that hour. The session `open_session` makes, handed to
  `discord.Webhook.partial` (its public ``session`` parameter), refuses a wait longer
  than `MAX_RATE_LIMIT_WAIT` by raising `discord.RateLimited`, as discord.py's own HTTP
  client does for every other call, so the outbox waits and retries instead.
- The first response ("thinking…"): discord.py sends it on the client's own session,
  and the command reaches the gateway only once it is made. Discord gives it
  `INTERACTION_WINDOW` seconds, so a wait past that could only end in "Unknown
  interaction". `callback_trace`, given to the client (its public ``http_trace``),
  refuses such a wait at once with `discord.RateLimited`; the adapter then hands the
  command over without its interaction, and its answer goes to the channel.

Shorter waits are left to discord.py to sleep out. A 429 with a ``Via`` header (a proxy in between adds
one) whose body holds no ``retry_after`` discord.py can sleep on (a proxy's or Cloudflare's text page, JSON
of another shape, a wait that is no number of seconds) crashed discord.py's webhook code (``TypeError:
string indices must be integers``, ``KeyError``), which the adapter reported as a bad request: the answer
was dropped. The session raises `discord.RateLimited` for it instead, for the wait its ``Retry-After`` asks,
else a second (`discord_errors.retry_after_of`); the outbox holds it within its own cap. discord.py's own
HTTP client (channel posts and edits, a command's "thinking…") crashed the same way on such JSON (``KeyError:
'retry_after'``), and the part was dropped as a bad request: `callback_trace` raises `discord.RateLimited` for
it too (`_refuse_unreadable_waits`).

A follow-up (``POST /webhooks/{application id}/{token}``) answered with a 5xx is not posted again by
discord.py either, which would do so up to five times: Discord may have stored it all the same
(a follow-up carries no nonce, so nothing drops the second copy), and the user saw the answer twice or
three times. `_fail_unsure_follow_ups`, in the same session, raises `discord.DiscordServerError` out of
the request instead, which the adapter reports as a `NetworkError` (its answer lost): the outbox looks
for the follow-up before it sends it again (`platforms.discord_sent`). An edit of the first answer
(``@original``) is retried as discord.py does: the same edit again changes nothing. Each request on the session is
given `discord_calls.CALL_TIMEOUT` seconds, not aiohttp's 300: one Discord never answers is a `NetworkError` then,
a follow-up among them looked for in the same way.
"""

from __future__ import annotations

import functools
import json
import math
import re
from types import SimpleNamespace
from typing import Any

import aiohttp

from platforms.discord_calls import CALL_TIMEOUT, no_answer
from platforms.discord_errors import retry_after_of, watch_answers
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.proxies import proxy_for

MAX_RATE_LIMIT_WAIT = 30.0
"""Seconds discord.py may sleep on a 429 before the call fails as rate limited (its minimum)."""
INTERACTION_WINDOW = 3.0
"""Seconds Discord waits for an interaction's first response before the interaction is gone."""
_CALLBACK = re.compile(r"/interactions/\d+/[^/]+/callback")
_FOLLOW_UP = re.compile(r"/webhooks/\d+/[^/]+$")


def open_session(timeout: float = CALL_TIMEOUT) -> aiohttp.ClientSession:
    """A session for `discord.Webhook`s, its answers watched (`discord_errors.answered`), through the proxy the
    environment names for the REST base `discord_urls.claim` set (`platforms.proxies`), each request given
    ``timeout`` seconds (`platforms.discord_calls`); the caller closes it."""
    trace = aiohttp.TraceConfig()
    watch_answers(trace)
    # Every webhook call's URL is built on Route.BASE: behind an egress proxy, a command got "thinking…" (the
    # client's session, proxied) and never its answer.
    return aiohttp.ClientSession(middlewares=(functools.partial(_worded_timeout, timeout), _refuse_long_waits,
                                              _fail_unsure_follow_ups),
                                 cookie_jar=aiohttp.DummyCookieJar(), trace_configs=[trace],
                                 proxy=proxy_for(discord.http.Route.BASE),
                                 timeout=aiohttp.ClientTimeout(total=timeout))


def callback_trace() -> aiohttp.TraceConfig:
    """Tracing for `discord.Client` (``http_trace``) that fails an interaction's first response
    as `discord.RateLimited` when Discord asks it to wait `INTERACTION_WINDOW` seconds or more, and
    any call whose 429 is JSON discord.py cannot sleep on (`_refuse_unreadable_waits`)."""
    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(_refuse_unreadable_waits)
    trace.on_request_end.append(_refuse_hopeless_callback_waits)
    return trace


async def _worded_timeout(timeout: float, request: aiohttp.ClientRequest,
                          handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    try:
        return await handler(request)
    except TimeoutError as exc:  # no answer within the session's bound
        raise no_answer(timeout) from exc


async def _refuse_long_waits(request: aiohttp.ClientRequest,
                             handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    response = await handler(request)
    if response.status != 429 or not response.headers.get("Via"):
        return response  # discord.py reports it as it is
    retry_after = await _wait_asked(response)
    if retry_after is None:  # nothing discord.py could sleep on
        await response.read()  # kept by aiohttp, for the body's own wait when there is no header
        raise discord.RateLimited(retry_after_of(response))
    if retry_after > MAX_RATE_LIMIT_WAIT:
        raise discord.RateLimited(retry_after)
    return response


async def _fail_unsure_follow_ups(request: aiohttp.ClientRequest,
                                  handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    response = await handler(request)
    if response.status >= 500 and request.method == "POST" and _FOLLOW_UP.search(request.url.path):
        # Read whole, so the connection is free again; raised here, the error leaves discord.py's retry loop.
        text = await response.text(errors="replace")
        try:
            data: Any = json.loads(text)
        except ValueError:
            data = text
        raise discord.DiscordServerError(response, data)
    return response


async def _refuse_unreadable_waits(_: aiohttp.ClientSession, __: SimpleNamespace,
                                   params: aiohttp.TraceRequestEndParams) -> None:
    """A 429 with a ``Via`` header and a JSON body (``application/json``: discord.py parses it) holding no
    ``retry_after`` of seconds: a proxy's or Cloudflare's JSON, or one of another shape. discord.py's
    `HTTPClient.request` indexed it and crashed (``KeyError: 'retry_after'``, or a TypeError comparing a
    text wait), which the adapter reported as a bad request: a channel post or edit was dropped, never
    sent again, and a command's "thinking…" was taken for one Discord may have accepted. Raised here as
    `discord.RateLimited` for the wait its ``Retry-After`` asks, else a second (`discord_errors.retry_after_of`),
    it leaves discord.py's retry loop (which catches only connection resets) and the outbox waits it out.
    A text body is left to discord.py, which raises `discord.HTTPException` for it, read the same way."""
    response = params.response
    if response.status != 429 or not response.headers.get("Via"):
        return
    if response.headers.get("Content-Type") != "application/json":
        return
    if await _wait_asked(response) is None:
        raise discord.RateLimited(retry_after_of(response))  # its body read already, by `_wait_asked`


async def _refuse_hopeless_callback_waits(_: aiohttp.ClientSession, __: SimpleNamespace,
                                          params: aiohttp.TraceRequestEndParams) -> None:
    # Raised here, the error leaves the request (aiohttp closes the response) and discord.py's
    # retry loop, which catches only connection resets.
    if params.method != "POST" or not _CALLBACK.search(params.url.path):
        return
    retry_after = await _wait_asked(params.response)
    if retry_after is not None and retry_after >= INTERACTION_WINDOW:
        raise discord.RateLimited(retry_after)


async def _wait_asked(response: aiohttp.ClientResponse) -> float | None:
    """The wait a 429 that discord.py would sleep on asks for: from Discord itself (Via), with a
    JSON ``retry_after`` of seconds (as discord.py reads it: ``application/json`` exactly); None for
    anything else."""
    if response.status != 429 or not response.headers.get("Via"):
        return None
    if response.headers.get("Content-Type") != "application/json":
        return None  # discord.py reads it as text, and crashes indexing it
    try:
        wait = (await response.json(content_type=None))["retry_after"]
    except (ValueError, LookupError, TypeError):
        return None
    if isinstance(wait, bool) or not isinstance(wait, int | float):
        return None  # "5" included: discord.py would crash sleeping on it
    return float(wait) if math.isfinite(wait) and wait >= 0 else None
