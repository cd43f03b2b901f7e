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
which still applies to every other failure, so a token refused all night loses nothing. A token
refused on and off for weeks keeps the last `KEPT_PERIODS` periods of this process one by one, and
the older ones as their sum: a part waiting through more holds than that counts the gaps between
the oldest as held too (given more time, never less). The holds are journaled
(`OutboxRows.begin_hold`): one on when the process stopped is on again at the next start (its
first part tries at once); the time between counts toward nothing, as for any part.
A platform no longer configured is not held: its parts stay pending, untried, until it is
configured again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from agent import Clock
from gateway.store import OutboxRows
from platforms.base import Unauthorized

log = logging.getLogger("gateway.outbox")

FIRST_PROBE, MAX_PROBE = 5.0, 60.0
KEPT_PERIODS = 1024
"""Periods of a platform's holds in this process kept apart: every part's give-up clock reads them all."""


@dataclass
class _Hold:
    # Both on the monotonic clock: a wall clock stepped back an hour put the next probe off an hour.
    since: float
    delay: float = FIRST_PROBE
    next_probe: float = 0.0
    prober: int | None = None
    """The row trying now, on behalf of every held chat."""
    held_before: float = 0.0
    """Seconds it was on before this start (journaled open when the last process stopped), the
    downtime included: the log says how long the platform refused the token, not this process."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set, and replaced, whenever a probe ends: the waiting chats look again."""

    def bump(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class CredentialHolds:
    """Which platforms are held, and whose turn it is to try; each hold journaled in ``store``.
    Use from one event loop."""

    def __init__(self, clock: Clock, store: OutboxRows, platforms: Collection[str]) -> None:
        """``platforms``: those configured now. A hold of another one stays journaled, open, for its
        parts, which stay pending without an adapter; it is on again once the platform is configured."""
        self._clock = clock
        self._store = store
        self._holds: dict[str, _Hold] = {}
        self._journaled: dict[str, list[tuple[float, float | None]]] = {}
        """The periods journaled before this start, on the wall clock (the only one that outlives a process)."""
        self._awake: dict[str, list[tuple[float, float | None]]] = {}
        """The periods of this process, on the monotonic clock, as a part's give-up clock counts
        (`gateway.give_up`): a suspend during a hold counts toward neither. At most `KEPT_PERIODS`."""
        self._folded: dict[str, tuple[float, float, float]] = {}
        """The periods of this process older than those: when the first began, when the last ended, their sum."""
        for platform, since, until in store.hold_periods():
            self._journaled.setdefault(platform, []).append((since, until))
            # On when the last process stopped: its first part tries at once. Once, though two may be
            # journaled open (one whose end went unrecorded, then the wall clock stepped back before the
            # next began): begun twice, the first would stay open in this process once the hold ends,
            # excusing its parts' failures for as long as it runs.
            if until is None and platform in platforms:
                hold = self._holds.get(platform)
                if hold is None:
                    hold = self._begin(platform)
                    log.info("outbox: %s refused the bot's credentials when the gateway stopped; its messages"
                             " are held until it takes them again", platform)
                hold.held_before = max(hold.held_before, clock.time() - since)

    def held_before(self, platform: str, start: float, end: float) -> float:
        """Seconds ``platform`` held its parts between the epoch times ``start`` and ``end``, as the
        processes before this one journaled it: the part of a part's tries then that does not count
        toward its giving up (the time the gateway was stopped is not in ``start``..``end``)."""
        return sum(max(0.0, min(end if until is None else until, end) - max(since, start))
                   for since, until in self._journaled.get(platform, ()))

    def held_awake(self, platform: str, since: float) -> float:
        """Seconds ``platform`` held its parts in this process since the monotonic ``since`` (the hold
        on now included): time that does not count toward a part's giving up."""
        now = self._clock.monotonic()
        held = sum(max(0.0, (now if until is None else until) - max(start, since))
                   for start, until in self._awake.get(platform, ()))
        if (folded := self._folded.get(platform)) is not None:
            first, last, total = folded
            # A clock started among them is given their sum, or all the time since, if less: the gaps
            # after it counted as held too, so it gives up later than it would, never sooner.
            held += total if since <= first else max(0.0, min(total, last - since))
        return held

    def _begin(self, platform: str) -> _Hold:
        now = self._clock.monotonic()
        self._awake.setdefault(platform, []).append((now, None))
        hold = self._holds[platform] = _Hold(since=now)
        return hold

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
            hold = self._begin(platform)
            self._journal("begins", self._store.begin_hold, platform)
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
        self._journal("ends", self._store.end_hold, platform)
        periods = self._awake[platform]
        periods[-1] = (periods[-1][0], self._clock.monotonic())
        if len(periods) > KEPT_PERIODS:
            older, periods[:] = periods[:-KEPT_PERIODS], periods[-KEPT_PERIODS:]
            first, last, total = self._folded.get(platform, (older[0][0], 0.0, 0.0))
            for start, end in older:
                assert end is not None  # only the newest period is ever open
                last, total = end, total + end - start
            self._folded[platform] = (first, last, total)
        log.info("outbox: %s takes the bot's credentials again after %.0fs; sending what was held", platform,
                 hold.held_before + self._clock.monotonic() - hold.since)
        hold.bump()

    def _journal(self, what: str, write: Callable[[str, float], None], platform: str) -> None:
        """Journal that the hold of ``platform`` begins or ends now; a store that refuses (a full disk)
        is logged, not raised: the call that tells it is a part's answer, and raised from there it
        would have a part the platform took sent again. Unjournaled, a hold's start or end is only
        missed by the next start, whose first part tries at once either way."""
        try:
            write(platform, self._clock.time())
        except Exception as exc:
            log.error("outbox: could not record that %s's credential hold %s (%s: %s)", platform, what,
                      type(exc).__name__, exc)

    def release(self, platform: str, row_id: int) -> None:
        """``row_id``'s probe ended without an answer (a network error, a cancellation): another may try."""
        hold = self._holds.get(platform)
        if hold is not None and hold.prober == row_id:
            hold.prober = None
            hold.bump()
