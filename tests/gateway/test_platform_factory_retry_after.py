"""The operator's ``delivery.max_retry_after`` reaches Slack's catch-up (`platforms.slack_catchup.Limits`) and
Discord's: the adapter was built with the catch-up's own minute, so a 429 at start was waited out for up to a
minute whatever the operator had set. Real slack-sdk on the loopback FakeSlack."""

from __future__ import annotations

from gateway.platform_factory import build_adapters
from gateway.testing import make_config
from platforms.discord import DiscordAdapter
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.test_slack_catchup import Gateway, seen_once_then_down

A_DAY = 86400


def slack_config(tmp_path, fake: FakeSlack, max_retry_after: float):
    return make_config(tmp_path, delivery={"max_retry_after": max_retry_after}, platforms={"slack": {
        "enabled": True, "bot_token": fake.bot_token, "app_token": fake.app_token, "api_base": fake.api_base}})


async def test_a_configured_max_retry_after_of_5_caps_the_catch_ups_wait_at_5_s(tmp_path) -> None:
    async with FakeSlack() as fake:
        [adapter] = build_adapters(slack_config(tmp_path, fake, 5))
    assert isinstance(adapter, SlackAdapter)
    assert adapter._catch_up_limits.max_retry_after == 5.0


async def test_the_catch_up_waits_a_429_asking_for_a_day_out_for_the_configured_cap(tmp_path) -> None:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        gateway = Gateway()
        await seen_once_then_down(fake, gateway, "U1")
        await fake.push_dm("U1", "while down")
        fake.fail_next("conversations.history", status=429, retry_after=A_DAY)
        [adapter] = build_adapters(slack_config(tmp_path, fake, 0.1))
        assert isinstance(adapter, SlackAdapter)
        gateway.bind(adapter)
        await adapter.start(gateway.sink)
        try:  # the wait between tries, then the catch-up's pace (1.2 s) before the second
            await fake.wait_for(lambda: "while down" in gateway.texts(), timeout=5.0)
        finally:
            await adapter.stop()
    assert len(fake.calls_to("conversations.history")) == 2


def test_a_configured_max_retry_after_reaches_discords_catch_up(tmp_path) -> None:
    config = make_config(tmp_path, delivery={"max_retry_after": 5},
                         platforms={"discord": {"enabled": True, "token": "x" * 60}})
    [adapter] = build_adapters(config)
    assert isinstance(adapter, DiscordAdapter)
    assert adapter._max_retry_after == 5.0
