"""The HTTP session that answers slash commands (interaction follow-ups and edits).

discord.py sends these through its webhook adapter, which sleeps out a 429's
``retry_after`` however long it is: `discord.Client`'s ``max_ratelimit_timeout`` does
not reach it. One answer told to wait an hour would hold its chat in the outbox for
that hour. This session, handed to `discord.Webhook.partial` (its public ``session``
parameter), refuses a rate-limit wait longer than `MAX_RATE_LIMIT_WAIT` by raising
`discord.RateLimited`, as discord.py's own HTTP client does for every other call, so the
outbox waits and retries instead. Shorter waits are left to discord.py to sleep out.
"""

from __future__ import annotations

import aiohttp

from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning

MAX_RATE_LIMIT_WAIT = 30.0
"""Seconds discord.py may sleep on a 429 before the call fails as rate limited (its minimum)."""


def open_session() -> aiohttp.ClientSession:
    """A session for `discord.Webhook`s; the caller closes it."""
    return aiohttp.ClientSession(middlewares=(_refuse_long_waits,), cookie_jar=aiohttp.DummyCookieJar())


async def _refuse_long_waits(request: aiohttp.ClientRequest,
                             handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
    response = await handler(request)
    # Only the 429s discord.py would sleep on: from Discord itself (Via), with a JSON retry_after.
    if response.status != 429 or not response.headers.get("Via"):
        return response
    try:
        retry_after = float((await response.json(content_type=None))["retry_after"])
    except (ValueError, LookupError, TypeError):
        return response  # not Discord's shape: discord.py reports it as it is
    if retry_after > MAX_RATE_LIMIT_WAIT:
        raise discord.RateLimited(retry_after)
    return response
