"""Telegram polling's connection state, read from what each ``getUpdates`` answers
(`platforms.connection`).

aiogram's polling loop retries every failure for good, backing off from 1 s to 5 s, with
one log line that names the exception and nothing more: a 401 (the token was revoked in
BotFather) is retried forever, and a 409 too — another process polling the same bot (the
two polls end each other, and each gets part of the chats' messages), or a webhook someone
set (no update arrives at all). `PollWatch` sees each answer:

- **401**: ``down`` for good, polling stops (no retry can succeed: a revoked token never
  comes back).
- **409**: ``down`` while it lasts, with one error line naming the likely cause. Polling
  goes on, so the bot is back by itself once the other poller stops or the webhook is
  deleted: ``connected`` again after a poll answers with no 409 for ``polling_timeout``
  plus aiogram's 5 s of backoff (a second poller ends a poll of ours sooner than that).
- **429** (flood control): ``reconnecting``, and the next poll waits the ``retry_after`` Telegram
  names (at most `RETRY_AFTER_MAX`), where aiogram alone would poll again after its 1-5 s of
  backoff, into the same 429, with an error line each time, for as long as the flood control lasts.
- anything else (network, 5xx, timeouts): ``reconnecting`` until a poll answers.

aiogram also logs every failed poll itself, at ERROR, with a WARNING that it sleeps and tries
again, and an INFO once a poll answers again: next to the watch's one line per change, an outage
of a minute was a dozen errors, also in the console's recent errors. `_PollRetries` moves those
three to DEBUG, where they still show each poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiogram.exceptions import TelegramConflictError, TelegramRetryAfter, TelegramUnauthorizedError

from platforms.connection import ConnectionWatch

T = TypeVar("T")

BACKOFF_MAX = 5.0
"""aiogram's longest wait between two failed polls (its ``DEFAULT_BACKOFF_CONFIG``)."""
RETRY_AFTER_MAX = 300.0
"""The longest a 429 holds polling back, whatever ``retry_after`` says."""

DISPATCHER_LOG = logging.getLogger("aiogram.dispatcher")
"""aiogram's polling loop logs here: where `_PollRetries` reads it."""
_RETRY_LINES = ("Failed to fetch updates", "Sleep for ", "Connection established")
"""How aiogram's lines about a failed poll, its back-off and the poll that answers again begin."""


class _PollRetries(logging.Filter):
    """aiogram's own lines about failed polls, at DEBUG: `PollWatch` reports the same polls, once per
    change of the connection's state, with the exception's words (see the module's docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_RETRY_LINES):
            record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
            return DISPATCHER_LOG.isEnabledFor(logging.DEBUG)  # the level it was let through at was its own
        return True


DISPATCHER_LOG.addFilter(_PollRetries())

REVOKED = ("Telegram refused the bot token (401 Unauthorized) while polling: it was revoked or replaced in"
           " BotFather; set platforms.telegram.token to the current token and restart (polling has stopped)")


class PollWatch:
    """``stop_polling`` ends aiogram's polling (run in a task of its own: it waits for the loop
    this watch is called from)."""

    def __init__(self, token: str, polling_timeout: float, stop_polling: Callable[[], Awaitable[None]]) -> None:
        self.state = ConnectionWatch("telegram")
        self._token = token
        self._conflict_hold = polling_timeout + BACKOFF_MAX
        self._last_conflict: float | None = None
        self._stop_polling = stop_polling
        self._stopping: asyncio.Task[None] | None = None

    def started(self) -> None:
        """Polling began: getMe and deleteWebhook were answered just before."""
        self._last_conflict = None
        self.state.connected()

    async def get_updates(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` (one getUpdates), its outcome noted; what it raises is raised."""
        loop = asyncio.get_running_loop()
        try:
            result = await call()
        except TelegramConflictError as exc:
            self._last_conflict = loop.time()
            self.state.down(_conflict_reason(exc.message), retrying=True)
            raise
        except TelegramUnauthorizedError:
            self.state.down(REVOKED)
            if self._stopping is None:
                self._stopping = asyncio.ensure_future(self._stop_quietly())
            raise
        except Exception as exc:
            self.state.reconnecting(f"getUpdates failed: {type(exc).__name__}: {exc}".replace(self._token, "<token>"))
            if isinstance(exc, TelegramRetryAfter):
                await asyncio.sleep(min(float(exc.retry_after), RETRY_AFTER_MAX))
            raise
        if self._last_conflict is None or loop.time() - self._last_conflict >= self._conflict_hold:
            self._last_conflict = None
            self.state.connected()
        return result

    async def _stop_quietly(self) -> None:
        with contextlib.suppress(RuntimeError):  # the adapter stopped it first
            await self._stop_polling()


def _conflict_reason(description: str) -> str:
    if "webhook" in description.lower():
        return (f"Telegram refuses polling while a webhook is set for this bot ({description}): another gateway"
                " in webhook mode, or another program, uses the same token; stop it or delete its webhook"
                " (polling goes on and recovers by itself)")
    return (f"another process is polling this bot ({description}): two gateways, or another program, use the"
            " same token, and each gets only part of the messages; stop the other one (polling goes on and"
            " recovers by itself)")
