"""Requests to Slack's HTTP mode endpoint (`platforms.slack_http`): Slack's ``app_rate_limited`` notice,
which it sends when it starts dropping the app's events and counts against the app unless answered 200,
and a request whose sender hangs up mid-body (anyone may send one: no signature is needed to start)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from platforms.base import Inbound
from platforms.fakes._slack_http import sign
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.cut_short import Handled, cut_short

SECRET = "test-signing-secret"


@pytest.fixture
def handled() -> Handled:
    return Handled()


@pytest.fixture
async def events_url(handled: Handled) -> AsyncIterator[tuple[FakeSlack, str]]:
    async def sink(inbound: Inbound) -> None:
        raise AssertionError(f"nothing is handed over: {inbound}")

    async with FakeSlack(ack_timeout=2.0) as fake:
        adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
        app = web.Application(middlewares=[handled.middleware])
        app.router.add_routes(adapter.web_routes())
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        await adapter.start(sink)
        try:
            yield fake, f"http://{host}:{port}/slack/events"
        finally:
            await adapter.stop()
            await runner.cleanup()


async def test_app_rate_limited_is_answered_200_and_told_in_a_warning(
    events_url: tuple[FakeSlack, str], caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = events_url
    notice = {"token": "t", "type": "app_rate_limited", "team_id": fake.team_id,
              "minute_rate_limited": 1518467820, "api_app_id": "A1"}
    result = await fake.send_http_event(url, notice, SECRET)
    assert result.status == 200
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"slack: Slack is rate limiting this app's events for workspace {fake.team_id} since 2018-02-12 20:37 UTC "
        "(over 30,000 an hour): the messages it drops meanwhile may never reach the gateway"]


async def test_app_rate_limited_unsigned_is_still_refused(events_url: tuple[FakeSlack, str]) -> None:
    fake, url = events_url
    notice = {"type": "app_rate_limited", "team_id": fake.team_id, "minute_rate_limited": 1518467820}
    assert (await fake.send_http_event(url, notice, "not-the-secret")).status == 401


async def test_a_sender_hanging_up_mid_body_is_no_error_in_the_log(
    events_url: tuple[FakeSlack, str], handled: Handled, caplog: pytest.LogCaptureFixture
) -> None:
    _, url = events_url
    ts = str(int(time.time()))
    await cut_short(url, {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": sign("anything", ts, ""),
                          "Content-Type": "application/json"}, handled)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
