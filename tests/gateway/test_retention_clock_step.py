"""The retention sweep when the wall clock steps ahead (NTP correcting a clock that ran slow, a board booted with a
stale date): the rows of the last minutes are not taken for days old, each table forgets them once its retention
has passed on the monotonic clock, and the step is said once."""

from __future__ import annotations

import logging

import pytest

from agent.testing import FakeClock
from gateway.retention import STEP_SECONDS, Retention
from gateway.store import GatewayStore
from tests.gateway.test_retention_sessions import Children, registry_on

DAY = 24 * 3600.0


@pytest.fixture
def clock():
    return FakeClock(autojump=False, start=1_800_000_000.0)


@pytest.fixture
def store(tmp_path, clock):
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    yield store
    store.close()


def handled_a_minute_ago(store, clock) -> None:
    """A message handled (its duplicate check), and the last message seen in a Slack conversation."""
    at = clock.time() - 60
    store.db.write("INSERT INTO gateway_inbox (platform, event_id, payload, status, received_at)"
                   " VALUES ('slack', 'e-1', '{}', 'done', ?)", (at,))
    store.db.write("INSERT INTO gateway_last_seen VALUES ('slack', 'C1', '1800000000.000100', ?)", (at,))


def kept(store) -> tuple[set[str], set[str]]:
    return ({r[0] for r in store.db.read("SELECT event_id FROM gateway_inbox")},
            {r[0] for r in store.db.read("SELECT conversation FROM gateway_last_seen")})


def said(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gateway.retention" and r.levelno == logging.WARNING]


@pytest.mark.parametrize("sweep", ["sweep", "sweep_in_batches"])
async def test_a_step_ahead_forgets_no_row_before_its_age_is_up_on_the_monotonic_clock(store, clock, caplog, sweep):
    # Before, a step of 40 days forgot the duplicate check of the message just handled (Slack's retry was then
    # answered twice) and every conversation's last message (the next start caught up on nothing).
    caplog.set_level(logging.INFO, logger="gateway.retention")
    retention = Retention(store, registry_on(store, clock), Children(), clock=clock, pay_owed=lambda: None)
    handled_a_minute_ago(store, clock)

    async def run() -> None:
        result = getattr(retention, sweep)()
        await result if sweep == "sweep_in_batches" else None

    clock.jump(40 * DAY)
    await run()
    assert kept(store) == ({"e-1"}, {"C1"})
    assert len(said(caplog)) == 1 and "960.0 hours ahead" in said(caplog)[0]
    clock.advance(7 * DAY - 120)  # a week less a minute since the message: still a duplicate for the inbox
    await run()
    assert kept(store) == ({"e-1"}, {"C1"})
    clock.advance(120)
    await run()
    assert kept(store) == (set(), {"C1"})  # a week since: forgotten, as it would have been without the step
    clock.advance(23 * DAY)
    await run()
    assert kept(store) == (set(), set())  # a month since
    assert len(said(caplog)) == 1  # the step said once


async def test_a_step_before_the_first_sweep_counts_from_the_start(store, clock):
    # A board booted with a stale date: the gateway starts, NTP steps the clock before the first sweep.
    retention = Retention(store, registry_on(store, clock), Children(), clock=clock, pay_owed=lambda: None)
    handled_a_minute_ago(store, clock)
    clock.jump(400 * DAY)
    retention.sweep()
    assert kept(store) == ({"e-1"}, {"C1"})


async def test_time_that_passes_and_small_corrections_forget_as_before(store, clock, caplog):
    caplog.set_level(logging.INFO, logger="gateway.retention")
    retention = Retention(store, registry_on(store, clock), Children(), clock=clock, pay_owed=lambda: None)
    handled_a_minute_ago(store, clock)
    clock.advance(7 * DAY - 120)
    clock.jump(STEP_SECONDS - 1)  # NTP's slew, or a step of less than the bound: not told from time passing
    retention.sweep()
    assert kept(store) == (set(), {"C1"})
    clock.advance(30 * DAY)
    retention.sweep()
    assert kept(store) == (set(), set()) and said(caplog) == []
