"""Calling the Bot API for the Telegram adapter: every failure of a call leaves as a `DeliveryError`
(translated in `platforms.telegram_errors`) and is logged once, here; a 401 makes the platform
``down`` until a call succeeds (`platforms.connection.TokenWatch`); a failure every chat shares (the
Bot API down or unreachable, flood control) is warned of once per cause (`platforms.repeated_warnings`),
not at every call of every chat retrying through it. A call whose caller says what became of it (the
outbox of a part, the gateway of a file it could not take) logs its own refusal at DEBUG only: it
was a second warning of one refusal. A part's Markdown is sent as Telegram's HTML, and once more as
plain text when Telegram cannot parse that. A send Telegram answered as done, whose message aiogram
cannot read even in part (`platforms.telegram_updates.read_answers`), is done: its result is a stand-in
holding the message's id alone (`platforms.telegram_errors.UnreadAnswer`), or None when the answer names
none (the adapter's `Sent` then has an id no edit can use, `platforms.telegram.NO_ID`). Logged under
``platforms.telegram`` like the rest of the adapter.
"""

from __future__ import annotations

import asyncio
import html
import logging
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from aiogram import Bot
from aiogram.exceptions import AiogramError, TelegramBadRequest

from platforms.base import BadRequest, DeliveryError, NetworkError, RateLimited, Unauthorized, scalar_text
from platforms.connection import TokenWatch
from platforms.formatting import telegram_html
from platforms.repeated_warnings import RepeatedWarnings
from platforms.telegram_errors import GroupUpgraded, UnreadAnswer, translate

log = logging.getLogger("platforms.telegram")
FAILED = "telegram %s failed: %s"

T = TypeVar("T")


class BotCalls:
    """The adapter's Bot API calls, through ``bot``, rendered for ``parse_mode`` (None: plain text)."""

    def __init__(self, bot: Bot, parse_mode: Literal["HTML"] | None, token_watch: TokenWatch,
                 refused: Callable[[str, DeliveryError], None] = lambda chat_id, error: None) -> None:
        """``refused(chat_id, error)``: a call for that chat failed so (the adapter learns a chat it can no
        longer write to: `platforms.telegram_membership`)."""
        self._bot = bot
        self._refused = refused
        self._parse_mode = parse_mode
        self._token_watch = token_watch
        self._shared = RepeatedWarnings(log)
        """For failures every chat shares: one warning for an outage, not one per call."""

    async def call(
        self,
        method: str,
        chat_id: str | None,
        request: Callable[[], Awaitable[T]],
        *,
        not_modified_ok: bool = False,
        warn: RepeatedWarnings | None = None,
        caller_logs: bool = False,
        timeout: float | None = None,
    ) -> T:
        """Make one Bot API call; every failure leaves as a `DeliveryError`, logged (`_failed`). A 401
        makes the platform ``down`` until a call succeeds (`TelegramAdapter.connection`). ``caller_logs``:
        the caller logs what becomes of the call, so its own refusal is logged at DEBUG here. ``timeout``:
        seconds the call is given, if fewer than the bot's request timeout (a `NetworkError` past them)."""
        bound = asyncio.timeout(timeout)
        try:
            async with bound:
                result = await request()
        except TimeoutError as exc:
            if not bound.expired():
                raise
            raise self._failed(TimeoutError(f"Telegram did not answer {method} within {timeout:g}s"), method,
                               chat_id, warn, caller_logs) from exc
        except TelegramBadRequest as exc:
            if not_modified_ok and "message is not modified" in exc.message:
                return None  # type: ignore[return-value]  # nothing changed: the edit "worked"
            raise self._failed(exc, method, chat_id, warn, caller_logs) from exc
        except UnreadAnswer as exc:
            # Telegram made the call: failed, it was made again at every retry, the message shown each time.
            if not exc.makes_message():  # no message to show twice (getMe, getFile): it failed, named
                raise self._failed(exc, method, chat_id, warn, caller_logs) from exc
            made = exc.sent_message()
            call = method if chat_id is None else f"{method} to chat {chat_id}"
            if made is None:  # done all the same: sent again, it would show twice
                self._shared.warning(("UnreadAnswer", method, "no id"), "telegram %s: Telegram made the message,"
                                     " but its answer names no message id (%s); taken as sent, it cannot be edited",
                                     call, exc.unread())
            else:
                self._shared.warning(("UnreadAnswer", method), "telegram %s: Telegram made the message %s, but"
                                     " aiogram cannot read its answer (%s); taken as sent", call, made.message_id,
                                     exc.unread())
            result = made  # type: ignore[assignment]  # only its message_id is read (the adapter's sends)
        except (AiogramError, ValueError) as exc:
            error = self._failed(exc, method, chat_id, warn, caller_logs)
            if isinstance(error, Unauthorized):
                self._token_watch.refused(f"{method} answered 401 Unauthorized")
            raise error from exc
        self._token_watch.accepted()
        return result

    def _failed(self, exc: Exception, method: str, chat_id: str | None, warn: RepeatedWarnings | None,
                caller_logs: bool = False) -> DeliveryError:
        """``exc`` translated and logged: at once, or by ``warn``, once per cause, for a call made again
        and again for as long as it fails (typing), or at DEBUG when the caller says what became of the
        call (``caller_logs``), unless every chat shares the failure (one warning for an outage, whose first retry
        and end the outbox says at INFO). A refused token is said where it is noticed (polling's
        state, the outbox's hold), a chat's move is no failure: neither is logged here."""
        error = translate(exc, method, chat_id, self._bot.token)
        if chat_id is not None:
            self._refused(chat_id, error)
        if isinstance(error, (GroupUpgraded, Unauthorized)):
            return error
        # A call for the bot itself (getMe, setMyCommands at start) concerns no chat.
        call = method if chat_id is None else f"{method} to chat {chat_id}"
        line = (FAILED, call, _kind_and_description(error))
        if isinstance(error, NetworkError | RateLimited):
            self._shared.warning(type(error).__name__, *line)
        elif caller_logs:
            log.debug(*line)
        elif warn is None:
            log.warning(*line)
        else:
            warn.warning((method, chat_id, type(error).__name__), *line)
        return error

    async def formatted(
        self,
        method: str,
        chat_id: str,
        markdown: str,
        request: Callable[[str, str | None], Awaitable[T]],
        *,
        not_modified_ok: bool = False,
    ) -> T:
        """`call` with ``markdown`` rendered, for a caller that logs what becomes of it (``caller_logs``);
        ``request(text, parse_mode)`` builds the call. When Telegram cannot parse the markup, the Markdown
        goes once more as plain text, with one warning naming Telegram's refusal."""
        markdown = scalar_text(markdown)  # a lone surrogate cannot be encoded
        text, parse_mode = self.render(markdown)
        try:
            return await self.call(method, chat_id, lambda: request(text, parse_mode), not_modified_ok=not_modified_ok,
                                   caller_logs=True)
        except BadRequest as exc:
            if parse_mode is None or "can't parse entities" not in str(exc):
                raise
            log.warning("telegram %s to chat %s: Telegram refused the formatting (%s); sending it as plain text",
                        method, chat_id, exc)
            return await self.call(method, chat_id, lambda: request(markdown, None), not_modified_ok=not_modified_ok,
                                   caller_logs=True)

    def render(self, text: str) -> tuple[str, str | None]:
        """What to send for a Markdown part: Telegram HTML, or the text itself when rendering
        changes nothing but escaping it (plain text then, which Telegram can never refuse). Not when
        the text holds entities (``&amp;``), which Markdown reads as characters and plain text would not."""
        if self._parse_mode is None:
            return text, None
        rendered = telegram_html.render(text)
        return (text, None) if rendered == html.escape(text, quote=False) else (rendered, self._parse_mode)


def _kind_and_description(error: DeliveryError) -> str:
    # The kind once: Telegram's description may start with it ("Forbidden: bot was blocked by the user").
    name, text = type(error).__name__, str(error)
    return text if text.partition(":")[0] == name else f"{name}: {text}"
