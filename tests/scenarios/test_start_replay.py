"""A start replays what the last process left unsettled — and only that: a message a platform
hands over while a later platform is still starting is handled once, live, not replayed too."""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from gateway.store import session_key
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter


class SlowToAuthSlack(FakeSlack):
    """A Slack whose ``auth.test`` waits until the test opens ``auth``: Slack's start hangs there."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.auth = asyncio.Event()

    async def _api(self, request):
        if request.match_info["method"] == "auth.test":
            await self.auth.wait()
        return await super()._api(request)


async def test_a_message_taken_while_a_later_platform_starts_runs_one_turn(tmp_path):
    model = ScriptedModel({"parent": [[{"wait": "answer", "text": "pong"}]]})
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}})
    async with FakeTelegram() as telegram, SlowToAuthSlack() as slack:
        telegram.push_message(42, "ping")  # held by Telegram while the gateway was down
        adapters = [TelegramAdapter(telegram.token, api_base=telegram.base_url, polling_timeout=10),
                    SlackAdapter(bot_token=slack.bot_token, app_token=slack.app_token, api_base=slack.api_base,
                                 ping_interval=0.2)]
        starting = asyncio.ensure_future(start_gateway(config, adapters, model=model))
        try:
            async with asyncio.timeout(10):
                await model.reached("answer")  # Telegram's message is in its turn; Slack still starts
            slack.auth.set()
            gateway = await asyncio.wait_for(starting, 10)
            model.release("answer")
            await telegram.wait_for(lambda: telegram.messages["42"])
            await settled(gateway)
            transcript = gateway.store.sessions.load(session_key("telegram", "42", None)).transcript
            await gateway.stop(grace=0)
        finally:
            slack.auth.set()
            if not starting.done() or starting.exception() is not None:
                starting.cancel()
    assert [m["text"] for m in telegram.messages["42"]] == ["pong"]
    assert len([r for r in model.requests if r.role == "parent"]) == 1
    assert [m["content"] for m in transcript if m["role"] == "user"] == ["ping"]
