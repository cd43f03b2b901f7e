"""Slack's Socket Mode WebSocket: opened at start, closed at stop.

Apart from the adapter (`platforms.slack`) because it is Socket Mode's own edge, as
`platforms.slack_http` is HTTP mode's: HTTP mode never comes here. The connection's state once
open is watched in `platforms.slack_connection`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest

from platforms.proxies import proxy_for
from platforms.slack_connection import SocketWatch

SOCKET_LOG = logging.getLogger("slack_sdk.socket_mode")
"""The Socket Mode client's own log (slack_sdk's default is the app's): where `_LostAcks` reads it."""
CONNECT_TIMEOUT = 30.0
"""Seconds `SlackAdapter.start` waits for the Socket Mode WebSocket to open."""


class _LostAcks(logging.Filter):
    """An acknowledgement the client could not send because its connection was closing (a stop, a
    reconnect) is logged by slack_sdk as a WARNING, before it raises: said instead by `_Handler`, in one
    line that tells what becomes of the request."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (record.levelno == logging.WARNING
                    and message.endswith("is no longer active. Failed to send a message"))


SOCKET_LOG.addFilter(_LostAcks())


def lost_ack(req: SocketModeRequest) -> str:
    """What becomes of a request whose acknowledgement did not go out: an event is sent again (to the next
    connection, and the inbox drops it if it was taken); a slash command never is. The listener acknowledges
    a command once the gateway recorded it (or after ``sink_timeout``, still handing it over, or refusing it
    as the adapter stops): it is answered all the same, or the stop tells its user what became of it. Slack
    shows its user an error for want of the acknowledgement."""
    if req.type == "events_api":
        return "an acknowledgement did not go out as the Socket Mode connection closed: Slack sends its event again"
    payload = req.payload if isinstance(req.payload, dict) else {}
    if req.type == "slash_commands":
        return (f"the acknowledgement of {payload.get('command')} from user {payload.get('user_id')} did not go out"
                " as the Socket Mode connection closed: Slack never sends a slash command again, and may show its"
                " user an error; the gateway has it and answers it (or the stop tells its user what became of it)")
    return (f"the acknowledgement of a {req.type} request did not go out as the Socket Mode connection closed;"
            " Slack does not send it again")


class _Handler(AsyncSocketModeHandler):
    """bolt's Socket Mode handler, but for an acknowledgement the closing connection cannot send: slack_sdk
    logged that as a failed listener, at ERROR with a traceback, though nothing failed. One INFO line instead,
    true to the request's kind (`lost_ack`)."""

    async def handle(self, client: AsyncBaseSocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        try:
            await super().handle(client, req)  # type: ignore[arg-type]
        except ConnectionError:  # bolt's dispatch turns a listener's failure into a 500: this is the send's
            SOCKET_LOG.info("%s", lost_ack(req))


class SlackStartError(RuntimeError):
    """Socket Mode could not connect at start although the Web API answered; the message says
    what to check."""

    platform = "slack"


def handler(app: AsyncApp, watch: SocketWatch, *, app_token: str | None, ping_interval: float,
            **web: Any) -> AsyncSocketModeHandler:
    """Socket Mode's handler for ``app``, not connected yet; ``web`` are the options of the Web API
    client it asks for a URL on each reconnect."""
    # Reconnects ask apps.connections.open through this client: the watch sees a refused app token.
    opener = watch.web_client(**web, retry_handlers=[])
    socket = _Handler(app, app_token=app_token, ping_interval=ping_interval, web_client=opener, logger=SOCKET_LOG)
    watch.watch(socket.client)
    return socket


async def connect(socket: AsyncSocketModeHandler, watch: SocketWatch, call: Callable[..., Awaitable[Any]], *,
                  app_token: str | None, timeout: float) -> None:
    """Open the WebSocket, through ``call`` (the adapter's Web API call) for its URL, within
    ``timeout`` seconds, else raise `SlackStartError`."""
    client = socket.client
    # Ask for the URL ourselves so a bad app token fails start() instead of retrying forever.
    opened = await call("apps.connections.open", None, app_token=app_token)
    client.wss_uri = opened["url"]
    # slack-sdk's own choice was $HTTPS_PROXY for any URL, whatever $no_proxy says (`platforms.proxies`).
    client.proxy = proxy_for(opened["url"])
    client.web_client.proxy = proxy_for(client.web_client.base_url)
    try:
        # slack_sdk retries a handshake that fails every ping_interval, for good.
        await asyncio.wait_for(socket.connect_async(), timeout=timeout)
        watch.state.connected()
    except TimeoutError as exc:
        host = urlsplit(opened["url"]).netloc  # not the URL: its ticket opens a connection
        raise SlackStartError(f"Socket Mode: no WebSocket to {host} within {timeout:g}s; a proxy or"
                              " firewall must let WebSockets (wss://) through") from exc


async def close(socket: AsyncSocketModeHandler, seconds: float) -> None:
    """Close the WebSocket and wait for the Socket Mode client's tasks to end, within about ``seconds``: a
    close Slack does not answer (the connection is half-open: its peer gone, no FIN) would wait 10 s
    (aiohttp's ``ws_close``). Cut, the connection is dropped instead, which loses nothing: Slack sends
    the events not acked again, to the next connection."""
    client = socket.client
    try:
        async with asyncio.timeout(seconds):
            await client.close()
    except TimeoutError:
        # Its HTTP session closed, the WebSocket's connection is gone: closing again waits for nothing,
        # and ends the client's tasks as the close cut short did not.
        await client.aiohttp_client_session.close()
        await client.close()
    pending = [t for t in (client.message_processor, client.current_session_monitor, client.message_receiver)
               if t is not None]
    await asyncio.gather(*pending, return_exceptions=True)
