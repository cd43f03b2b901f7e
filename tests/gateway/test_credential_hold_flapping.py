"""A token refused on and off for weeks (`gateway.credential_hold`): the holds of this process are kept
one by one only up to `KEPT_PERIODS`, older ones as their sum, and a part's time held is never less than
it was."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway import credential_hold
from gateway.credential_hold import CredentialHolds
from gateway.store import GatewayStore
from platforms.base import Unauthorized

KEPT, FLAPS, GAP, HELD = 4, 20, 10.0, 5.0


@pytest.fixture
def flapped(tmp_path, monkeypatch):
    """Holds of Slack after ``FLAPS`` holds of ``HELD`` seconds, ``GAP`` seconds apart; their (start, end)."""
    monkeypatch.setattr(credential_hold, "KEPT_PERIODS", KEPT, raising=False)
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    holds = CredentialHolds(clock, store.outbox, ["slack"])
    periods = []
    for _ in range(FLAPS):
        clock.advance(GAP)
        start = clock.monotonic()
        holds.refused("slack", 1, Unauthorized("token_revoked", platform="slack"))
        clock.advance(HELD)
        holds.answered("slack")
        periods.append((start, clock.monotonic()))
    yield holds, periods
    store.close()


def test_a_flapping_token_keeps_only_the_newest_holds_apart(flapped):
    holds, _ = flapped
    assert len(holds._awake["slack"]) == KEPT  # was one per hold, for as long as the gateway ran


def test_a_part_is_given_exactly_its_time_held_unless_it_waited_through_more_holds_than_are_kept(flapped):
    holds, periods = flapped

    def truly(since: float) -> float:
        return sum(max(0.0, end - max(start, since)) for start, end in periods)

    before, among_kept = periods[0][0] - 1.0, periods[-2][0] + 1.0
    assert holds.held_awake("slack", before) == pytest.approx(FLAPS * HELD)
    assert holds.held_awake("slack", among_kept) == pytest.approx(truly(among_kept))
    assert holds.held_awake("slack", periods[-1][1] + 1.0) == 0.0
    last = periods[FLAPS - KEPT - 1][1]  # the newest of those kept as a sum ended
    for since in (periods[2][0] + 1.0, periods[5][1] + 1.0, last - 0.5):
        # Begun among those kept as a sum: given more time, never less, at most the gaps between them.
        gaps = (last - since) - (truly(since) - truly(last))
        assert truly(since) <= holds.held_awake("slack", since) <= truly(since) + gaps + 1e-9
