"""A connection that stays ``reconnecting`` shows the latest cause (`platforms.connection.ConnectionWatch`): the
operator console and ``/healthz`` showed the first reason of an outage for as long as it lasted, though each retry
since failed for another (a token no longer valid, say). Its ``since`` stays when the outage began, each new cause
is logged once, and the recovery once."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from platforms.connection import ConnectionWatch
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.connection_state import status
from tests.platforms.sink import Sink

CLOSED = "the connection closed"
REFUSED = "apps.connections.open failed: ratelimited"


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "platforms.connection"]


def test_the_reason_follows_the_latest_cause_and_keeps_when_the_outage_began(caplog) -> None:
    watch = ConnectionWatch("slack")
    watch.connected()
    with caplog.at_level(logging.INFO, logger="platforms.connection"):
        watch.reconnecting(CLOSED)
        began = watch.state.since
        watch.reconnecting(REFUSED)
        assert (watch.state.status, watch.state.reason, watch.state.since) == ("reconnecting", REFUSED, began)
        watch.reconnecting(CLOSED)  # causes that take turns: the latest shows, neither is logged again
        watch.reconnecting(REFUSED)
        assert (watch.state.reason, watch.state.since) == (REFUSED, began)
        watch.connected()
    assert lines(caplog) == [
        ("WARNING", f"slack: connection lost, reconnecting: {CLOSED}"),
        ("WARNING", f"slack: still reconnecting, now: {REFUSED}"),
        ("INFO", f"slack: connected again (was reconnecting: {REFUSED})"),
    ]
    with caplog.at_level(logging.INFO, logger="platforms.connection"):  # a later outage is news again
        caplog.clear()
        watch.reconnecting(REFUSED)
        watch.reconnecting(CLOSED)
    assert lines(caplog) == [("WARNING", f"slack: connection lost, reconnecting: {REFUSED}"),
                             ("WARNING", f"slack: still reconnecting, now: {CLOSED}")]


def test_a_first_connection_that_fails_says_why_and_a_refusal_stays_the_news(caplog) -> None:
    watch = ConnectionWatch("slack")
    began = watch.state.since
    with caplog.at_level(logging.INFO, logger="platforms.connection"):
        watch.reconnecting(REFUSED)  # was "not connected yet" whatever kept the first connection from coming up
        assert (watch.state.status, watch.state.reason, watch.state.since) == ("reconnecting", REFUSED, began)
        watch.connected()
    assert lines(caplog) == []  # the adapter's start tells: a start that connects at its second try is no outage
    watch.down("Slack refused the app token")
    watch.reconnecting(CLOSED)
    assert (watch.state.status, watch.state.reason) == ("down", "Slack refused the app token")


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def test_telegrams_reconnecting_shows_the_latest_failed_poll(fake: FakeTelegram) -> None:
    adapter, sink = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1), Sink()
    await adapter.start(sink)
    try:
        fake.fail_next("getUpdates", 502, description="Bad Gateway")
        fake.fail_next("getUpdates", 500, description="Internal Server Error: the later cause")
        assert "Bad Gateway" in await status(adapter, fake, "reconnecting")
        began = adapter.connection().since
        await fake.wait_for(lambda: "the later cause" in (adapter.connection().reason or ""), timeout=15)
        assert (adapter.connection().status, adapter.connection().since) == ("reconnecting", began)
        fake.push_message(42, "still there?")
        await status(adapter, fake, "connected", timeout=15)
        await fake.wait_for(lambda: sink.inbound)
    finally:
        await adapter.stop()
