"""discord.py's and aiohttp's errors as `DeliveryError`s, and why a gateway connection ended.

Apart from the adapter (`platforms.discord`) because it is the adapter's one translation point:
every REST call, answer, upload and typing refresh goes through `delivery_error` (`translate`
logs it too: at DEBUG only, a channel's own refusal of a call whose caller says what became of it,
such as the outbox of a part, where a warning here was a second one of one refusal), and
`ended_because` words the end of a connection discord.py gives up on. Logged under
``platforms.discord`` like the rest of the adapter.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import logging
import math
import re
import time
from typing import Any

import aiohttp

from platforms.base import (
    BadRequest,
    DeliveryError,
    EditUnsupported,
    Forbidden,
    MessageTooLong,
    NetworkError,
    NotFound,
    RateLimited,
    Unauthorized,
)
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.repeated_warnings import RepeatedWarnings

log = logging.getLogger("platforms.discord")

PORTAL_HINT = (
    "enable it in the Discord Developer Portal: Applications → your application → Bot → "
    "Privileged Gateway Intents → Message Content Intent"
)
_TOKEN_EXPIRED = 50027
"""401 "Invalid Webhook Token": an interaction token past its 15 minutes is as gone as an unknown one (404)."""
FAILED = "discord: %s for channel %s failed: %s: %s"
DEFAULT_RETRY_AFTER = 1.0
"""Seconds a 429 that says nothing readable of how long to wait is taken to ask for."""
_INTERACTION_TOKEN = re.compile(r"(/(?:webhooks|interactions)/\d+/)[^/?#\s'\"<>]+")
"""An interaction's token in its webhook's or callback's URL, which aiohttp puts in some errors' text (a
connection timeout names the whole URL): it answers as the bot for 15 minutes, so it is masked."""


def ended_because(exc: BaseException | None) -> str:
    """Why the gateway connection ended for good, and what to do, for `ConnectionWatch.down`."""
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        return f"the Discord gateway refused the Message Content intent (close code 4014); {PORTAL_HINT}, then restart"
    if isinstance(exc, discord.ConnectionClosed):
        if exc.code == 4004:
            return ("the Discord gateway refused the bot token (close code 4004, authentication failed): it was reset;"
                    " set platforms.discord.token to the new token and restart")
        return (f"the Discord gateway closed the connection with code {exc.code}, after which discord.py does not"
                " reconnect (4010-4013: bad shard or intents settings); restart once the cause is fixed")
    if exc is None:
        return "the Discord gateway connection ended; restart to connect again"
    return f"the Discord gateway connection ended: {type(exc).__name__}; restart to connect again"


_SHARED = RepeatedWarnings(log)
"""Failures every channel shares (Discord down or unreachable, a rate limit): one warning for an
outage, not one per call of every channel retrying through it. Process-wide, as Discord is."""


def translate(exc: BaseException, *, route: str, chat_id: str, caller_logs: bool = False) -> DeliveryError:
    """`delivery_error`, logged (a refused token is said once where it is noticed, not here; a failure
    every channel shares, once per cause: `_SHARED`). ``caller_logs``: the caller logs what becomes of
    the call, so a channel's own refusal is logged at DEBUG here."""
    error = delivery_error(exc, route=route, chat_id=chat_id)
    if error is exc or isinstance(error, Unauthorized):
        return error
    line = (FAILED, route, chat_id, type(error).__name__, error)
    if isinstance(error, NetworkError | RateLimited):
        _SHARED.warning(type(error).__name__, *line)
    elif caller_logs:
        log.debug(*line)
    else:
        log.warning(*line)
    return error


def delivery_error(exc: BaseException, *, route: str, chat_id: str) -> DeliveryError:
    """The one place where discord.py and aiohttp errors become `DeliveryError`s."""
    if isinstance(exc, DeliveryError):
        return exc
    kw: dict[str, Any] = {"method": route, "chat_id": chat_id, "platform": "discord"}
    error: DeliveryError
    if isinstance(exc, discord.RateLimited):
        error = RateLimited(f"rate limited for {exc.retry_after:.1f}s", retry_after=exc.retry_after, **kw)
    elif isinstance(exc, discord.HTTPException):
        detail = f"{exc.status} (code {exc.code}): {exc.text}"
        if exc.status == 429:
            error = RateLimited(detail, retry_after=retry_after_of(exc.response), **kw)
        elif exc.code == 50035 and "fewer in length" in exc.text:
            error = MessageTooLong(detail, **kw)
        elif exc.code == 50005:
            error = EditUnsupported(detail, **kw)
        elif exc.status == 401 and exc.code != _TOKEN_EXPIRED:
            # The bot token, in every channel (403 is one channel's refusal). Said once where it is
            # noticed (the outbox's hold), not on every call made while it lasts.
            log.debug("discord: %s for channel %s: the token was refused: %s", route, chat_id, detail)
            return Unauthorized(detail, **kw)
        elif isinstance(exc, discord.Forbidden):
            error = Forbidden(detail, **kw)
        elif isinstance(exc, discord.NotFound) or (exc.status == 401 and exc.code == _TOKEN_EXPIRED):
            error = NotFound(detail, **kw)
        elif exc.status >= 500:
            error = NetworkError(detail, **kw)
        else:
            error = BadRequest(detail, **kw)
    elif isinstance(exc, (aiohttp.ClientError, OSError, asyncio.TimeoutError, discord.ConnectionClosed)):
        error = NetworkError(_described(exc), **kw)
    elif isinstance(exc, json.JSONDecodeError):
        # An answer labelled application/json that is none (a proxy's 502 page, a body cut short, an empty
        # 5xx): discord.py parses it before it looks at the status, so this is all that is left of it.
        # Nothing says Discord refused the call, nor that it did not carry it out: taken for a bad request,
        # the part was dropped; the outbox tries it again, looking for it first.
        error = NetworkError(f"an answer that is no JSON, though labelled so: {_described(exc)}", **kw)
    else:
        error = BadRequest(_described(exc), **kw)
    return error


def retry_after_of(response: Any) -> float:
    """The wait a 429 discord.py did not retry asks for: its ``Retry-After`` (seconds or an HTTP-date), else
    the ``retry_after`` of Discord's JSON body (read already), else `DEFAULT_RETRY_AFTER`. Such a 429 has no
    ``Via``, or a body discord.py cannot read (`platforms.discord_answers`): Cloudflare's or a proxy's, whose
    header may be a date or anything at all, which read as a number crashed the translation of the error
    itself (ValueError) instead of reporting it rate limited."""
    header = getattr(response, "headers", {}).get("Retry-After")
    wait = _header_seconds(header) if header is not None else None
    if wait is None:
        # discord.py keeps only the message and code of the body it read; aiohttp keeps the bytes.
        body = getattr(response, "_body", None)
        try:
            wait = _seconds(json.loads(body)["retry_after"]) if isinstance(body, bytes) else None
        except (ValueError, LookupError, TypeError):
            wait = None
    return DEFAULT_RETRY_AFTER if wait is None else wait


def _header_seconds(header: str) -> float | None:
    if (wait := _seconds(header)) is not None:
        return wait
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (ValueError, TypeError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": UTC all the same, not this machine's local time
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(when.timestamp() - time.time(), 0.0)  # a date already past asks for no wait


def _seconds(value: object) -> float | None:
    """A wait in seconds, or None for what is none (text, NaN, infinite, negative)."""
    try:
        wait = float(value)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        return None
    return wait if math.isfinite(wait) and wait >= 0 else None


def _described(exc: BaseException) -> str:
    return _INTERACTION_TOKEN.sub(r"\1***", f"{type(exc).__name__}: {exc}")
