"""Slack's Web API rate limits for the fake, opt-in (`FakeSlack.enforce_rate_limits`).

Slack's rate-limit guide counts calls "per API method per app per workspace" in tiers (Tier 2:
20+ a minute, Tier 3: 50+, Tier 4: 100+), and gives ``chat.postMessage`` a special limit of
its own: about one message a second per channel (short bursts allowed, with no guarantee),
plus a workspace-wide limit it does not state. Past a limit Slack answers HTTP 429 with a
``Retry-After`` header (seconds) and ``{"ok": false, "error": "ratelimited"}``.

Each limit is kept here as a sliding window of the calls it let through: ``chat.postMessage``
per channel (a thread is its channel's), and each tiered method per workspace. A call that
would put more than a window's count in it is refused, ``Retry-After`` being the whole
seconds until the oldest call in that window leaves it; a refused call did nothing, so it is
not counted, nor is one Slack answered with another error. No burst is allowed: a bot this
fake never refuses keeps inside Slack's limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from platforms.fakes._sliding_windows import MonotonicClock, SlidingWindows, Window

__all__ = ["PER_CHANNEL", "TIERS", "MonotonicClock", "RateLimited", "SlackRateLimits", "Window"]

PER_CHANNEL = Window(1, 1.0)
"""``chat.postMessage``: one message a second per channel."""
TIER_2, TIER_3, TIER_4 = Window(20, 60.0), Window(50, 60.0), Window(100, 60.0)
TIERS: Mapping[str, Window] = {
    "chat.update": TIER_3,
    "chat.delete": TIER_3,
    "conversations.history": TIER_3,
    "conversations.replies": TIER_3,
    # Slack has listed the upload methods at several tiers over time; its method pages now give
    # both Tier 4, which the Slack adapter paces to (`platforms.slack.PACING`).
    "files.getUploadURLExternal": TIER_4,
    "files.completeUploadExternal": TIER_4,
}
"""The tiered methods a bot writes and reads back with, and the window each is counted in per workspace."""


@dataclass(frozen=True)
class Admitted:
    at: float
    """When it was let through, on the fake's clock."""
    method: str
    channel: str
    """The channel it wrote to ("" for an upload URL, which names none)."""


@dataclass(frozen=True)
class Refusal:
    at: float
    method: str
    channel: str
    retry_after: int
    limit: str
    """Which window was full: ``channel`` or ``tier``."""


class RateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"ratelimited, retry after {retry_after}")
        self.retry_after = retry_after


class SlackRateLimits:
    """The windows, the calls they let through (`calls`) and the 429s they gave (`refused`)."""

    def __init__(self, clock: MonotonicClock, *, per_channel: Window = PER_CHANNEL,
                 tiers: Mapping[str, Window] = TIERS) -> None:
        self._windows = SlidingWindows(clock)
        self._per_channel = per_channel
        self._tiers = dict(tiers)
        self.calls: list[Admitted] = []
        """Every counted call let through, in order."""
        self.refused: list[Refusal] = []
        """Every 429 given, in order."""

    def admit(self, method: str, params: Mapping[str, Any]) -> Admitted | None:
        """Count a call of ``method`` (None for one no limit counts), or raise `RateLimited`. Call
        `withdraw` with it if Slack then answers it with an error."""
        channel = str(params.get("channel") or "")
        windows = self._windows_of(method, channel)
        if not windows:
            return None
        now = self._windows.now()
        for kind, key, window in windows:
            retry_after = self._windows.retry_after(key, window, now)
            if retry_after is not None:
                self.refused.append(Refusal(now, method, channel, retry_after, kind))
                raise RateLimited(retry_after)
        self._windows.count([key for _, key, _ in windows], now)
        admitted = Admitted(now, method, channel)
        self.calls.append(admitted)
        return admitted

    def withdraw(self, admitted: Admitted) -> None:
        """The call failed for another reason (``channel_not_found``, say): it wrote nothing."""
        self.calls.remove(admitted)
        self._windows.uncount([key for _, key, _ in self._windows_of(admitted.method, admitted.channel)], admitted.at)

    def _windows_of(self, method: str, channel: str) -> list[tuple[str, tuple[str, str], Window]]:
        if method == "chat.postMessage":
            return [("channel", (method, channel), self._per_channel)] if channel else []
        tier = self._tiers.get(method)
        return [] if tier is None else [("tier", (method, ""), tier)]
