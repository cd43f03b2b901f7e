"""Slack Socket Mode's connection state, from slack_sdk's own signals (`platforms.connection`).

slack_sdk reconnects by itself (a ``disconnect`` message, a closed socket, failing pings):
each reconnect asks ``apps.connections.open`` for a new URL, and each new WebSocket opens
with Slack's ``hello``. When Slack refuses the app token there (it was revoked, or the app
uninstalled), slack_sdk logs the error and tries again every ``ping_interval``, for good.
`SocketWatch` sees both:

- ``hello`` on a new WebSocket: ``connected``. The first one also says how many Socket Mode
  connections Slack counts for the app: more than this one means another process (a second
  gateway, or one that has only just died) holds the same app token, and Slack hands each
  event to one connection of its choice, so each gets part of every chat. Logged as an error
  (later hellos count the connection a reconnect is replacing);
- ``apps.connections.open`` called while ``connected``: ``reconnecting`` (the first news of a
  drop; called again during an outage, or before the first connection, the reason stays the
  cause already known); refused for the token (`REFUSED`): ``down`` (still retried by slack_sdk,
  so a token made valid again is back by itself); any other failure: ``reconnecting``, naming it
  until a call answers again.

The bot token is watched apart (`BotToken`), in both modes: Socket Mode runs on the app token,
which outlives an uninstall, and HTTP mode has no connection at all, so without it a revoked bot
token left the platform healthy while every reply failed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.web.async_client import AsyncWebClient

from platforms.base import NetworkError
from platforms.connection import ConnectionWatch, TokenWatch
from platforms.slack_client import SlackWebClient

REFUSED = frozenset({"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"})
"""``apps.connections.open`` errors no retry can fix: the app token is not (or no longer) good."""

SHARED = ("slack: Slack counts %d Socket Mode connections for this app as this gateway connects: another gateway"
          " (or program, or one that has only just stopped) uses the same app token, and Slack hands each"
          " message to one of them, so each answers part of every chat; stop the other one or give it an app"
          " of its own")

log = logging.getLogger(__name__)

ASKING = "Socket Mode is reconnecting (asking apps.connections.open for a new URL)"
OPENING = "Socket Mode is reconnecting (apps.connections.open gave a new URL; opening the WebSocket)"

BOT_TOKEN_FIX = "reinstall the app and set platforms.slack.bot_token to its new xoxb- token, then restart"


class BotToken(TokenWatch):
    """Whether Slack still takes the bot token: refused when a Web API call answers with one of
    `REFUSED`, or Slack's ``tokens_revoked`` or ``app_uninstalled`` event comes."""

    def __init__(self) -> None:
        super().__init__("slack", "Slack", BOT_TOKEN_FIX, log)


class SocketWatch:
    """``dropped()`` is called at the first news of a drop, ``reconnected()`` at the ``hello`` of each
    later WebSocket, ``alive()`` after every message (the ``hello`` too): the adapter catches up after an
    outage long enough for Slack to drop events."""

    def __init__(self) -> None:
        self.state = ConnectionWatch("slack")
        self._greeted = False
        self.dropped: Callable[[], None] = lambda: None
        self.reconnected: Callable[[], None] = lambda: None
        self.alive: Callable[[], None] = lambda: None

    def web_client(self, **options: Any) -> AsyncWebClient:
        """The Socket Mode client's Web API client (slack_sdk uses it for ``apps.connections.open``
        alone), built from `AsyncWebClient`'s options."""
        return _WatchedWebClient(self.state, lambda: self.dropped(), **options)

    def watch(self, client: AsyncBaseSocketModeClient) -> None:
        client.message_listeners.append(self._on_message)

    async def _on_message(self, client: AsyncBaseSocketModeClient, message: dict, raw: str | None) -> None:
        if message.get("type") == "hello":
            count = message.get("num_connections")
            if not self._greeted and isinstance(count, int) and count > 1:
                log.error(SHARED, count)
            greeted, self._greeted = self._greeted, True
            self.state.connected()
            if greeted:
                # Before any event of the new WebSocket is handed on, so that a live one waits for the catch-up:
                # slack_sdk starts each message's listeners in a task of its own, in the order the messages came.
                self.reconnected()
        self.alive()


class _WatchedWebClient(SlackWebClient):
    def __init__(self, state: ConnectionWatch, dropped: Callable[[], None], **options: Any) -> None:
        super().__init__(**options)
        self._state, self._dropped = state, dropped
        self._failed = False
        """Whether the last call failed: the reason names its cause until one answers."""

    async def apps_connections_open(self, *, app_token: str, **kwargs: Any) -> Any:
        """The state says what this call means for the connection. Its generic text is the news only of a drop
        (the state was ``connected``): set before every call, it replaced the cause the last one failed for (the
        console's reason took turns between the two for as long as an outage lasted) and, before the first
        connection, ``not connected yet``. A call that answers after one failed ends that cause: the reason no
        longer names a failure that is over while the WebSocket is being opened."""
        if self._state.state.status == "connected":
            self._dropped()
            self._state.reconnecting(ASKING)
        try:
            answer = await super().apps_connections_open(app_token=app_token, **kwargs)
        except SlackApiError as exc:
            self._failed = True
            # Not `slack_errors.error_code`, which imports `REFUSED` from here: the same reading. For a body that
            # is no JSON of Slack's (a proxy's page) slack-sdk hands over aiohttp's response or keeps the text, and
            # ``exc.response.get("error")`` crashed (AttributeError) in place of the call's failure.
            data = getattr(exc.response, "data", None)
            error = data.get("error") if isinstance(data, dict) else None
            if not isinstance(error, str):
                # slack-sdk reads ``e.response["error"]`` of a SlackApiError, crashing alike: its reconnect loop logs
                # this instead, and tries again at its next ping.
                status = getattr(exc.response, "status_code", None) or getattr(exc.response, "status", None)
                why = f"an answer that is not Slack's JSON (HTTP {status}), a proxy's page perhaps"
                self._state.reconnecting(f"apps.connections.open failed: {why}")
                raise NetworkError(f"apps.connections.open: {why}", method="apps.connections.open",
                                   platform="slack") from exc
            if error in REFUSED:
                self._state.down(f"Slack refused the app token at apps.connections.open ({error}): it was revoked or"
                                 " the app uninstalled; set platforms.slack.app_token to a valid xapp- token and"
                                 " restart (Socket Mode keeps asking meanwhile: a token made valid again reconnects)",
                                 retrying=True)
            else:
                self._state.reconnecting(f"apps.connections.open failed: {error}")
            raise
        except Exception as exc:
            # A connection refused, a timeout: the exception's name alone, which holds no URL or token.
            self._failed = True
            self._state.reconnecting(f"apps.connections.open failed: {type(exc).__name__}")
            raise
        if self._failed and self._state.state.status == "reconnecting":
            self._state.reconnecting(OPENING)
        self._failed = False
        return answer
