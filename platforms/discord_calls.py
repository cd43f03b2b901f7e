"""How long each REST call to Discord is given.

discord.py opens its HTTP session without a timeout, so every call had aiohttp's 300 s: a Discord (or a proxy)
that took a post, an edit of a progress card, a typing refresh, a catch-up's read or the command sync at start
and never answered held it, and the chat behind it, for 5 minutes (Telegram's calls have 60 s, Slack's 30 s).
`HTTPClient.request` hands its keyword arguments on to aiohttp's request, so `bound` gives each request there a
``timeout``: `CALL_TIMEOUT` seconds, and an upload a second more for every `SLOWEST_UPLOAD` bytes of its files, as
Slack's are given. Each of discord.py's tries is bounded alone (it tries again after a 5xx, not after a timeout);
its waits for a rate limit are no request, and keep their own cap (`discord_answers.MAX_RATE_LIMIT_WAIT`). The
gateway's WebSocket goes by discord.py's ``ws_connect``, never cut by this. Answers to slash commands go through a
session of the adapter's own, given the same bound whole (`discord_answers.open_session`).

A call past its bound is a `TimeoutError` naming it, a `NetworkError` once translated (`platforms.discord_errors`):
the outbox tries it again as after any outage, looking first for a post whose answer was lost
(`platforms.discord_sent`), which a channel post's nonce also keeps Discord from posting twice.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import aiohttp

from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning

CALL_TIMEOUT = 30.0
"""Seconds each REST call is given (an upload more, `SLOWEST_UPLOAD`)."""
SLOWEST_UPLOAD = 50_000
"""Bytes a second an upload is given time for on top of `CALL_TIMEOUT`, as on Slack: the 10 MiB a guild without
boosts takes have about 3.5 minutes more, at 400 kbit/s."""


def bound(http: discord.http.HTTPClient, seconds: float) -> None:
    """Give each request ``http`` makes ``seconds``, plus its files' time at `SLOWEST_UPLOAD`."""
    request = http.request

    async def bounded(route: discord.http.Route, *, files: Sequence[discord.File] | None = None,
                      **kwargs: Any) -> Any:
        limit = seconds + sum(_size(f) for f in files or ()) / SLOWEST_UPLOAD
        try:
            return await request(route, files=files, timeout=aiohttp.ClientTimeout(total=limit), **kwargs)
        except TimeoutError as exc:
            raise no_answer(limit) from exc

    http.request = bounded  # type: ignore[method-assign]


def _size(file: discord.File) -> int:
    """The bytes of ``file``; 0 for one with no file behind it (a buffer: counted as the call's own)."""
    try:
        return os.fstat(file.fp.fileno()).st_size
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return 0


def no_answer(seconds: float) -> TimeoutError:
    """A call past its bound, in words: aiohttp's error says nothing (``TimeoutError()``)."""
    return TimeoutError(f"no answer from the Discord API within {seconds:g}s")
