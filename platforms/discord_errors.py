"""discord.py's and aiohttp's errors as `DeliveryError`s, and why a gateway connection ended.

Apart from the adapter (`platforms.discord`) because it is the adapter's one translation point:
every REST call, answer, upload and typing refresh goes through `delivery_error` (`translate`
logs it too: at DEBUG only, a channel's own refusal of a call whose caller says what became of it,
such as the outbox of a part, where a warning here was a second one of one refusal), and
`ended_because` words the end of a connection discord.py gives up on. Logged under
``platforms.discord`` like the rest of the adapter.

A 2xx answer discord.py cannot build its message of (JSON that is no message: ``{}``, a list, a string, from
a proxy in between or an API that changed) made it raise ``KeyError``/``TypeError``, which was taken for a
bad request: a post dropped though whatever answered said it was made, an edit sent anew beside the message
it had changed. The call's answer is watched (`answered`, `watch_answers`): one naming the message's id is a
post made (`Answer.message_id`); any other is a `NetworkError`, whether it was carried out unknown, as for a
5xx: the outbox looks for a post by its nonce before it sends it again, and makes an edit again, which
changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import re
from collections.abc import Iterator
from types import SimpleNamespace
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
from platforms.retry_after import header_seconds, seconds

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
BAN_RETRY_AFTER = 300.0
"""Seconds a 429 without Discord's ``Via`` whose body is no JSON (Cloudflare's page, "error code: 1015") and that
names no ``Retry-After`` is taken to ask for: Cloudflare bans the bot's address for too many refused calls (10,000
answered 401, 403 or 429 in 10 minutes, Discord's docs), for about an hour, and every call meanwhile is one more
refused. Taken for a second's wait, each chat's reply was tried again every second and kept the ban up; the outbox
holds a chat no longer than its ``delivery.max_retry_after`` all the same."""
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


class Answer:
    """The answer to the last request made within `answered`: its status, and its body when a 2xx."""

    __slots__ = ("status", "body")

    def __init__(self) -> None:
        self.status: int | None = None
        self.body = b""

    @property
    def done(self) -> bool:
        """Whether the request was answered with a 2xx: whatever answered says it was carried out."""
        return self.status is not None and 200 <= self.status < 300

    def message_id(self) -> int | None:
        """The message's id a 2xx answer names (``{"id": "<snowflake>", ...}``), however little else of it
        discord.py could read; None for any other answer."""
        if not self.done:
            return None
        try:
            data = json.loads(self.body)
        except ValueError:
            return None
        value = data.get("id") if isinstance(data, dict) else None
        if isinstance(value, str) and value.isascii() and value.isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        return value if 0 < value < 2**64 else None


_ANSWER: contextvars.ContextVar[Answer | None] = contextvars.ContextVar("discord_answer", default=None)


@contextlib.contextmanager
def answered() -> Iterator[Answer]:
    """Watch the answers to the requests this task makes within: the `Answer` holds the last one's. The
    requests go out through a session `watch_answers` was given to (the client's, the webhooks')."""
    answer = Answer()
    token = _ANSWER.set(answer)
    try:
        yield answer
    finally:
        _ANSWER.reset(token)


def watch_answers(trace: aiohttp.TraceConfig) -> None:
    """Note each answer of a request made within `answered` (aiohttp runs tracing in the requesting task)."""
    trace.on_request_start.append(_request_started)
    trace.on_request_end.append(_request_answered)


async def _request_started(_: aiohttp.ClientSession, __: SimpleNamespace, ___: Any) -> None:
    if (answer := _ANSWER.get()) is not None:  # a retry, or the next call: only the last answer counts
        answer.status, answer.body = None, b""


async def _request_answered(_: aiohttp.ClientSession, __: SimpleNamespace,
                            params: aiohttp.TraceRequestEndParams) -> None:
    if (answer := _ANSWER.get()) is None:
        return
    response = params.response
    if 200 <= response.status < 300:
        answer.body = await response.read()  # kept by aiohttp for discord.py, which reads it next
    answer.status = response.status


def translate(exc: BaseException, *, route: str, chat_id: str, caller_logs: bool = False,
              answer: Answer | None = None) -> DeliveryError:
    """`delivery_error`, logged (a refused token is said once where it is noticed, not here; a failure
    every channel shares, once per cause: `_SHARED`). ``caller_logs``: the caller logs what becomes of
    the call, so a channel's own refusal is logged at DEBUG here. ``answer``: the call's (`answered`)."""
    error = delivery_error(exc, route=route, chat_id=chat_id, answer=answer)
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


def made_all_the_same(exc: BaseException, answer: Answer, *, route: str, chat_id: str) -> int | None:
    """The id of the message a call made, whose 2xx answer discord.py could not read beyond it (``exc``),
    logged as taken for sent; None when the answer names none (`translate` it then)."""
    made = answer.message_id()
    if made is not None and not isinstance(exc, discord.DiscordException):
        _SHARED.warning(("unread answer", route), "discord: %s for channel %s: message %s was made, but discord.py"
                        " cannot read the rest of the answer (%s); taken as sent", route, chat_id, made,
                        described(exc))
        return made
    return None


def delivery_error(exc: BaseException, *, route: str, chat_id: str, answer: Answer | None = None) -> DeliveryError:
    """The one place where discord.py and aiohttp errors become `DeliveryError`s. ``answer``: the call's
    (`answered`): raised after a 2xx, ``exc`` is discord.py failing to read it (see the module's docstring)."""
    if isinstance(exc, DeliveryError):
        return exc
    kw: dict[str, Any] = {"method": route, "chat_id": chat_id, "platform": "discord"}
    error: DeliveryError
    if answer is not None and answer.done and not isinstance(exc, discord.DiscordException | json.JSONDecodeError):
        error = NetworkError(f"answered {answer.status} with what discord.py cannot read as a message "
                             f"({described(exc)}): whether it was carried out is not known", **kw)
    elif isinstance(exc, discord.RateLimited):
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
        error = NetworkError(described(exc), **kw)
    elif isinstance(exc, json.JSONDecodeError):
        # An answer labelled application/json that is none (a proxy's 502 page, a body cut short, an empty
        # 5xx): discord.py parses it before it looks at the status, so this is all that is left of it.
        # Nothing says Discord refused the call, nor that it did not carry it out: taken for a bad request,
        # the part was dropped; the outbox tries it again, looking for it first.
        error = NetworkError(f"an answer that is no JSON, though labelled so: {described(exc)}", **kw)
    else:
        error = BadRequest(described(exc), **kw)
    return error


def retry_after_of(response: Any) -> float:
    """The wait a 429 discord.py did not retry asks for: its ``Retry-After`` (seconds or an HTTP-date), else
    the ``retry_after`` of Discord's JSON body (read already), else `DEFAULT_RETRY_AFTER` (`BAN_RETRY_AFTER` for a
    page that is no JSON without a ``Via``: Cloudflare's ban). Such a 429 has no
    ``Via``, or a body discord.py cannot read (`platforms.discord_answers`): Cloudflare's or a proxy's, whose
    header may be a date or anything at all, which read as a number crashed the translation of the error
    itself (ValueError) instead of reporting it rate limited."""
    header = getattr(response, "headers", {}).get("Retry-After")
    wait = header_seconds(header) if header is not None else None
    if wait is None:
        # discord.py keeps only the message and code of the body it read; aiohttp keeps the bytes.
        body = getattr(response, "_body", None)
        try:
            data = json.loads(body) if isinstance(body, bytes) else None
        except ValueError:  # a page: Cloudflare's ban, unless a proxy in between (which adds a Via) sent it
            return DEFAULT_RETRY_AFTER if getattr(response, "headers", {}).get("Via") else BAN_RETRY_AFTER
        try:
            wait = seconds(data["retry_after"]) if data is not None else None
        except (LookupError, TypeError):
            wait = None
    return DEFAULT_RETRY_AFTER if wait is None else wait


def described(exc: BaseException) -> str:
    return _INTERACTION_TOKEN.sub(r"\1***", f"{type(exc).__name__}: {exc}")
