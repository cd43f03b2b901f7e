"""What an adapter's connection to its platform is doing now: for ``/healthz``, the
``switchboard_platform_up`` metric and the operator console (docs/gateway.md#platform-connections).

    connected       the connection is up (Socket Mode, the Discord gateway, Telegram's long poll)
    reconnecting    it dropped, or a poll failed; the SDK is retrying by itself, as it always has
    down            the platform refused the gateway (a revoked token, a disallowed intent, another
                    instance polling the same bot): retrying will not fix it, an operator must
    no_connection   the platform connects to the gateway (webhooks, Slack's HTTP mode, Telegram's
                    webhook mode, the web chat, the terminal): there is nothing to watch

A ``reason`` says what happened in words an operator can act on; it is built from the
platform's own error texts and exception names, never from URLs or tokens.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

log = logging.getLogger(__name__)

Status = Literal["connected", "reconnecting", "down", "no_connection"]

NO_CONNECTION_REASON = "the platform connects to the gateway (webhook or HTTP): no connection to watch"


@dataclass(frozen=True, slots=True)
class ConnectionState:
    status: Status
    reason: str | None = None
    """Why it is not connected (None when connected)."""
    since: float | None = None
    """Epoch seconds the status began; None for ``no_connection``."""

    @property
    def up(self) -> bool:
        """Whether events can arrive: connected, or nothing to connect."""
        return self.status in ("connected", "no_connection")

    def to_json(self) -> dict[str, object]:
        return {"status": self.status, "reason": self.reason, "since": self.since}


NO_CONNECTION = ConnectionState("no_connection", NO_CONNECTION_REASON)


@runtime_checkable
class Connects(Protocol):
    """An adapter that holds a connection of its own to its platform."""

    def connection(self) -> ConnectionState:
        """Its state now; ``no_connection`` in a mode where the platform connects to the gateway."""


class TokenWatch:
    """Whether the platform still takes the bot's token, from what it answers the adapter's calls:
    refused (`platforms.base.Unauthorized`), the platform is ``down`` with a reason naming the
    setting to fix, logged once as an error on ``logger``, until a call succeeds again. For a
    refusal no connection shows: a webhook or HTTP mode has none, and Slack's Socket Mode runs
    on another token."""

    def __init__(self, platform: str, title: str, fix: str, logger: logging.Logger = log) -> None:
        self._platform, self._log, self._fix = platform, logger, fix
        self.title = title
        """The platform as people write it (``Slack``), for log lines."""
        self.refusal: ConnectionState | None = None
        self._taken_again: asyncio.Event | None = None
        """Set once the token is taken again, for those waiting (`taken`); made when the first waits."""

    def refused(self, cause: str) -> None:
        if self.refusal is not None:
            return
        reason = f"{self.title} refused the bot token ({cause}); {self._fix}"
        self._log.error("%s: %s", self._platform, reason)
        self.refusal = ConnectionState("down", reason, time.time())

    def accepted(self) -> None:
        if self.refusal is not None:
            self._log.info("%s: %s takes the bot token again (was down: %s)", self._platform, self.title,
                           self.refusal.reason)
            self.refusal = None
        if self._taken_again is not None:
            self._taken_again.set()
            self._taken_again = None

    async def taken(self) -> None:
        """Return once the platform takes the token: at once unless it is refused, else once a call
        with it succeeds again (`accepted`)."""
        while self.refusal is not None:
            if self._taken_again is None:
                self._taken_again = asyncio.Event()
            await self._taken_again.wait()


class ConnectionWatch:
    """The state of one adapter's connection, changed by the SDK's signals. Each change is
    logged once: a drop as a warning, ``down`` as an error naming the cause, a recovery as info.
    Starts ``reconnecting`` ("not connected yet") until the adapter reports it is up."""

    def __init__(self, platform: str) -> None:
        self._platform = platform
        self._state = ConnectionState("reconnecting", "not connected yet", time.time())
        self._told: set[str] = set()
        """The reasons of this spell of ``reconnecting`` logged so far: each once, however often it comes back."""
        self._up_once = False

    @property
    def state(self) -> ConnectionState:
        return self._state

    def connected(self) -> None:
        if self._state.status == "connected":
            return
        if self._state.status == "down" or self._told:
            log.info("%s: connected again (was %s: %s)", self._platform, self._state.status, self._state.reason)
        self._told.clear()
        self._up_once = True
        self._state = ConnectionState("connected", None, time.time())

    def reconnecting(self, reason: str) -> None:
        """A drop the SDK retries by itself. Ignored while ``down``: a refusal stays the news
        until the platform accepts the gateway again. While already ``reconnecting`` the reason
        follows the latest cause, its ``since`` kept: an outage that began with "connection closed"
        and goes on for want of a valid token showed the first for as long as it lasted. Each new
        cause of a spell is logged once (before the first connection, none: the adapter's start tells)."""
        if self._state.status == "down" or self._state.reason == reason:
            return
        if self._state.status == "reconnecting":
            if self._up_once and reason not in self._told:
                log.warning("%s: still reconnecting, now: %s", self._platform, reason)
                self._told.add(reason)
            self._state = dataclasses.replace(self._state, reason=reason)
            return
        log.warning("%s: connection lost, reconnecting: %s", self._platform, reason)
        self._told = {reason}
        self._state = ConnectionState("reconnecting", reason, time.time())

    def down(self, reason: str, *, retrying: bool = False) -> None:
        """``retrying``: the refusal ends once something outside changes (another poller stops),
        which the gateway notices by itself as it keeps trying."""
        if self._state.status == "down" and self._state.reason == reason:
            return
        how = ("refuses the connection; the gateway keeps trying until it is let in" if retrying else
               "refused the connection and the gateway cannot fix it by retrying")
        log.error("%s: the platform %s: %s", self._platform, how, reason)
        self._state = ConnectionState("down", reason, time.time())
