"""A message sent while the gateway was down waits behind the older messages of its chat that the start
replays: those are queued only once every platform has started, and Telegram, started first, hands the new
one over before that. Other chats do not wait. The real aiogram client inside `TelegramAdapter` against the
loopback `FakeTelegram`; Slack's start held at ``auth.test`` (`SlowToAuthSlack`)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import make_config, settled
from platforms.fakes.telegram import FakeTelegram
from platforms.slack import SlackAdapter
from platforms.telegram import TelegramAdapter
from tests.scenarios.test_group_replies import chat, fake  # noqa: F401  (fixtures)
from tests.scenarios.test_start_replay import SlowToAuthSlack
from tests.scenarios.test_telegram_edits_waiting import PRIVATE, gated_echo, write

OTHER = 43


def echo(read: list[str]) -> ScriptedModel:
    """Echoes what the model reads, noting it in ``read`` as it is called: once per turn, twice for a turn
    interrupted and run again."""
    def parent(request: ModelRequest) -> dict:
        read.append(text := str(request.messages[-1]["content"]))
        return {"text": f"echo: {text}"}
    return ScriptedModel({"parent": parent})


@contextlib.asynccontextmanager
async def starting(telegram: FakeTelegram, slack: SlowToAuthSlack, tmp_path, model: ScriptedModel):
    """A gateway whose start is under way: Telegram starts, Slack's start waits at ``auth.test``. Stopped at the
    end, whatever its start came to."""
    config = make_config(tmp_path, platforms={"telegram": {"allow_all": True}})
    adapters = [TelegramAdapter(telegram.token, api_base=telegram.base_url, polling_timeout=10),
                SlackAdapter(bot_token=slack.bot_token, app_token=slack.app_token, api_base=slack.api_base,
                             ping_interval=0.2)]
    gateway = Gateway(AgentHost(config, model=model), adapters)
    start = asyncio.ensure_future(gateway.start())
    try:
        yield gateway, start
    finally:
        slack.auth.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(start, 10)
        await gateway.stop(grace=0)


async def down_with_first_waiting(telegram: FakeTelegram, chat) -> None:  # noqa: F811
    """``first`` is in its turn when the gateway stops: the next start replays it."""
    model = gated_echo()
    gateway = await chat(model)
    write(telegram, "first")
    await model.reached("first")
    await gateway.stop(grace=0)


async def test_a_message_sent_while_down_is_answered_after_the_older_one_the_start_replays(
        fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    write(fake, "ping", OTHER)  # another chat, with nothing to replay
    second = fake.push_message(PRIVATE, "second")
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        await fake.wait_for(lambda: fake.messages[str(OTHER)])  # answered while Slack still starts
        event = f"{fake.bot_user['id']}:{second}"  # Telegram's event ids name the bot too
        await fake.wait_for(lambda: gateway.store.inbox.arrival("telegram", event) is not None)
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
        await settled(gateway)
    assert [m["text"] for m in fake.messages[str(OTHER)]] == ["echo: ping"]
    # In the order sent, and the older one interrupted nothing: each turn ran once.
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: second"]
    assert read == ["ping", "first", "second"]


async def test_a_start_that_fails_leaves_the_new_message_to_the_next_after_the_older_one(
        fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    second = fake.push_message(PRIVATE, "second")
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        event = f"{fake.bot_user['id']}:{second}"  # Telegram's event ids name the bot too
        await fake.wait_for(lambda: gateway.store.inbox.arrival("telegram", event) is not None)
        slack.bot_token_revoked = True  # Slack refuses the token: the start fails, and replays nothing
        slack.auth.set()
        with pytest.raises(Exception):
            await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: not fake.pending)  # the new message handed over, and confirmed to Telegram
    assert not fake.messages[str(PRIVATE)] and not read  # nothing ran in the start that failed
    slack.bot_token_revoked = False
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
        await settled(gateway)
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: second"]
    assert read == ["first", "second"]
