"""A Slack app installed without a bot scope the gateway needs is told at start, from the scopes Slack lists in
``auth.test``'s ``x-oauth-scopes`` header: one warning per missing scope, and a start refused without
``chat:write`` (nothing could be answered). Real slack-bolt / slack-sdk against the loopback FakeSlack."""

from __future__ import annotations

import logging

import pytest

from gateway.config import config_from_mapping
from gateway.startup_errors import explain, lasting
from platforms.base import Forbidden
from platforms.fakes._slack_web_api import BOT_SCOPES
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink


def _adapter(fake: FakeSlack) -> SlackAdapter:
    return SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)


def _scope_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "platforms.slack" and r.levelno == logging.WARNING and "scope" in r.getMessage()]


async def test_each_missing_scope_is_one_warning_naming_it_and_the_start_goes_on(caplog):
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    async with FakeSlack() as fake:
        fake.bot_scopes = [s for s in BOT_SCOPES if s not in ("im:history", "files:write")]
        slack, sink = _adapter(fake), Sink()
        await slack.start(sink)
        try:
            assert slack.connection().status == "connected"
            await fake.push_mention("C1", "U1", "still heard in channels")
            await fake.wait_for(lambda: len(sink.inbound) == 1)
        finally:
            await slack.stop()
    assert _scope_warnings(caplog) == [
        "slack: the app lacks the files:write scope: files the agent sends will fail; add it under OAuth &"
        " Permissions and reinstall the app",
        "slack: the app lacks the im:history scope: direct messages to the bot will never arrive; add it under"
        " OAuth & Permissions and reinstall the app",
    ]


@pytest.mark.parametrize("scopes", [None, list(BOT_SCOPES), ["bot", "identify"]],
                         ids=["no header", "every scope", "a classic app's bot scope"])
async def test_nothing_is_said_without_a_missing_scope_to_tell(caplog, scopes):
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    async with FakeSlack() as fake:
        fake.bot_scopes = scopes
        slack = _adapter(fake)
        await slack.start(Sink())
        try:
            assert slack.connection().status == "connected"
        finally:
            await slack.stop()
    assert _scope_warnings(caplog) == []


async def test_without_chat_write_the_start_is_refused_before_any_event_is_taken():
    async with FakeSlack() as fake:
        fake.bot_scopes = [s for s in BOT_SCOPES if s != "chat:write"]
        slack = _adapter(fake)
        with pytest.raises(Forbidden) as refused:
            await slack.start(Sink())
        assert fake.connections == []  # no Socket Mode: no message taken in that could not be answered
        assert "apps.connections.open" not in [call.method for call in fake.calls]
    config = config_from_mapping({"platforms": {"slack": {
        "enabled": True, "bot_token": fake.bot_token, "app_token": fake.app_token, "allow_all": True,
        "api_base": fake.api_base}}}).config
    line = explain(refused.value, config)
    assert line.startswith("platforms.slack:") and "lacks the chat:write scope" in line
    assert "reinstall the app" in line and "check platforms.slack.bot_token" in line
    assert lasting(refused.value)  # exit status 78: every start is refused alike until the app is fixed
