"""Whether Discord still takes the bot token, from what it answers the bot's REST calls.

A token reset in the Developer Portal is refused at once by REST (``401 Unauthorized``), while
the gateway connection opened with it may stay up until its next IDENTIFY or RESUME (then 4004).
Meanwhile every reply is held (`platforms.base.Unauthorized`), so Discord must show ``down``.

discord.py's REST calls are many (sends, edits, deletions, typing, fetches, command sync) and
each translates its errors itself, so the token is watched where all of them pass: the client's
aiohttp tracing (``http_trace``), which sees every answer, refusals and successes alike. Calls
without the bot token (interaction callbacks and follow-ups, on their own tokens) are not its
concern: their 401 (an interaction token past its 15 minutes) says nothing about the bot token.
"""

from __future__ import annotations

from types import SimpleNamespace

import aiohttp

from platforms.connection import TokenWatch

TOKEN_FIX = "it was reset in the Developer Portal; set platforms.discord.token to the new token and restart"


def token_watch() -> TokenWatch:
    return TokenWatch("discord", "Discord", TOKEN_FIX)


def watch_answers(trace: aiohttp.TraceConfig, watch: TokenWatch) -> None:
    """Have ``trace``, the client's ``http_trace``, tell ``watch`` what Discord answers each call made
    with the bot token: 401 refuses it; any other answer but a 429 or a 5xx (which may come before
    the token is read) takes it."""

    async def answered(_: aiohttp.ClientSession, __: SimpleNamespace, params: aiohttp.TraceRequestEndParams) -> None:
        if "Authorization" not in params.headers:
            return
        status = params.response.status
        if status == 401:
            watch.refused(f"a REST call ({params.method}) answered 401 Unauthorized")
        elif status < 500 and status != 429:
            watch.accepted()

    trace.on_request_end.append(answered)
