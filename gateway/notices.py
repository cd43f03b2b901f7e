"""Long-running "still working" notices for one turn.

The first notice comes after one full interval of a still-running turn; each
later one edits that same message. The notifier belongs to exactly one turn and
is disarmed the instant that turn ends, before its final reply is queued, so no
notice can follow the reply and a queued follow-up never inherits it.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from typing import Literal

from agent import Clock

log = logging.getLogger("gateway.notices")

Send = Callable[[str, int], None]
"""``send(text, n)``: n = 0 sends the notice, later n edit it in place."""
Detail = Callable[[], str | None]


def format_elapsed(seconds: float, interval: float = 1.0) -> str:
    """Seconds under a minute; from a minute on, minutes and the seconds left (``1 min 30 s``,
    ``2 min``). Seconds carry the decimals the interval needs, so consecutive notices one
    interval apart never read the same."""
    decimals = 0 if interval >= 1 else min(3, math.ceil(-math.log10(interval)))
    seconds = round(seconds, decimals)
    if seconds < 60:
        return f"{seconds:.{decimals}f} s"
    minutes, rest = divmod(seconds, 60)
    rest = round(rest, decimals)
    return f"{int(minutes)} min" + (f" {rest:.{decimals}f} s" if rest else "")


def notice_text(elapsed: float, interval: float, mode: bool | Literal["generic"], detail: str | None) -> str:
    when = format_elapsed(elapsed, interval)
    if mode == "generic" or not detail:
        return f"⏳ Still working — {when}"
    return f"⏳ Working — {when} — {detail}"


def final_text(outcome: str, elapsed: float, interval: float = 1.0, *, subagents: int = 0, endings: str = "") -> str:
    """The one line a turn's notice or card becomes when the turn ends, by ``outcome``: done,
    stopped, superseded, failed, or shutdown. ``endings``: how those of its subagents that did not
    succeed ended (`gateway.child_states.endings`), so a done card of failed work does not read as a success."""
    if outcome == "done":
        children = f" · {subagents} subagent{'s' if subagents != 1 else ''}" if subagents else ""
        children += f" ({endings})" if children and endings else ""
        return f"✓ Done in {format_elapsed(elapsed, interval)}{children}"
    if outcome == "stopped":
        return "⏹ Stopped"
    if outcome == "superseded":
        return "⏹ Stopped for your next message"
    if outcome == "shutdown":
        return "⏹ Interrupted by a gateway restart"
    return "⚠️ Failed"


class Notifier:
    """Arm with `start`; `disarm` is synchronous and final."""

    def __init__(self, *, interval: float, mode: bool | Literal["generic"], send: Send, detail: Detail,
                 clock: Clock) -> None:
        self.interval = interval
        self.mode = mode
        self._send = send
        self._detail = detail
        self._clock = clock
        self._task: asyncio.Task | None = None
        self._armed = False
        self._held = False
        self.sent = 0
        """Notices sent so far (not those that failed): 0 means the chat has none to finalise."""

    def tool_started(self, name: str) -> None:
        """Notices read the turn's state when they are due; events need no handling."""

    def tool_finished(self, name: str, ok: bool) -> None:
        """See `tool_started`."""

    subagents = 0
    """Notices do not count subagents (the card does)."""

    def endings(self) -> str:
        """See `subagents`."""
        return ""

    @property
    def enabled(self) -> bool:
        return self.interval > 0 and self.mode is not False

    def start(self) -> None:
        if not self.enabled:
            return
        self._armed = True
        self._task = asyncio.ensure_future(self._run())

    def disarm(self) -> None:
        self._armed = False
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def hold(self, held: bool) -> None:
        """While ``held`` (the turn waits for its model to come back, its chat told so), the notices due are not
        sent: "still working" would contradict that notice. They keep their times, counted from the turn's start."""
        self._held = held

    async def _run(self) -> None:
        started = self._clock.monotonic()
        while True:
            await self._clock.sleep(self.interval)
            if not self._armed:
                return
            if self._held:
                continue
            try:
                detail = self._detail() if self.mode != "generic" else None
                self._send(notice_text(self._clock.monotonic() - started, self.interval, self.mode, detail), self.sent)
            except Exception:  # a notice must never break the turn it describes
                log.exception("sending a long-running notice failed")
                continue  # not sent (a full disk refused it): the next one is sent, not an edit of nothing
            self.sent += 1
