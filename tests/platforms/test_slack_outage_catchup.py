"""The Slack adapter catching up after its Socket Mode connection was lost for longer than Slack
retries an event, while the process kept running (`SlackAdapter._reconnected`): the real slack-bolt /
slack-sdk clients on the loopback FakeSlack, which drops the events no connection was open for."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits
from tests.platforms.test_slack_catchup import DM, NO_PACE, Gateway


class Clock:
    """The adapter's clock: real time, moved on by a test to make an outage long."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


async def outage(fake: FakeSlack, adapter: SlackAdapter, clock: Clock, seconds: float, *texts: str) -> list[dict]:
    """Drop the WebSocket and hold its reconnect while ``texts`` are sent in the DM (lost: no connection
    is open), ``seconds`` passing on the adapter's clock; then let it reconnect. The events sent."""
    opens = len(fake.calls_to("apps.connections.open"))
    held = fake.hold("apps.connections.open")
    held.clear()
    fake.drop_socket()
    await fake.wait_for(lambda: len(fake.calls_to("apps.connections.open")) > opens and not fake.open_connections)
    assert adapter.connection().status == "reconnecting"
    sent = [(await fake.push_dm("U1", text))["event"] for text in texts]
    clock.ahead += seconds
    held.set()
    await fake.wait_for(lambda: fake.open_connections)
    return sent


async def test_messages_sent_while_socket_mode_was_lost_long_are_handed_on_once_in_order(fake, caplog):
    gateway, clock = Gateway(), Clock()
    adapter = await gateway.start(fake, clock=clock)
    try:
        await fake.push_dm("U1", "first")
        await fake.wait_for(lambda: gateway.texts() == ["first"])
        with caplog.at_level(logging.INFO, logger="platforms.slack"):
            lost = await outage(fake, adapter, clock, 600.0, "while lost", "and again")
            live = (await fake.push_dm("U1", "live again"))["event"]  # after the older ones, as sent
            await fake.wait_for(lambda: "caught up after" in caplog.text)
            await fake.wait_for(lambda: len(gateway.taken()) == 4)
        assert len(fake.given_up) == 2  # Slack dropped their events
        # The live one may be read back too: under its live event's key, which the inbox takes once.
        assert gateway.taken() == ["first", "while lost", "and again", "live again"]
        assert [i.event_id for i in gateway.items[1:3]] == [f"{DM}:{e['ts']}" for e in lost]
        assert [i.text for i in gateway.items].count("while lost") == 1
        assert re.search(r"caught up after Socket Mode was lost for 600 s: [23] message\(s\) for the bot handed on,"
                         r" from 1 conversation\(s\) read", caplog.text)
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] == live["ts"])
    finally:
        await adapter.stop()


async def test_a_short_outage_is_left_to_slacks_retries(fake):
    gateway, clock = Gateway(), Clock()
    adapter = await gateway.start(fake, clock=clock)
    try:
        await fake.push_dm("U1", "first")
        await fake.wait_for(lambda: gateway.texts() == ["first"])
        reads = len(fake.calls_to("conversations.history"))
        await outage(fake, adapter, clock, 5.0)
        await fake.push_dm("U1", "live again")
        await fake.wait_for(lambda: gateway.texts() == ["first", "live again"])
        assert len(fake.calls_to("conversations.history")) == reads
    finally:
        await adapter.stop()


async def test_an_outage_during_the_catch_up_at_start_carries_its_unread_conversations_over(fake):
    gateway, clock = Gateway(), Clock()
    now = time.time()
    for user in ("U1", "U2"):  # taken in before a stop, then one message each while the gateway was down
        gateway.last_seen[(fake.dm_channel(user), None)] = f"{now - 1000:.6f}"
        fake._store(fake.dm_channel(user), None, {"user": user, "text": f"while down, by {user}",
                                                   "ts": f"{now - 500:.6f}"})
    clock.ahead = -300.0  # the catch-up at start began before what the outage loses was sent
    held = fake.hold("conversations.history")  # and reads nothing before the outage
    adapter = await gateway.start(fake, clock=clock)
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        lost = await outage(fake, adapter, clock, 600.0, "while lost")
        held.set()
        await fake.wait_for(lambda: len(gateway.taken()) == 3)
        assert sorted(gateway.taken()) == ["while down, by U1", "while down, by U2", "while lost"]
        assert gateway.taken().index("while down, by U1") < gateway.taken().index("while lost")
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] == lost[0]["ts"])
        assert gateway.last_seen[(fake.dm_channel("U2"), None)] == f"{now - 500:.6f}"
    finally:
        await adapter.stop()


def test_the_limit_defaults_to_a_minute():
    assert NO_PACE.after_outage == Limits().after_outage == 60.0
