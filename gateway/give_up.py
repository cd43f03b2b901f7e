"""When the outbox gives up on a part: each pending part's give-up clock.

A part that keeps failing (a network error, a 5xx, a 429) is failed once ``give_up_after`` seconds
(per platform; the webhook's ``retry_for_seconds``) have passed on its clock. The clock counts the
time the gateway ran and the machine was awake, on the monotonic clock, which stops in a suspend,
and not the time its platform held it for a refused token (`gateway.credential_hold`), nor the
time the gateway's own database held its chat back (`held_back`).

Apart from the sender (`gateway.sender`) because it is one concept, the give-up rule's bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agent import Clock
from gateway.credential_hold import CredentialHolds
from gateway.store import OutboxRow


class GiveUpClocks:
    def __init__(self, clock: Clock, holds: CredentialHolds, *, started: float, last_before: int,
                 give_up_after: Mapping[str, float], default_give_up: float) -> None:
        """``started``: when this process's sender started, on the wall clock; ``last_before``: the
        highest part id journaled before it started."""
        self._clock, self._holds = clock, holds
        self._give_up_after, self._default_give_up = give_up_after, default_give_up
        self._started = started
        self._last_before = last_before
        self._started_awake = clock.monotonic()
        self._journaled: dict[int, float] = {}
        """When each pending part's give-up clock started, on the monotonic clock (`journaled`)."""
        self._held_back: dict[int, float] = {}
        """Seconds the database held back parts whose clock has not started yet (journaled before this start)."""

    def journaled(self, row_id: int) -> None:
        """The part ``row_id`` was journaled just now: its give-up clock starts."""
        self._journaled[row_id] = self._clock.monotonic()

    def forget(self, row_id: int) -> None:
        """The part is final: its clock stops."""
        self._journaled.pop(row_id, None)
        self._held_back.pop(row_id, None)

    def held_back(self, row_ids: Iterable[int], seconds: float) -> None:
        """The gateway's database held back the parts ``row_ids`` (their chat) for ``seconds``: a full
        disk is not the platform failing, so their clocks do not count that time."""
        for row_id in row_ids:
            if row_id in self._journaled:
                self._journaled[row_id] += seconds
            else:
                self._held_back[row_id] = self._held_back.get(row_id, 0.0) + seconds

    def tried(self, row_id: int) -> float:
        """Seconds on the part's give-up clock (0 for a part whose clock never started)."""
        return self._clock.monotonic() - self._journaled.get(row_id, self._clock.monotonic())

    def left(self, row: OutboxRow) -> float:
        """Seconds left before ``row`` is given up on (≤ 0: now). Its give-up clock counts the time
        the gateway ran and the machine was awake, on the monotonic clock, which stops in a suspend:
        a reply whose network went as the laptop's lid closed is not given up on at the first failure
        after a night asleep, when the network is often not back yet. For a part journaled before
        this start, the time it was tried then counts (from its journaling to its last retry time);
        the time the gateway was stopped does not, nor does a part's first failure at a boot before
        the network is up end it. Time its platform held it for a refused token does not count either
        (`gateway.credential_hold`)."""
        since = self._journaled.get(row.id)
        if since is None:
            if row.id > self._last_before:  # journaled by this sender (a late note, a re-split piece)
                since = self._clock.monotonic() - max(0.0, self._clock.time() - row.created_at)
            else:
                tried = 0.0 if row.next_attempt_at is None else min(row.next_attempt_at, self._started) - row.created_at
                tried = max(0.0, tried)
                held = self._holds.held_before(row.platform, row.created_at, row.created_at + tried)
                since = self._started_awake - tried + held
            since += self._held_back.pop(row.id, 0.0)
            self._journaled[row.id] = since
        limit = self._give_up_after.get(row.platform, self._default_give_up)
        held = self._holds.held_awake(row.platform, since)  # a refused token: not the part's failure
        return since + limit + held - self._clock.monotonic()
