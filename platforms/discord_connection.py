"""The discord.py client the adapter connects with: built, its gateway connection waited for at start
(READY), and that connection ended at a stop.

Apart from the adapter (`platforms.discord`) because it is the one place that sets discord.py up and reaches
into its connection (its connect task, its WebSocket, the task that dispatches "ready"), while the REST client
the adapter keeps open for the replies of the turns still ending is left alone. Logged under
``platforms.discord``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import aiohttp

from platforms import discord_answers, discord_calls, discord_errors, discord_token
from platforms.base import last_calls_time
from platforms.connection import TokenWatch
from platforms.discord_errors import PORTAL_HINT
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.proxies import proxy_for, proxy_refusal

log = logging.getLogger("platforms.discord")
RECONNECT_LOG = logging.getLogger("discord.client")
"""discord.py's client logs here each try again at the gateway connection: where `_ReconnectLines` reads it."""
_RECONNECT_LINE = "Attempting a reconnect in %.2fs"


class _ReconnectLines(logging.Filter):
    """discord.py's ``Attempting a reconnect in 3.52s``, logged at ERROR with the whole traceback of the network
    error that cut or refused the gateway connection (no route, a refused handshake, a timeout: the only ones it
    tries again after), at each try while Discord or the network is down, the delay in the line so that the repeat
    filter folds none: a WARNING of one line instead, the error's type and words kept. The connection's state
    (``reconnecting``) says the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == _RECONNECT_LINE and record.exc_info and record.exc_info[1] is not None:
            record.msg = "discord: the gateway connection failed (%s); discord.py tries again in %.2f s"
            record.args = (discord_errors.described(record.exc_info[1]), *(record.args or ()))
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
            return RECONNECT_LOG.isEnabledFor(logging.WARNING)  # the level it was let through at was its own
        return True


RECONNECT_LOG.addFilter(_ReconnectLines())


class DiscordStartError(RuntimeError):
    """The adapter could not log in or connect; the message says what to fix. ``kind`` names the
    `platforms.base` error the failure is, which the gateway's line and exit status go by
    (`gateway.startup_errors`): ``NetworkError`` (no working Discord API at ``api_base``: may mend by itself),
    ``Unauthorized``, ``NotFound``… (the bot refused: only the operator mends it); None where neither says it.
    ``lasting``: every start fails alike until the operator changes a setting elsewhere (the Developer Portal's)."""

    platform = "discord"

    def __init__(self, message: str, *, kind: str | None = None, lasting: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.lasting = lasting


LOGIN_ERRORS = (discord.DiscordException, aiohttp.ClientError, OSError, ValueError, LookupError, TypeError)
"""What a failed login raises (`login_failed`); anything else is no answer of Discord's and goes as it is."""
LOGIN_TIMEOUT = 30.0
"""Seconds the login at start is given, its calls together (each has its own bound too, `discord_calls`): with
aiohttp's 300 s per call, an ``api_base`` that took the connection and never answered (a wrong proxy, a captive
portal, a hung server) held the start for 5 minutes without a word."""


def login_failed(exc: BaseException, *, timeout: float | None = None) -> DiscordStartError:
    """A failed login (``GET /users/@me``, then ``GET /gateway/bot``) in words, never an exception's repr: aiohttp's
    quotes the whole connection key, a proxy's credentials with it. A proxy's refusal is told by its status.
    ``timeout``: the seconds the login was given, when it ran out of them (``exc`` is then that timeout's)."""
    if timeout is not None:
        exc = discord_calls.no_answer(timeout)
    if isinstance(exc, TimeoutError):  # the login's bound, or one call's (`discord_calls`), in words
        return DiscordStartError(f"cannot log in: {exc}", kind="NetworkError")
    if isinstance(exc, discord.LoginFailure):
        return DiscordStartError("Discord rejected the bot token (401)", kind="Unauthorized")
    if (refusal := proxy_refusal(exc)) is not None:
        return DiscordStartError(f"cannot log in: {refusal}", kind="NetworkError")
    if isinstance(exc, ValueError | LookupError | TypeError):
        # discord.py parses an answer labelled JSON before its status (JSONDecodeError: a proxy's page, a body
        # cut short) and indexes one that is not JSON as if it were (TypeError, KeyError): raw, it said nothing
        # of what failed. Not lasting: a proxy or a Discord outage mends by itself.
        return DiscordStartError("cannot log in: its answer is not Discord's JSON (a proxy's page, a body cut"
                                 f" short, or no Discord API there): {discord_errors.described(exc)}",
                                 kind="NetworkError")
    error = discord_errors.delivery_error(exc, route="login", chat_id="")  # a 5xx, a 404, no connection…
    # Another of discord.py's own errors says nothing of the API or the bot: not taken for a refusal, which lasts.
    answered = isinstance(exc, discord.HTTPException | discord.RateLimited | aiohttp.ClientError | OSError)
    return DiscordStartError(f"cannot log in: {error}", kind=type(error).__name__ if answered else None)


def new_client(factory: Callable[..., discord.Client], token_watch: TokenWatch, api_base: str,
               call_timeout: float = discord_calls.CALL_TIMEOUT) -> discord.Client:
    """A client from ``factory`` with the intents the adapter reads by, rate limits waited out up to
    `discord_answers.MAX_RATE_LIMIT_WAIT`, its REST answers watched for a refused token (``token_watch``,
    `platforms.discord_token`), each REST call given ``call_timeout`` seconds (`platforms.discord_calls`), and
    the proxy the environment names for ``api_base`` (`platforms.proxies`): discord.py takes one, for its REST
    calls and its gateway WebSocket alike, and reads no environment."""
    intents = discord.Intents.none()
    intents.guilds = intents.guild_messages = intents.dm_messages = intents.message_content = True
    trace = discord_answers.callback_trace()
    discord_token.watch_answers(trace, token_watch)
    discord_errors.watch_answers(trace)  # a 2xx discord.py cannot read (`discord_errors.answered`)
    # A process's first client logs WARNINGs that PyNaCl and davey (voice) are missing. Switchboard
    # never joins voice: those lines would only mislead, in the log and the console's errors.
    discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
    client = factory(intents=intents, max_ratelimit_timeout=discord_answers.MAX_RATE_LIMIT_WAIT, http_trace=trace,
                     proxy=proxy_for(api_base))
    discord_calls.bound(client.http, call_timeout)
    return client


async def wait_connected(connect_task: asyncio.Task[None], connected: asyncio.Event, ready_timeout: float) -> None:
    """Until ``connected`` (READY) or ``connect_task`` ends, at most ``ready_timeout`` seconds; raises
    `DiscordStartError` saying why there is no connection."""
    ready = asyncio.ensure_future(connected.wait())
    try:
        await asyncio.wait({ready, connect_task}, timeout=ready_timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        ready.cancel()
    if connected.is_set():
        return
    if not connect_task.done():
        raise DiscordStartError(f"no READY from the Discord gateway within {ready_timeout:g}s")
    exc = connect_task.exception()
    if isinstance(exc, discord.PrivilegedIntentsRequired):
        log.error("discord: the gateway refused the Message Content intent (4014); %s", PORTAL_HINT)
        # Lasting: started again every few seconds, each start a new gateway login, of which Discord allows
        # about 1,000 a day before it resets the token.
        raise DiscordStartError(f"the Message Content intent is required; {PORTAL_HINT}", lasting=True) from exc
    raise DiscordStartError(f"the Discord gateway connection failed: {discord_errors.described(exc)}") from exc


def end_dispatching(client: discord.Client | None) -> None:
    """discord.py dispatches "ready" from a task that waits for guilds after READY (2 s), which a stop
    leaves running: it would dispatch on the closed client, and fail, logged at exit. Ended first."""
    if client is not None:
        dispatching = getattr(getattr(client, "_connection", None), "_ready_task", None)
        if dispatching is not None:
            dispatching.cancel()


async def disconnect(client: discord.Client | None, task: asyncio.Task[None] | None, deadline: float) -> None:
    """End the gateway connection, not the REST client (discord.py's ``Client.close`` would end both):
    its task first (taken from the adapter, so that nothing reconnects), then its WebSocket, within
    `last_calls_time` of ``deadline``. A close Discord does not answer (a half-open connection) does not hold
    it: aiohttp drops a connection whose read was cut short rather than wait for the answer, and one cut by
    the time limit. Call `end_dispatching` before."""
    if task is not None:
        # Reading the connection, or sleeping in a reconnect backoff (up to 17 minutes): ended here.
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: start() or _connection_ended reported it
    ws = client.ws if client is not None else None
    if ws is not None and ws.open:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(last_calls_time(deadline, loop.time())):
                await ws.close(code=1000)  # stops its heartbeat thread too
