"""Liveness: one monitor for all running children, reading only their activity records.

Progress is any change of (API calls, current tool, last activity time). A child
is stalled after ``stale_between_turns_seconds`` without progress between model
turns, or ``stale_in_tool_seconds`` inside one tool. The optional idle cap
(``child_timeout_seconds``) ends a child that made no progress for a whole
window; at 80 % of the window it is warned once through its steer channel, and
any progress opens a new window. While a tool runs the idle cap is suspended:
only the in-tool stall threshold can end it.

Silence is measured on the clock's monotonic time, which stops while the machine is
suspended. It does not stop while the process is paused (SIGSTOP, ``docker pause``) or
its event loop is held up, when no child can make progress either: a heartbeat that
comes late by some time takes that time off every child's silence (`Watch.excuse`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent import AgentSession, Clock
from lifecycle.settings import DelegationSettings

log = logging.getLogger("lifecycle.liveness")

BUDGET_WARNING = "[delegation budget warning]"
WARNING_FRACTION = 0.8
MIN_IDLE_CAP = 30.0


@dataclass(frozen=True, slots=True)
class Timeout:
    """Why a child was stopped for lack of progress; becomes the timeout entry's fields."""

    timeout_seconds: float
    """The limit that fired: the stall threshold if it came first, else the idle cap."""
    timed_out_after_seconds: float
    last_event_age: float
    timeout_phase: str
    api_calls: int
    """Model calls that had answered (a call still in flight does not count)."""
    stalled: bool

    def message(self) -> str:
        if self.stalled:
            return (f"Subagent stopped making progress after {self.api_calls} API call(s) — no activity for "
                    f"{self.last_event_age:.0f}s (stall threshold {self.timeout_seconds:g}s); it was stopped.")
        if self.api_calls == 0:
            # Idle is measured from when it began running: it was in its first model call (or waiting for a
            # request slot), not stuck before it.
            return (f"Subagent timed out after {self.timeout_seconds:g}s idle with 0 API call(s) completed — "
                    "its first model request had no answer in that window.")
        return (f"Subagent timed out after {self.timeout_seconds:g}s idle with {self.api_calls} API call(s) "
                "completed — no progress in that window.")


def idle_cap(settings: DelegationSettings) -> float | None:
    """The configured idle cap: off at ≤ 0, at least 30 s otherwise."""
    cap = settings.child_timeout_seconds
    return None if cap <= 0 else max(MIN_IDLE_CAP, cap)


class Watch:
    """Liveness state of one running child, created at its first check (most children finish
    long before one): progress it made before then counts from its last activity."""

    __slots__ = ("session", "started", "fingerprint", "last_progress", "warned", "on_timeout")

    def __init__(self, session: AgentSession, started: float, on_timeout: Callable[[Timeout], None]) -> None:
        self.session = session
        self.started = started
        self.fingerprint = _fingerprint(session)
        self.last_progress = max(started, session.activity.last_activity)
        self.warned = False
        self.on_timeout = on_timeout

    def excuse(self, seconds: float, now: float) -> None:
        """The process did not run for ``seconds`` before ``now`` (paused): not the child's silence."""
        self.last_progress = min(now, self.last_progress + seconds)

    def check(self, now: float, settings: DelegationSettings, cap: float | None) -> Timeout | None:
        activity = self.session.activity
        fingerprint = _fingerprint(self.session)
        if fingerprint != self.fingerprint:
            self.fingerprint, self.last_progress, self.warned = fingerprint, now, False
        quiet = now - self.last_progress
        in_tool = activity.current_tool is not None
        stall = settings.stale_in_tool_seconds if in_tool else settings.stale_between_turns_seconds
        limits = [(stall, True)] if cap is None or in_tool else [(stall, True), (cap, False)]
        fired = [limit for limit in limits if quiet >= limit[0]]
        if fired:
            limit, stalled = min(fired)
            return self._timeout(now, limit, quiet, stalled=stalled)
        if cap is not None and not in_tool and not self.warned and quiet >= WARNING_FRACTION * cap:
            self.warned = True
            self.session.steer(budget_warning(quiet, cap))
        return None

    def _timeout(self, now: float, limit: float, quiet: float, *, stalled: bool) -> Timeout:
        # Completed calls, as the entry's api_calls counts them: a child stuck in its first
        # model call has made none.
        return make_timeout(self.session.activity.answered_api_calls, now - self.started, limit, quiet,
                            stalled=stalled)


def budget_warning(quiet: float, cap: float) -> str:
    """What a child is told (through its steer channel) at `WARNING_FRACTION` of its idle cap."""
    return (
        f"{BUDGET_WARNING} You have made no progress for {quiet:.0f}s of your {cap:g}s idle budget. "
        "Finish the current step and return your summary now; work not returned before the budget "
        "runs out is lost."
    )


def make_timeout(api_calls: int, running_for: float, limit: float, quiet: float, *, stalled: bool) -> Timeout:
    """The `Timeout` of a child stopped after ``quiet`` seconds without progress (``limit`` fired),
    ``running_for`` seconds after it started running. Engines that watch children their own way
    (timers on a workflow engine) report stops in these same words."""
    return Timeout(
        timeout_seconds=limit,
        timed_out_after_seconds=round(running_for, 3),
        last_event_age=round(quiet, 2),
        timeout_phase="before_first_llm_call" if api_calls == 0 else "after_llm_calls",
        api_calls=api_calls,
        stalled=stalled,
    )


def _fingerprint(session: AgentSession) -> tuple:
    a = session.activity
    return (a.api_calls, a.current_tool, a.last_activity)


async def monitor(watches: Callable[[], Iterable[Watch]], settings: Callable[[], DelegationSettings],
                  clock: Clock) -> None:
    """Check every running child each heartbeat; runs until cancelled."""
    while True:
        current = settings()
        before = clock.monotonic()
        await clock.sleep(current.heartbeat_interval_seconds)
        now = clock.monotonic()
        paused = now - before - current.heartbeat_interval_seconds
        cap = idle_cap(current)
        for watch in list(watches()):
            try:
                if paused > 0:
                    watch.excuse(paused, now)
                verdict = watch.check(now, current, cap)
            except Exception:  # one odd child must not blind the monitor to the rest
                log.exception("liveness check failed")
                continue
            if verdict is not None:
                log.warning("child %s: %s", watch.session.session_id, verdict.message())
                watch.on_timeout(verdict)
        await asyncio.sleep(0)
