"""Socket Mode's reason while it reconnects (`platforms.slack_connection`): the generic "asking
apps.connections.open" text was set before every call, so during an outage the console's reason took turns
between it and the real failure, and a failure that was over stayed the reason once a call answered again.
The real slack-sdk Socket Mode client against the loopback fake, one call held in flight at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_connection import SocketWatch
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack

OPEN = "apps.connections.open"
FAILED = "apps.connections.open failed: internal_error"
ASKING = "Socket Mode is reconnecting (asking apps.connections.open for a new URL)"
OPENING = "Socket Mode is reconnecting (apps.connections.open gave a new URL; opening the WebSocket)"


fake = fake_slack()


@pytest.fixture
async def slack(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    assert (adapter.connection().status, adapter.connection().reason) == ("reconnecting", "not connected yet")
    await adapter.start(Sink())
    yield adapter
    await adapter.stop()


async def test_a_retry_in_flight_keeps_the_cause_and_an_answer_ends_it(fake: FakeSlack, slack: SlackAdapter) -> None:
    gate = fake.hold(OPEN)
    try:
        fake.fail_next(OPEN, "internal_error", times=2)
        opened = len(fake.calls_to(OPEN))
        fake.drop_socket()
        await fake.wait_for(lambda: len(fake.calls_to(OPEN)) == opened + 1)
        assert (slack.connection().status, slack.connection().reason) == ("reconnecting", ASKING)  # news of a drop
        began = slack.connection().since
        gate.set()
        await fake.wait_for(lambda: slack.connection().reason == FAILED)
        gate.clear()
        await fake.wait_for(lambda: len(fake.calls_to(OPEN)) == opened + 2)  # slack-sdk asks again, held
        assert (slack.connection().reason, slack.connection().since) == (FAILED, began)  # not the generic text
        fake.refuse_sockets(3)  # the third call answers, and its WebSocket is refused a while (a ping apart each)
        gate.set()
        await fake.wait_for(lambda: slack.connection().reason == OPENING)  # the failure that is over is not named
        assert (slack.connection().status, slack.connection().since) == ("reconnecting", began)
        await fake.wait_for(lambda: slack.connection().status == "connected", timeout=10)
    finally:
        gate.set()


async def test_before_the_first_connection_a_call_in_flight_leaves_not_connected_yet(fake: FakeSlack) -> None:
    watch = SocketWatch()
    client = watch.web_client(base_url=fake.api_base)
    gate = fake.hold(OPEN)
    try:
        asked = asyncio.ensure_future(client.apps_connections_open(app_token=fake.app_token))
        await fake.wait_for(lambda: fake.calls_to(OPEN))
        assert (watch.state.state.status, watch.state.state.reason) == ("reconnecting", "not connected yet")
        gate.set()
        assert (await asked)["ok"]
        assert watch.state.state.reason == "not connected yet"  # no failure came before it: nothing to end
    finally:
        gate.set()
