"""Discord's REST rate limits for the fake, opt-in (`FakeDiscord.enforce_rate_limits`).

Discord limits each route per "major parameter" (a channel's id for ``/channels/{channel_id}/…``)
in buckets: a bucket lets ``limit`` requests through, then refuses until it resets, and every
answer says where it stands in ``X-RateLimit-Limit``, ``-Remaining``, ``-Reset`` (epoch
seconds), ``-Reset-After`` (seconds) and ``-Bucket`` (an opaque id shared by routes that share
the bucket). Creating messages in a channel is about 5 per 5 s. Past a bucket Discord answers
429 with ``{"message", "retry_after", "global": false}``, ``Retry-After``, ``X-RateLimit-Scope:
user`` and a ``Via`` header (discord.py takes a 429 without ``Via`` for Cloudflare's ban and
raises); past the global limit (50 requests a second per bot) the same with ``global: true``
and ``X-RateLimit-Global``.

Each route template under ``/channels/{channel_id}`` has a bucket per channel here (a thread is
a channel of its own, as on Discord), a fixed window opened by its first request. Every
request counts, as on Discord, an answered error too; a 429 does not. Time is the real clock
by default, which discord.py's own waits run on: pass a shorter ``window`` to keep tests quick.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def time(self) -> float: ...


@dataclass(frozen=True)
class Window:
    """``count`` requests per ``seconds``, from the bucket's first request."""

    count: int
    seconds: float


PER_CHANNEL_ROUTE = Window(5, 5.0)
GLOBAL = Window(50, 1.0)


@dataclass
class _Bucket:
    resets_at: float = 0.0
    used: int = 0


@dataclass(frozen=True)
class Refusal:
    at: float
    route: str
    channel: str
    retry_after: float
    scope: str
    """``user`` (a route's bucket) or ``global``."""


@dataclass
class DiscordRateLimits:
    """The buckets, the requests they let through (`calls`: time, route, channel) and the 429s
    they gave (`refused`)."""

    clock: Clock = time  # type: ignore[assignment]
    window: Window = PER_CHANNEL_ROUTE
    global_window: Window = GLOBAL
    calls: list[tuple[float, str, str]] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    _buckets: dict[tuple[str, str], _Bucket] = field(default_factory=dict)
    _global: _Bucket = field(default_factory=_Bucket)

    def admit(self, route: str, channel: str) -> tuple[int, dict[str, str], dict[str, object]] | dict[str, str]:
        """The headers to answer a request of ``route`` (``"PATCH /channels/{channel_id}/…"``) to
        ``channel`` with, or the 429 Discord would answer: (status, headers, body)."""
        now = self.clock.monotonic()
        if _spent(self._global, self.global_window, now):
            return self._refuse(route, channel, self._global.resets_at - now, "global", {})
        bucket = self._buckets.setdefault((route, channel), _Bucket())
        spent = _spent(bucket, self.window, now)
        reset_after = bucket.resets_at - now
        headers = {"X-RateLimit-Limit": str(self.window.count),
                   "X-RateLimit-Reset": f"{self.clock.time() + reset_after:.3f}",
                   "X-RateLimit-Reset-After": f"{reset_after:.3f}",
                   "X-RateLimit-Bucket": hashlib.sha1(route.encode()).hexdigest()[:16]}
        if spent:
            return self._refuse(route, channel, reset_after, "user", {**headers, "X-RateLimit-Remaining": "0"})
        bucket.used += 1
        self._global.used += 1
        self.calls.append((now, route, channel))
        return {**headers, "X-RateLimit-Remaining": str(self.window.count - bucket.used)}

    def _refuse(self, route: str, channel: str, retry_after: float, scope: str,
                headers: dict[str, str]) -> tuple[int, dict[str, str], dict[str, object]]:
        self.refused.append(Refusal(self.clock.monotonic(), route, channel, retry_after, scope))
        headers = {**headers, "Via": "1.1 google", "Retry-After": str(max(1, round(retry_after))),
                   "X-RateLimit-Scope": scope}
        if scope == "global":
            headers["X-RateLimit-Global"] = "true"
        body = {"message": "You are being rate limited.", "retry_after": round(retry_after, 3),
                "global": scope == "global", "code": 0}
        return 429, headers, body


def _spent(bucket: _Bucket, window: Window, now: float) -> bool:
    """Whether ``bucket`` (its window opened or reopened now, if the last one is over) is used up."""
    if now >= bucket.resets_at:
        bucket.resets_at, bucket.used = now + window.seconds, 0
    return bucket.used >= window.count
