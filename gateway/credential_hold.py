"""Holding a platform's sends while it refuses the bot's credentials (`platforms.base.Unauthorized`).

A revoked or rotated token is refused in every chat alike: failing each part at once, as a
chat's own refusal (`Forbidden`) is failed, would lose every reply written until an operator
fixes the token. Instead the platform is *held*:

- the first refusal is logged once (a warning naming the platform and the platform's answer),
  not once per part or per try;
- while held, one part at a time, from any chat, tries again (a *probe*), the first after
  `FIRST_PROBE` seconds, then twice as long each time up to `MAX_PROBE`; every other chat's
  next part waits for the hold to end, so chats keep their order and the platform is not called
  once per chat per minute with a token it refuses (Discord restricts an IP after too many 401s);
- any answer that is not a refusal of the credentials (a success, a chat's own refusal, a 429)
  ends the hold, logged once, and every held chat goes on at once. A restart with the fixed token
  sends what is still pending as any restart does.

A part does not give up while its platform is held: the time a part spends held does not count
toward the outbox's give-up rule (``give_up_after`` seconds, the webhook's ``retry_for_seconds``),
which still applies to every other failure, so a token refused all night loses nothing. The holds
are journaled (`OutboxRows.begin_hold`): one on when the process stopped is on again at the next
start (its first part tries at once), and the time between counts as held.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from agent import Clock
from gateway.store import OutboxRows
from platforms.base import Unauthorized

log = logging.getLogger("gateway.outbox")

FIRST_PROBE, MAX_PROBE = 5.0, 60.0


@dataclass
class _Hold:
    # Both on the monotonic clock: a wall clock stepped back an hour put the next probe off an hour.
    since: float
    delay: float = FIRST_PROBE
    next_probe: float = 0.0
    prober: int | None = None
    """The row trying now, on behalf of every held chat."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set, and replaced, whenever a probe ends: the waiting chats look again."""

    def bump(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class CredentialHolds:
    """Which platforms are held, and whose turn it is to try; each hold journaled in ``store``.
    Use from one event loop."""

    def __init__(self, clock: Clock, store: OutboxRows) -> None:
        self._clock = clock
        self._store = store
        self._holds: dict[str, _Hold] = {}
        self._periods: dict[str, list[tuple[float, float | None]]] = {}
        for platform, since, until in store.hold_periods():
            self._periods.setdefault(platform, []).append((since, until))
            if until is None:  # on when the last process stopped: its first part tries at once
                self._holds[platform] = _Hold(since=since)
                log.info("outbox: %s refused the bot's credentials when the gateway stopped; its messages are"
                         " held until it takes them again", platform)

    def held_since(self, platform: str, since: float) -> float:
        """Seconds ``platform`` held its parts between ``since`` and now (the hold on now included):
        time that does not count toward a part's giving up."""
        now = self._clock.time()
        return sum(max(0.0, min(now if until is None else until, now) - max(start, since))
                   for start, until in self._periods.get(platform, ()))

    def claim(self, platform: str, row_id: int) -> float:
        """0 when ``row_id`` may call the platform now (it is not held, or the row is its probe);
        else the seconds to wait at most before asking again (`wait` ends sooner on any change)."""
        hold = self._holds.get(platform)
        if hold is None or hold.prober == row_id:
            return 0.0
        if hold.prober is not None:
            return MAX_PROBE
        wait = hold.next_probe - self._clock.monotonic()
        if wait > 0:
            return wait
        hold.prober = row_id
        return 0.0

    def changed(self, platform: str) -> asyncio.Event | None:
        """Set when the hold of ``platform`` changes (a probe ends): its waiting chats look again.
        None when it is not held. The chats wait on the outbox's pacer, which tells a shutdown
        when each will call the platform next."""
        hold = self._holds.get(platform)
        return None if hold is None else hold.changed

    def refused(self, platform: str, row_id: int, error: Unauthorized) -> float:
        """The platform refused the credentials for ``row_id``: hold it (logged when it begins) and
        return the seconds until the next probe."""
        now = self._clock.monotonic()
        hold = self._holds.get(platform)
        if hold is None:
            hold = self._holds[platform] = _Hold(since=now)
            self._store.begin_hold(platform, now)
            self._periods.setdefault(platform, []).append((now, None))
            log.warning("outbox: %s refuses the bot's credentials (%s: %s); its messages are held, in order,"
                        " and sent once it takes them again (a fixed token and a restart); none gives up meanwhile",
                        platform, type(error).__name__, error)
        elif hold.prober == row_id:
            hold.delay = min(hold.delay * 2, MAX_PROBE)
            hold.prober = None
        hold.next_probe = max(hold.next_probe, now + hold.delay)
        hold.bump()
        return hold.next_probe - now

    def answered(self, platform: str) -> None:
        """The platform answered a call other than by refusing the credentials: it takes them."""
        hold = self._holds.pop(platform, None)
        if hold is None:
            return
        self._store.end_hold(platform, self._clock.time())
        self._periods[platform] = [(since, until) for _, since, until in self._store.hold_periods(platform)]
        log.info("outbox: %s takes the bot's credentials again after %.0fs; sending what was held", platform,
                 self._clock.monotonic() - hold.since)
        hold.bump()

    def release(self, platform: str, row_id: int) -> None:
        """``row_id``'s probe ended without an answer (a network error, a cancellation): another may try."""
        hold = self._holds.get(platform)
        if hold is not None and hold.prober == row_id:
            hold.prober = None
            hold.bump()
