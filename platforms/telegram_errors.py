"""aiogram's errors as `DeliveryError`s: the one translation point of the Telegram adapter.

Apart from the adapter (`platforms.telegram`) because every Bot API call goes through it
(`platforms.telegram_calls` logs what it returns), and because a refused write to a group upgraded to a
supergroup is not a failure but `GroupUpgraded`, which `platforms.telegram_supergroups` acts on.
Logged under ``platforms.telegram`` like the rest of the adapter.

aiogram reads every answer as the Bot API's JSON, whatever its status, and raises `ClientDecodeError`,
which carries no status, for one it cannot read. That tells apart neither a refusal of a server in
front of the Bot API (a proxy's 403 page, nginx's 413 for an upload over its ``client_max_body_size``)
from an outage, nor a call Telegram made whose answer aiogram cannot read (a newer Bot API's) from one
it never got: all were a `NetworkError` reading "Failed to decode object", tried again for up to an
hour, an upload too large for the server in front uploaded again each time, the message made shown
again each time. `BotApiSession`, the session the adapter's
``Bot`` uses, keeps the status: `NotTheBotApi` for the first, `UnreadAnswer` for the second. Any other answer
that is not the Bot API's JSON (a proxy's 502 page, a 200 page of a captive portal, a body cut short) is a
`NotBotApiJson` naming the method and the status: "Failed to decode object" told an operator
whose start failed at ``getMe`` nothing of what answered.
"""

from __future__ import annotations

import html
import logging
import re
from http import HTTPStatus
from typing import Any, get_args

import aiohttp
from aiogram import Bot
from aiogram.__meta__ import __version__ as aiogram_version
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramAPIError,
    TelegramEntityTooLarge,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)
from aiogram.methods import TelegramMethod
from aiogram.methods.base import Response, TelegramType
from aiogram.types import Message

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
from platforms.proxies import proxy_for, proxy_refusal

log = logging.getLogger("platforms.telegram")

TRY_AGAIN_4XX = frozenset({HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.TOO_MANY_REQUESTS})
"""4xx statuses of a server in between that are worth another try: its timeout, its rate limit."""
EXCERPT = 200
"""Characters of a page's text kept in the error (a page may be any length)."""
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_SAYS_DONE = re.compile(r'\s*\{\s*"ok"\s*:\s*true\b')
"""How Telegram's answer to a call it made begins: a body that does so, cut short after it, says the call was done."""


class NotTheBotApi(TelegramAPIError):
    """A 4xx answer (``status``) that is not the Bot API's JSON: a server in front of it (a proxy, the web
    server of a self-hosted Bot API server) refused the call, which did not reach Telegram (but a 408 or
    a 429, left a `ClientDecodeError`). Its status and page are kept for the error's words (`translate`)."""

    label = "Not the Bot API"

    def __init__(self, method: TelegramMethod[Any], message: str, status: int) -> None:
        super().__init__(method=method, message=message)
        self.status = status


class UnreadAnswer(ClientDecodeError):
    """Telegram answered ``method`` done (a 2xx, ``ok``), with a result aiogram cannot read: a field it
    requires left out or of another kind (a newer Bot API, a self-hosted server keeping to it loosely),
    no result at all, or a body cut short after its ``{"ok": true`` (a proxy in between).
    A `ClientDecodeError` still, so what reads such answers as far as it can
    (`platforms.telegram_updates`) still does."""

    def __init__(self, decode: ClientDecodeError, method: TelegramMethod[Any]) -> None:
        super().__init__(decode.message, decode.original, decode.data)
        self.method = method
        # Its words when it fails a call (getMe, getFile): what answered, not aiogram's "Failed to deserialize".
        self.message = (f"Telegram answered {method.__api_method__} done, with a result aiogram cannot read"
                        f" ({self.unread()})")

    def makes_message(self) -> bool:
        """Whether the call makes a message (a send, an edit): done, it is done whatever its answer names."""
        returning = self.method.__returning__
        return Message is returning or Message in get_args(returning)

    def sent_message(self) -> Message | None:
        """A stand-in for the message Telegram made, when the call makes one and the answer names its
        ``message_id``: only that id is the answer's (no other field is set). None otherwise."""
        if not self.makes_message():
            return None
        result = self.data.get("result") if isinstance(self.data, dict) else None
        message_id = result.get("message_id") if isinstance(result, dict) else None
        if not isinstance(message_id, int) or isinstance(message_id, bool):
            return None
        return Message.model_construct(message_id=message_id)

    def unread(self) -> str:
        """What aiogram could not read, in a few words (``result.date: Field required``)."""
        if not isinstance(self.data, dict):
            return "the body was cut short"
        errors = getattr(self.original, "errors", None)
        if not callable(errors) or not (found := errors()):
            return type(self.original).__name__
        first = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return f"{'.'.join(str(step) for step in first['loc'])}: {first['msg']}{more}"


class NotBotApiJson(ClientDecodeError):
    """An answer that is neither the Bot API's JSON nor a refusal of a server in front (`NotTheBotApi`): a
    proxy's 502 page, a 200 page of something that is no Bot API, JSON of another API, a body cut short, bytes
    that are no text in the charset they name. Its message names the method and the status, and the page's
    title when it has one; never the token."""

    def __init__(self, method: TelegramMethod[Any], what: str, data: Any = None,
                 original: Exception | None = None) -> None:
        self.message = f"Telegram answered {method.__api_method__} with {what}"
        super().__init__(self.message, original or ValueError(what), data)
        self.args = (self.message,)  # its repr, not the page it was made of

    @classmethod
    def page(cls, decode: ClientDecodeError, method: TelegramMethod[Any], status: int, content: str,
             token: str) -> NotBotApiJson:
        title = _TITLE.search(content)
        shown = _excerpt(title.group(1), token) if title else ""
        # A page may quote the request's address, which holds the token: never kept in what is logged.
        data = _unsecret(decode.data, token) if isinstance(decode.data, str) else decode.data
        return cls(method, f"something that is not Bot API JSON (HTTP {status}){f': {shown}' if shown else ''}",
                   data, decode.original)

    def __str__(self) -> str:
        # aiogram's adds the whole page: a multi-line log, a connection state (polling's) quoting it.
        return self.message


class BotApiSession(AiohttpSession):
    """aiogram's aiohttp session, its answers read with their status (see the module's docstring), through the
    proxy the environment names for the Bot API (`platforms.proxies`)."""

    async def create_session(self) -> aiohttp.ClientSession:
        # aiogram's own, but for the proxy: aiogram reads no environment, and its proxy option needs aiohttp-socks.
        if self._should_reset_connector:
            await self.close()
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=self._connector_type(**self._connector_init), proxy=proxy_for(self.api.base),
                headers={aiohttp.hdrs.USER_AGENT: f"{aiohttp.http.SERVER_SOFTWARE} aiogram/{aiogram_version}"})
            self._should_reset_connector = False
        return self._session

    async def close(self) -> None:
        # aiogram then waits 250 ms for TLS connections to wind down: none to a plain-HTTP Bot API (a local server).
        if self.api.base.startswith("https:") or self._session is None or self._session.closed:
            await super().close()
        else:
            await self._session.close()

    async def make_request(self, bot: Bot, method: TelegramMethod[TelegramType],
                           timeout: int | None = None) -> TelegramType:
        try:
            return await super().make_request(bot, method, timeout)
        except TelegramNetworkError as exc:
            if (refusal := proxy_refusal(exc.__cause__)) is None:
                raise
            raise TelegramNetworkError(method, refusal) from None  # aiogram's quotes the proxy's password
        except UnicodeDecodeError as exc:
            # aiogram reads the body as text in the charset it names: bytes that are none raised a ValueError,
            # which read as a refusal for good (a send dropped, a start exiting 78 as if misconfigured).
            raise NotBotApiJson(method, f"bytes that are not text in the charset they name ({exc.encoding})",
                                original=exc) from None

    def check_response(self, bot: Bot, method: TelegramMethod[TelegramType], status_code: int,
                       content: str) -> Response[TelegramType]:
        try:
            return super().check_response(bot=bot, method=method, status_code=status_code, content=content)
        except ClientDecodeError as exc:
            if 400 <= status_code < 500 and status_code not in TRY_AGAIN_4XX:
                raise NotTheBotApi(method, _refusal(status_code, content, bot.token), status_code) from None
            data = exc.data
            if 200 <= status_code < 300 and (isinstance(data, dict) and data.get("ok") is True
                                             or isinstance(data, str) and _SAYS_DONE.match(data)):
                raise UnreadAnswer(exc, method) from exc.original
            raise NotBotApiJson.page(exc, method, status_code, content, bot.token) from exc.original


def _excerpt(text: str, token: str) -> str:
    """A page's ``text``, its markup gone, one line, at most `EXCERPT` characters, the token never shown."""
    text = _unsecret(" ".join(html.unescape(_TAG.sub(" ", text)).split()), token)
    return text[:EXCERPT] + "…" if len(text) > EXCERPT else text


def _unsecret(text: str, token: str) -> str:
    """``text`` with the bot's token as ``***``: a page may quote the request's address, which holds it (its
    colon maybe percent-encoded)."""
    for secret in (token, token.partition(":")[2]):
        if secret:
            text = text.replace(secret, "***")
    return text


def _refusal(status: int, content: str, token: str) -> str:
    found = _TITLE.search(content)
    text = _excerpt(found.group(1) if found else content, token)
    hint = " (an upload larger than that server takes?)" if status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE else ""
    return (f"HTTP {status} from a server in front of the Bot API, not Telegram's answer{hint}: "
            f"{text or 'an empty body'}")


class GroupUpgraded(BadRequest):
    """Telegram refused a write to a group upgraded to a supergroup, doing nothing: ``to`` is the
    supergroup's chat id."""

    def __init__(self, message: str, *, to: str, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.to = to


def translate(exc: Exception, method: str, chat_id: str | None, token: str) -> DeliveryError:
    """The one place aiogram's errors become `DeliveryError`s (`TelegramAdapter._call` logs them)."""
    # aiohttp's errors name the URL, and a Bot API URL holds the token.
    text = (getattr(exc, "message", None) or str(exc)).replace(token, "***")
    lowered = text.lower()
    kw: dict[str, Any] = {"method": method, "chat_id": chat_id, "platform": "telegram"}
    if isinstance(exc, TelegramMigrateToChat):
        return GroupUpgraded(text, to=str(exc.migrate_to_chat_id), **kw)  # not a failure: the caller goes there
    error: DeliveryError
    if isinstance(exc, NotTheBotApi):
        # Its words are a page's, not Telegram's: "404 Not Found" is no message that is gone, a 401 no
        # refused token, a 403 no chat that blocked the bot. Only a 413 says what to do (a smaller file); any
        # other may be lifted (a proxy's policy, its maintenance), so it is tried again as an outage is, for
        # the outbox's hour: failed at once, the message would be lost to a refusal of minutes.
        too_large = exc.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
        error = MessageTooLong(text, **kw) if too_large else NetworkError(text, **kw)
    elif isinstance(exc, TelegramRetryAfter):
        error = RateLimited(text, retry_after=float(exc.retry_after), **kw)
    elif isinstance(exc, TelegramEntityTooLarge) or "too long" in lowered or "too_long" in lowered:
        error = MessageTooLong(text, **kw)
    elif isinstance(exc, (TelegramNetworkError, TelegramServerError, ClientDecodeError, TimeoutError)):
        error = NetworkError(text, **kw)
    elif isinstance(exc, TelegramUnauthorizedError):
        # 401: the token, in every chat (403 is one chat's refusal). Said once where it is noticed
        # (polling's state, the outbox's hold), not on every call made while it lasts.
        log.debug("telegram %s to chat %s: the token was refused: %s", method, chat_id, text)
        return Unauthorized(text, **kw)
    elif isinstance(exc, TelegramForbiddenError):
        error = Forbidden(text, **kw)
    elif isinstance(exc, TelegramNotFound) or "not found" in lowered:
        error = NotFound(text, **kw)
    elif "can't be edited" in lowered:
        error = EditUnsupported(text, **kw)
    else:  # other 4xx, and arguments aiogram refused to send (pydantic, a bad message id)
        error = BadRequest(text, **kw)
    return error
