"""aiogram's errors as `DeliveryError`s: the one translation point of the Telegram adapter.

Apart from the adapter (`platforms.telegram`) because every Bot API call goes through it
(`platforms.telegram_calls` logs what it returns), and because a refused write to a group upgraded to a
supergroup is not a failure but `GroupUpgraded`, which `platforms.telegram_supergroups` acts on.
Logged under ``platforms.telegram`` like the rest of the adapter.
"""

from __future__ import annotations

import logging
from typing import Any

from aiogram.exceptions import (
    ClientDecodeError,
    TelegramEntityTooLarge,
    TelegramForbiddenError,
    TelegramMigrateToChat,
    TelegramNetworkError,
    TelegramNotFound,
    TelegramRetryAfter,
    TelegramServerError,
    TelegramUnauthorizedError,
)

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

log = logging.getLogger("platforms.telegram")


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
    if isinstance(exc, TelegramRetryAfter):
        error = RateLimited(text, retry_after=float(exc.retry_after), **kw)
    elif isinstance(exc, TelegramEntityTooLarge) or "too long" in lowered or "too_long" in lowered:
        error = MessageTooLong(text, **kw)
    elif isinstance(exc, (TelegramNetworkError, TelegramServerError, ClientDecodeError)):
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
