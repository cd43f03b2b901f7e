"""The Slack adapter's own reads, the catch-up's and the start's clean-up of placeholders left behind, wait a
``Retry-After`` out for ``delivery.max_retry_after`` at most (a minute by default): a proxy in front of Slack that
says 86400 (or a far-off HTTP-date) held the catch-up, and the messages it hands on, for a day. Real slack-sdk on
the loopback FakeSlack, the cap scaled down so that waiting it out takes a moment."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from platforms import slack_placeholders
from platforms.fakes.slack import FakeSlack
from platforms.slack_catchup import Limits
from tests.platforms.sink import Sink
from tests.platforms.slack_client import slack_on
from tests.platforms.test_slack_catchup import Gateway, seen_once_then_down
from tests.platforms.test_slack_placeholders_left_behind import PLACEHOLDER, leave_a_placeholder, texts

A_DAY = 86400


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


async def test_the_catch_up_waits_a_429_asking_for_a_day_out_for_its_cap_only(
        fake: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    # Three 429s in a row: two waited out between tries, the third by reading the conversation again later.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    await fake.push_dm("U1", "while down")
    fake.fail_next("conversations.history", status=429, retry_after=A_DAY, times=3)
    adapter = await gateway.start(fake, Limits(pace=0.0, max_retry_after=0.05))
    try:
        await fake.wait_for(lambda: "while down" in gateway.texts(), timeout=3.0)
    finally:
        await adapter.stop()
    assert len(fake.calls_to("conversations.history")) == 4
    [failed] = [r for r in caplog.records if r.levelno == logging.WARNING and "the read failed" in r.getMessage()]
    assert "reading it again in 0.05 s (Retry-After)" in failed.getMessage()


def test_the_catch_ups_cap_is_slacks_minute() -> None:
    assert Limits().max_retry_after == 60.0


async def test_the_clean_up_waits_a_429_asking_for_a_day_out_for_its_cap_only(
        fake: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slack_placeholders, "CLEAN_UP_WAIT", 0.001)
    await leave_a_placeholder(fake, "C1")
    slack = slack_on(fake, catch_up=Limits(max_retry_after=0.05))  # delivery.max_retry_after, as the outbox's cap
    await slack.start(Sink())
    try:
        fake.fail_next("conversations.history", "ratelimited", status=429, retry_after=A_DAY)
        async with asyncio.timeout(3.0):
            assert await slack.clear_left_behind("C1", None) == 1
    finally:
        await slack.stop()
    assert PLACEHOLDER not in texts(fake, "C1")
    assert len(fake.calls_to("conversations.history")) == 2
