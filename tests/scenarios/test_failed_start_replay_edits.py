"""A message sent while the gateway was down waits, at the next start, behind the older message of its chat that
the start replays (`gateway.chat_intake.Replays`); that start fails before it replays anything (a later platform
refuses its token), so both wait for the start after. An edit of the waiting message handed over once the start
has failed, before or while the gateway stops, is kept with the message in the inbox: the next start answers it as
edited, as it does an edit handed over before the failure. The real aiogram client inside `TelegramAdapter` against
the loopback `FakeTelegram`; Slack's start held at ``auth.test`` (`SlowToAuthSlack`)."""

from __future__ import annotations

import asyncio

import pytest

from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.scenarios.test_group_replies import chat, fake  # noqa: F401  (fixtures)
from tests.scenarios.test_start_replay import SlowToAuthSlack
from tests.scenarios.test_start_replay_order import down_with_first_waiting, echo, starting
from tests.scenarios.test_telegram_edits_waiting import PRIVATE, write


async def answered_after_the_next_start(telegram, tmp_path) -> list[str]:
    """What the private chat is answered by a start that brings every platform up; the model reads each once."""
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(telegram, slack, tmp_path, echo(read)) as (gateway, start):
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await telegram.wait_for(lambda: len(telegram.messages[str(PRIVATE)]) == 2)
        await settled(gateway)
    assert read == ["first", "second, edited"]
    return [m["text"] for m in telegram.messages[str(PRIVATE)]]


async def test_an_edit_handed_over_after_the_start_failed_is_answered_by_the_next_start(
        fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    second = write(fake, "second")
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo([])) as (gateway, start):
        await fake.wait_for(lambda: not fake.pending)  # "second" handed over and confirmed: recorded, waiting
        slack.bot_token_revoked = True  # Slack refuses the token: the start fails, and replays nothing
        slack.auth.set()
        with pytest.raises(Exception):
            await asyncio.wait_for(start, 10)
        fake.edit_message(PRIVATE, second, "second, edited")
        await fake.wait_for(lambda: not fake.pending)  # the edit handed over and confirmed to Telegram
    assert not fake.messages[str(PRIVATE)]
    assert await answered_after_the_next_start(fake, tmp_path) == ["echo: first", "echo: second, edited"]


class HeldStop(RecordingAdapter):
    """A platform stopped first, whose stop waits until ``go`` is set: the gateway's stop has begun (it takes no
    new event now), and Telegram, stopped after it, still hands updates over."""

    def __init__(self) -> None:
        super().__init__()
        self.stopping, self.go = asyncio.Event(), asyncio.Event()

    async def stop(self) -> None:
        self.stopping.set()
        await self.go.wait()
        await super().stop()


async def test_an_edit_handed_over_while_the_failed_start_stops_is_answered_by_the_next_start(
        fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    second = write(fake, "second")
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}})
    async with SlowToAuthSlack() as slack:
        held = HeldStop()
        adapters = [held, TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10),
                    SlackAdapter(bot_token=slack.bot_token, app_token=slack.app_token, api_base=slack.api_base,
                                 ping_interval=0.2)]
        gateway = Gateway(AgentHost(config, model=echo([])), adapters)
        start = asyncio.ensure_future(gateway.start())
        try:
            await fake.wait_for(lambda: not fake.pending)  # "second" handed over and confirmed: recorded, waiting
            slack.bot_token_revoked = True
            slack.auth.set()
            with pytest.raises(Exception):
                await asyncio.wait_for(start, 10)
            stopping = asyncio.ensure_future(gateway.stop(grace=0))
            await asyncio.wait_for(held.stopping.wait(), 5)
            fake.edit_message(PRIVATE, second, "second, edited")
            await fake.wait_for(lambda: not fake.pending)  # handed over while the gateway stops, and confirmed
        finally:
            held.go.set()
            if not start.done():
                start.cancel()
            await asyncio.gather(start, return_exceptions=True)
        await asyncio.wait_for(stopping, 10)
    assert not fake.messages[str(PRIVATE)]
    assert await answered_after_the_next_start(fake, tmp_path) == ["echo: first", "echo: second, edited"]
