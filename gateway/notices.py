"""Long-running "still working" notices for one turn.

The first notice comes after one full interval of a still-running turn; each
later one edits that same message. The notifier belongs to exactly one turn and
is disarmed the instant that turn ends, before its final reply is queued, so no
notice can follow the reply and a queued follow-up never inherits it. While the
turn waits for its model to come back (`Notifier.hold`), a notice already sent
reads so (`HELD`), and none is sent anew.
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
WAITING_FOR_MODEL = "Waiting for the model to come back"
HELD = f"⏳ {WAITING_FOR_MODEL}"
"""What a notice reads while its turn waits for its model's server known to be down (`Notifier.hold`), as a progress
card's headline does then (`gateway.progress_card.HELD`), whatever the mode: "still working" is what it is not."""


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


def held_text(elapsed: float, interval: float) -> str:
    """`HELD`, timed as a notice is (counted from the turn's start)."""
    return f"{HELD} — {format_elapsed(elapsed, interval)}"


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
        self._started = 0.0
        self._last: str | None = None
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
        self._started = self._clock.monotonic()
        self._task = asyncio.ensure_future(self._run())

    def disarm(self) -> None:
        self._armed = False
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def hold(self, held: bool) -> None:
        """While ``held`` (the turn waits for its model to come back, its chat told so), no notice is sent anew:
        "still working" would contradict that notice. One already in the chat reads so (`HELD`) at once, its time
        refreshed as ever, and as before at once once released: left as it was, it said for up to ten minutes that
        the bot was writing. Where the platform cannot edit, the publisher drops these edits (`TurnDisplay.edits`).
        Nothing after `disarm`: it stays final."""
        if held == self._held:
            return
        self._held = held
        if self._armed and self.sent:
            self._notify()

    async def _run(self) -> None:
        while True:
            await self._clock.sleep(self.interval)
            if not self._armed:
                return
            if self._held and not self.sent:  # the chat's own notice of the wait says it all
                continue
            self._notify()

    def _notify(self) -> None:
        try:
            elapsed = self._clock.monotonic() - self._started
            if self._held:
                text = held_text(elapsed, self.interval)
            else:
                text = notice_text(elapsed, self.interval, self.mode,
                                   self._detail() if self.mode != "generic" else None)
            if text == self._last:  # a hold changed as a notice was due: one edit says it
                return
            self._send(text, self.sent)
        except Exception:  # a notice must never break the turn it describes
            log.exception("sending a long-running notice failed")
            return  # not sent (a full disk refused it): the next one is sent, not an edit of nothing
        self.sent += 1
        self._last = text
