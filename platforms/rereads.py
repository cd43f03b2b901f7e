"""Reading again, while the adapter runs, a conversation its catch-up could not read.

At each start (Slack) or new session (Discord) the adapter reads what was said while the gateway
was down (`platforms.slack_catchup`, `platforms.discord_catch_up`). A read that failed left its
conversation for the next start, which may be days away, past the day a catch-up reads back: what
was said there was as good as lost. So the catch-up reads it again, after a wait that depends on
why the read failed (the adapter's translated errors, `platforms.base`):

- `NetworkError` (a 5xx, no connection, no answer): an outage, waited out ``first`` seconds, then
  twice as long after each failed read in a row, up to ``most`` (reads that went at once, before the
  wait began, count as one: Discord's first pass reads five channels at once);
- `RateLimited`: its ``retry_after``, ``max_retry_after`` at most (a minute by default): a proxy in front of
  the platform may ask for a day, which held every read again for that day, as long as a catch-up reads back;
- `Unauthorized`: until a call with the bot token succeeds again (`platforms.connection.TokenWatch`:
  the outbox's held replies try it), as the adapters wait with the other work refused for the
  token: a timed retry would only be refused again until someone fixes it;
- anything else (the conversation gone, the bot no longer in it, a malformed answer) would fail
  alike at every try: the conversation is left for the next start, as before.

The wait is the catch-up's, not one conversation's: what failed one read (an outage, the rate
limit, the token) fails the next alike, so no read of the catch-up goes before it has passed, and an
outage costs a read a minute, not one per conversation; a read that succeeds ends the backoff. The
reads still take their turns at the adapter's pace. Bounded: once all that was said while the
gateway was down is past the catch-up's age bound (``give_up_at``), nothing left to read could be
answered, and `turn` says to give up: the conversations are left for the next start, as at a stop.
That bound is counted on a monotonic clock from the catch-up's start, never on the host's wall clock:
NTP stepping a clock that was days stale forward during the catch-up, as it soon does after a boot, gave
up at once on reads that had not even failed.

A read that failed for the platform as a whole (an outage, the token refused: `Rereads.down`) says
that the conversations not read yet would fail alike: the catch-ups read no more of them before the
wait (Discord's first pass stops there, its reads again go one at a time after the wait).

Apart from the catch-ups because it is one policy both follow. Logged on the adapter's logger: a
warning when a conversation's read first fails (its later failures at DEBUG), and an INFO line
when it is read at last. Not so in an outage, or while the token is refused: each conversation read
meanwhile fails alike, and a thousand warnings would say the same thing. There the read that found
the platform down warns, saying the others wait with it; the others' failures, and their reads at
last, are at DEBUG, and one INFO line counts them once none of them waits any more. A 429, or a
conversation's own refusal, is that conversation's: warned of for each, as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from platforms.base import NetworkError, RateLimited, Unauthorized
from platforms.connection import TokenWatch

FIRST_WAIT, MAX_WAIT = 2.0, 60.0
"""Seconds a catch-up waits after a read failed for an outage, doubling after each failed read in a row."""
MAX_RETRY_AFTER = 60.0
"""Seconds of a 429's ``Retry-After`` a catch-up waits at most: rate limits count by the minute."""


class Timer(Protocol):
    """The time the waits between reads take: the event loop's (`LOOP_TIMER`), or a test's, which
    it moves by hand."""

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class _LoopTimer:
    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


LOOP_TIMER: Timer = _LoopTimer()


class Rereads:
    """When a catch-up's next read may go, after reads that failed. ``token`` watches the bot token;
    ``give_up_at`` is when, on ``clock`` (monotonic seconds: not the wall clock, which NTP may step), nothing
    missed is young enough to answer any more; ``max_retry_after`` caps a 429's wait; ``timer`` is the time the
    waits take."""

    def __init__(self, token: TokenWatch, logger: logging.Logger, *, platform: str, give_up_at: float,
                 clock: Callable[[], float], first: float = FIRST_WAIT, most: float = MAX_WAIT,
                 max_retry_after: float = MAX_RETRY_AFTER, timer: Timer = LOOP_TIMER) -> None:
        self._token, self._log, self._platform = token, logger, platform
        self._give_up_at, self._clock, self._timer = give_up_at, clock, timer
        self._first, self._most, self._max_retry_after = first, most, max_retry_after
        self._backoff = 0.0
        self._not_before = 0.0
        """Loop time before which no read goes: an outage's backoff, or a 429's ``retry_after``."""
        self._for_token = False
        self.down = False
        """Whether a read failed for the platform as a whole (an outage, the token refused) and none
        was read since: the others would fail alike, so a catch-up's first pass reads no more of them."""
        self.failing: dict[str, int] = {}
        """Conversations (by name) whose reads failed and that were not read since -> the failures."""
        self._warned: set[str] = set()
        """Those of `failing` whose failure was warned of."""
        self._quiet: set[str] = set()
        """Those of `failing` whose reads failed only with the platform down that another's warning told
        of: logged at DEBUG, counted in one line once none of them waits any more."""
        self._quiet_read = 0
        """Those of them read at last since that line."""

    def failed(self, name: str, exc: BaseException) -> bool:
        """A read of conversation ``name`` failed with ``exc``: whether it is to be read again, once
        `turn` says so (logged: see the module's docstring)."""
        now, was_down = self._timer.monotonic(), self.down
        alike = True  # whether the read failed for the platform as a whole
        if isinstance(exc, Unauthorized) and self._token.refusal is not None:
            self._for_token = self.down = True
            when = f"once {self._token.title} takes the bot token again"
        elif isinstance(exc, RateLimited):
            wait = min(exc.retry_after, self._max_retry_after)
            self._not_before = max(self._not_before, now + wait)
            when = f"in {wait:g} s (Retry-After)"
            alike = False
        elif isinstance(exc, (NetworkError, Unauthorized)):  # the latter: one the token's watch did not see
            if not self._backoff:
                self._backoff = self._first
            elif now >= self._not_before:  # else the read went before the wait began (Discord reads some at once)
                self._backoff = min(self._backoff * 2, self._most)
            self._not_before = max(self._not_before, now + self._backoff)
            self.down = True
            when = f"in {self._backoff:g} s"
        else:
            self._forget(name)
            return False
        self.failing[name] = self.failing.get(name, 0) + 1
        line = "%s: catching up on %s: the read failed (%s: %s); reading it again %s, and until it is read"
        if alike and not was_down:  # the read that found the platform down
            line += "; others failing alike until a read succeeds wait with it (logged at DEBUG)"
        elif alike or name in self._warned:  # a failure alike, or this conversation's again
            if name not in self._warned:
                self._quiet.add(name)
            self._log.debug(line, self._platform, name, type(exc).__name__, exc, when)
            return True
        self._warned.add(name)
        self._quiet.discard(name)
        self._log.warning(line, self._platform, name, type(exc).__name__, exc, when)
        return True

    def read(self, name: str) -> None:
        """A read of conversation ``name`` succeeded: the outage's backoff ends."""
        self._backoff = 0.0
        self.down = False
        if not (failures := self.failing.get(name, 0)):
            return
        self._log.log(logging.DEBUG if name in self._quiet else logging.INFO, "%s: catching up on %s: read at last,"
                      " after %d failed read(s)", self._platform, name, failures)
        self._forget(name, read=True)

    def _forget(self, name: str, *, read: bool = False) -> None:
        """Conversation ``name`` waits no more: read at last, or left for the next start."""
        self.failing.pop(name, None)
        self._warned.discard(name)
        if name in self._quiet:
            self._quiet.discard(name)
            self._quiet_read += read
            if not self._quiet and self._quiet_read:
                self._log.info("%s: catching up: %d more read at last, whose reads failed while %s was down (each"
                               " logged at DEBUG)", self._platform, self._quiet_read, self._token.title)
                self._quiet_read = 0

    async def turn(self) -> bool:
        """Wait until the catch-up's next read may go; False once past ``give_up_at`` (at once, or
        while waiting): what is left to read is too old to answer."""
        left = self._give_up_at - self._clock()
        if left <= 0:
            return False
        try:
            async with asyncio.timeout(left):
                if self._for_token:
                    await self._token.taken()
                    self._for_token = False
                if (wait := self._not_before - self._timer.monotonic()) > 0:
                    await self._timer.sleep(wait)
        except TimeoutError:
            return False
        return self._clock() < self._give_up_at
