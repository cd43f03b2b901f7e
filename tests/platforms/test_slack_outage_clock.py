"""Socket Mode's outage measured across a suspend and a wall clock stepped back (`SlackAdapter._reconnected`):
a laptop that slept through the drop hears of it only on waking, and still catches up on what Slack dropped
meanwhile. The real slack-bolt / slack-sdk clients on the loopback FakeSlack, as in test_slack_outage_catchup."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.slack import FakeSlack
from tests.platforms.test_slack_catchup import Gateway
from tests.platforms.test_slack_outage_catchup import Clock, outage

NIGHT = 8 * 3600.0


class TwoClocks(Clock):
    """The adapter's wall clock and its monotonic one, each moved on apart by a test."""

    def __init__(self) -> None:
        super().__init__()
        self.monotonic_ahead = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.monotonic_ahead


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


async def test_messages_sent_while_the_machine_slept_through_the_drop_are_caught_up(fake, caplog):
    gateway, clock = Gateway(), TwoClocks()
    adapter = await gateway.start(fake, clock=clock, monotonic=clock.monotonic)
    try:
        await fake.push_dm("U1", "first")
        await fake.wait_for(lambda: gateway.texts() == ["first"])
        with caplog.at_level(logging.INFO, logger="platforms.slack"):
            clock.ahead += NIGHT  # asleep: the wall clock runs on, the monotonic one stands still
            await outage(fake, adapter, clock, 0.0, "while asleep")  # the drop is noticed on waking
            await fake.wait_for(lambda: "caught up after" in caplog.text)
            await fake.wait_for(lambda: gateway.taken() == ["first", "while asleep"])
        assert re.search(r"caught up after Socket Mode was lost for 2880\d s", caplog.text)
    finally:
        await adapter.stop()


async def test_a_wall_clock_stepped_back_during_an_outage_does_not_shorten_it(fake, caplog):
    gateway, clock = Gateway(), TwoClocks()
    clock.ahead = 3600.0  # an hour fast, until NTP steps it back
    adapter = await gateway.start(fake, clock=clock, monotonic=clock.monotonic)
    try:
        await fake.push_dm("U1", "first")
        await fake.wait_for(lambda: gateway.texts() == ["first"])
        with caplog.at_level(logging.INFO, logger="platforms.slack"):
            opens = len(fake.calls_to("apps.connections.open"))
            held = fake.hold("apps.connections.open")
            held.clear()
            fake.drop_socket()
            await fake.wait_for(lambda: len(fake.calls_to("apps.connections.open")) > opens)
            await fake.push_dm("U1", "while lost")
            clock.monotonic_ahead += 600.0  # ten minutes lost, the wall clock stepped back an hour meanwhile
            clock.ahead -= 3600.0
            held.set()
            await fake.wait_for(lambda: "caught up after" in caplog.text)
            await fake.wait_for(lambda: gateway.taken() == ["first", "while lost"])
        assert re.search(r"caught up after Socket Mode was lost for 60\d s", caplog.text)
    finally:
        await adapter.stop()


async def test_a_short_outage_after_a_suspend_the_connection_lived_through_is_left_to_slacks_retries(fake):
    gateway, clock = Gateway(), TwoClocks()
    adapter = await gateway.start(fake, clock=clock, monotonic=clock.monotonic)
    try:
        clock.ahead += NIGHT
        await fake.push_dm("U1", "after waking")  # the connection's message since: it was not lost asleep
        await fake.wait_for(lambda: gateway.texts() == ["after waking"])
        reads = len(fake.calls_to("conversations.history"))
        await outage(fake, adapter, clock, 5.0)
        await fake.push_dm("U1", "live again")
        await fake.wait_for(lambda: gateway.texts() == ["after waking", "live again"])
        assert len(fake.calls_to("conversations.history")) == reads
    finally:
        await adapter.stop()
