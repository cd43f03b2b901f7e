"""What the gateway's owners report as it happens, for whoever watches: metrics, traces, the console.

Each owner makes one call per event (`TurnRunner` when a turn starts and ends, `Gateway`
when a platform event arrives, the outbox's `Sender` when a part is settled, a platform
asks it to slow down, or it looks a part up); `GatewayEvents` hands the call on to every subscribed listener that
defines a method of that name. A listener that raises is logged and skipped: watching the
gateway never changes what it does. Children are watched through the agent's hooks instead
(`subagent_start`, `subagent_stop`, `model_call`, `tool_start`, `tool_end`), since the
lifecycle knows nothing of the gateway.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent import TurnResult
    from gateway.sessions import GatewaySession, RunningTurn, WorkItem
    from gateway.store import OutboxRow

log = logging.getLogger("gateway.events")


class GatewayListener:
    """The events, with what each passes; a listener defines only the ones it wants."""

    def turn_started(self, session: GatewaySession, item: WorkItem, running: RunningTurn) -> None:
        """A turn of ``session`` begins (before the model is called)."""

    def turn_ended(self, session: GatewaySession, item: WorkItem, running: RunningTurn, result: TurnResult | None,
                   outcome: str, seconds: float) -> None:
        """The turn is over: ``result`` None when it crashed; ``outcome`` as `gateway.replies.outcome`
        says (done, stopped, superseded, shutdown, failed); ``seconds`` it ran."""

    def inbound(self, platform: str, *, duplicate: bool) -> None:
        """A platform handed the gateway an event (``duplicate``: one it had seen before)."""

    def settled(self, row: OutboxRow, status: str) -> None:
        """An outbox part reached a final state: ``sent`` or ``failed``."""

    def rate_limited(self, platform: str, retry_after: float) -> None:
        """A platform answered 429 (or its SDK's equivalent), asking to wait ``retry_after`` seconds."""

    def looked_up(self, platform: str, outcome: str) -> None:
        """The outbox asked a platform whether a part went out already (`platforms.base.FindsSent`):
        ``found`` (not sent again), ``not_found`` (sent), or ``unknown`` (the platform could not tell)."""


class GatewayEvents:
    """The fan-out: the same methods as `GatewayListener`, calling each subscriber in turn."""

    def __init__(self) -> None:
        self._listeners: list[object] = []

    def subscribe(self, listener: object) -> None:
        self._listeners.append(listener)

    def unsubscribe(self, listener: object) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _emit(self, name: str, *args: Any, **kwargs: Any) -> None:
        for listener in list(self._listeners):
            method = getattr(listener, name, None)
            if method is None:
                continue
            try:
                method(*args, **kwargs)
            except Exception:
                log.exception("%s of %s failed", name, type(listener).__name__)

    def turn_started(self, session: GatewaySession, item: WorkItem, running: RunningTurn) -> None:
        self._emit("turn_started", session, item, running)

    def turn_ended(self, session: GatewaySession, item: WorkItem, running: RunningTurn, result: TurnResult | None,
                   outcome: str, seconds: float) -> None:
        self._emit("turn_ended", session, item, running, result, outcome, seconds)

    def inbound(self, platform: str, *, duplicate: bool) -> None:
        self._emit("inbound", platform, duplicate=duplicate)

    def settled(self, row: OutboxRow, status: str) -> None:
        self._emit("settled", row, status)

    def looked_up(self, platform: str, outcome: str) -> None:
        self._emit("looked_up", platform, outcome)

    def rate_limited(self, platform: str, retry_after: float) -> None:
        self._emit("rate_limited", platform, retry_after)
