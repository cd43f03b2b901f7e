"""The line a refused Slack token stops the start with names the token Slack refused: the bot
token (``auth.test``) or, in Socket Mode, the app token (``apps.connections.open``)."""

from __future__ import annotations

import pytest

from gateway.config import config_from_mapping
from gateway.startup_errors import explain
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink


@pytest.mark.parametrize("wrong, named, not_named", [("bot", "bot_token", "app_token"),
                                                     ("app", "app_token", "bot_token")])
async def test_a_refused_slack_token_at_start_is_named_alone(wrong, named, not_named):
    async with FakeSlack() as fake:
        adapter = SlackAdapter(bot_token="xoxb-wrong" if wrong == "bot" else fake.bot_token,
                               app_token="xapp-wrong" if wrong == "app" else fake.app_token, api_base=fake.api_base)
        with pytest.raises(Exception) as refused:
            await adapter.start(Sink())
    config = config_from_mapping({"platforms": {"slack": {
        "enabled": True, "bot_token": "xoxb-wrong", "app_token": "xapp-wrong", "allow_all": True,
        "api_base": fake.api_base}}}).config
    line = explain(refused.value, config)
    assert line.startswith("platforms.slack:") and f"check platforms.slack.{named} " in line
    assert not_named not in line and "wrong" not in line
