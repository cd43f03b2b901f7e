"""Calling Slack's Web API for the Slack adapter: every call's errors are translated once
(`platforms.slack_errors`); a call Slack refuses for the bot token, an upload's steps included,
makes the platform ``down`` until one succeeds (`platforms.slack_connection.BotToken`). A call whose
caller says what becomes of it (``caller_logs``: the outbox of a part, the gateway of a file) logs a
channel's own refusal at DEBUG only. A part's Markdown is sent as mrkdwn, and once more as plain text
should Slack answer a formatting error. Logged under ``platforms.slack``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from platforms import slack_uploads
from platforms.base import (
    BadRequest,
    DeliveryError,
    NetworkError,
    Outbound,
    OutboundFile,
    Sent,
    Unauthorized,
    scalar_text,
)
from platforms.formatting import slack_mrkdwn
from platforms.repeated_warnings import RepeatedWarnings
from platforms.slack_connection import REFUSED, BotToken
from platforms.slack_errors import error_code, translate_exception

log = logging.getLogger("platforms.slack")

_FORMATTING = ("invalid_blocks", "invalid_blocks_format")
_NOT_BOT_TOKEN = frozenset({"apps.connections.open", "auth.test"})
"""Calls that say nothing of the bot token while running: the first takes the app token, the other
runs at start only, where a refused token stops the start with a line of its own."""


class WebApi:
    """The adapter's Web API calls, through the client ``client()`` gives (None until the adapter
    starts and once it stops). ``accepted()`` follows every call Slack answered for the bot token."""

    def __init__(self, client: Callable[[], AsyncWebClient | None], bot_token_state: BotToken,
                 accepted: Callable[[], None],
                 failed: Callable[[str, str | None, str | None], None] = lambda method, channel, error: None,
                 where: Callable[[str], str] = lambda channel: channel) -> None:
        """``failed(method, channel, error)``: a call for that channel failed with Slack's ``error`` code (None:
        no code, a connection's failure), an upload's steps as one `slack_uploads.METHOD` (the adapter learns a
        channel it can no longer write to: `platforms.slack_membership`). ``where(channel)``: the id Slack knows
        the adapter's channel by now (`platforms.slack_moves`), which each call is made with; ``failed`` is told
        the adapter's id."""
        self._client = client
        self._where = where
        self._bot_token_state = bot_token_state
        self._accepted = accepted
        self._failed = failed
        self._warn = RepeatedWarnings(log)

    async def call(self, method: str, chat_id: str | None, /, *, caller_logs: bool = False, **kw: Any) -> Any:
        """Call one Web API method (``chat.update`` → ``client.chat_update``) with ``kw``, errors translated.
        ``caller_logs``: the caller logs what becomes of the call, so a channel's own refusal is not warned
        of here (`platforms.slack_errors.translate`)."""
        client = self._started(method, chat_id)
        if isinstance(kw.get("channel"), str):
            kw["channel"] = self._where(kw["channel"])
        try:
            answer = await getattr(client, method.replace(".", "_"))(**kw)
        except (SlackClientError, aiohttp.ClientError, TimeoutError, OSError) as exc:
            if method not in _NOT_BOT_TOKEN:
                self._refused(method, exc)
            translated = translate_exception(exc, method, chat_id, self._warn, caller_logs=caller_logs)
            self._failed(method, chat_id, error_code(exc) if isinstance(exc, SlackApiError) else None)
            raise translated from exc
        if method not in _NOT_BOT_TOKEN:
            self._taken()
        return answer

    async def share(self, message: Outbound, file: OutboundFile) -> Sent:
        """Upload ``file`` as `platforms.slack_uploads.share` does (its errors translated there), the
        bot token watched as in `call`: its steps are Web API calls with it too."""
        client = self._started(slack_uploads.METHOD, message.chat_id)
        try:
            sent = await slack_uploads.share(client, dataclasses.replace(message, chat_id=self._where(message.chat_id)),
                                             file)
        except DeliveryError as exc:
            if isinstance(exc, Unauthorized):
                self._refused(slack_uploads.METHOD, exc.__cause__)
            cause = exc.__cause__
            self._failed(slack_uploads.METHOD, message.chat_id,
                         error_code(cause) if isinstance(cause, SlackApiError) else None)
            raise
        self._taken()
        return sent

    def _started(self, method: str, chat_id: str | None) -> AsyncWebClient:
        client = self._client()
        if client is None:
            raise NetworkError("slack adapter not started", method=method, chat_id=chat_id)
        return client

    def _refused(self, method: str, exc: BaseException | None) -> None:
        error = error_code(exc) if isinstance(exc, SlackApiError) else None
        if error in REFUSED:
            self._bot_token_state.refused(f"{method} answered {error}")

    def _taken(self) -> None:
        self._bot_token_state.accepted()
        self._accepted()

    async def formatted(self, method: str, chat_id: str, markdown: str, /, **kw: Any) -> Any:
        """Call ``method`` with ``markdown`` rendered as ``text``, for a caller that logs what becomes of
        it (``caller_logs``: a part, a command's answer); on a formatting error, once more with the Markdown
        as plain text, with one warning naming Slack's refusal: escaped all the same, since Slack reads
        ``<!channel>`` and ``<@U…>`` in any text, formatted or not."""
        markdown = scalar_text(markdown)  # a lone surrogate cannot be encoded
        try:
            return await self.call(method, chat_id, text=slack_mrkdwn.render(markdown), caller_logs=True, **kw)
        except BadRequest as exc:
            if not str(exc).endswith(_FORMATTING):
                raise
            log.warning("slack %s (channel %s): Slack refused the formatting (%s); sending it as plain text", method,
                        chat_id, exc)
            return await self.call(method, chat_id, text=slack_mrkdwn.escape(markdown), mrkdwn=False, caller_logs=True,
                                   **kw)
