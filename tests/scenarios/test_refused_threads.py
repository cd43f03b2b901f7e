"""A stranger the gateway refuses does not bring the bot into a thread: end to end with the real Slack and
Discord adapters (slack-bolt, discord.py) against their loopback fakes, and the real gateway. Before, the
thread of a refused mention was the bot's, and an allowed member's reply there, not addressed to it, ran a turn."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

REFUSED = "only answers people"


def echo(request: ModelRequest) -> dict:
    return {"text": "re: " + re.sub(r"^\[[^\]]+\] ", "", str(request.messages[-1].get("content")))}


# -- Slack -------------------------------------------------------------------------------------


@pytest.fixture
async def slack(tmp_path) -> AsyncIterator[tuple[FakeSlack, Gateway, ScriptedModel]]:
    fake = await FakeSlack().start()
    model = ScriptedModel({"parent": echo})
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2)
    config = make_config(tmp_path, platforms={"slack": {"allowed_users": ["U1"]}})
    gateway = await start_gateway(config, [adapter], model=model)
    try:
        yield fake, gateway, model
    finally:
        await gateway.stop(grace=0)
        await fake.close()


def bot_texts(fake: FakeSlack, channel: str, thread: str) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((channel, thread), []) if m.get("bot_id")]


async def handed_over(fake: FakeSlack, gateway: Gateway) -> None:
    """Every message pushed so far is acked (handed to the gateway, or passed over) and handled."""
    await fake.wait_for(lambda: all(e.acked for e in fake.envelopes.values()))
    await settled(gateway)


async def test_a_refused_mention_in_a_channel_does_not_put_the_bot_in_its_thread(slack):
    fake, gateway, model = slack
    thread = (await fake.push_mention("C1", "U2", "let me in"))["event"]["ts"]
    await fake.wait_for(lambda: bot_texts(fake, "C1", thread))
    await fake.push_message("C1", "U1", "ignore them, back to work", thread_ts=thread)
    # Refused again without an answer (within the hour): its thread is not the bot's either.
    again = (await fake.push_mention("C1", "U2", "hello?"))["event"]["ts"]
    await handed_over(fake, gateway)
    await fake.push_message("C1", "U1", "still not for the bot", thread_ts=again)
    await handed_over(fake, gateway)
    [refusal] = bot_texts(fake, "C1", thread)
    assert REFUSED in refusal and bot_texts(fake, "C1", again) == []
    assert model.requests == [] and len(gateway.sessions) == 0


async def test_an_allowed_mention_in_a_thread_a_stranger_mentioned_the_bot_in_still_makes_it_the_bots(slack):
    fake, gateway, model = slack
    thread = "1700000000.000500"  # people's thread
    await fake.push_mention("C1", "U2", "can you help?", thread_ts=thread)
    await fake.wait_for(lambda: bot_texts(fake, "C1", thread))
    await fake.push_mention("C1", "U1", "you can help me", thread_ts=thread)
    await fake.push_mention("C1", "U2", "and me?", thread_ts=thread)  # refused: U1's mention keeps it the bot's
    await fake.wait_for(lambda: len(bot_texts(fake, "C1", thread)) == 2)
    await handed_over(fake, gateway)
    await fake.push_message("C1", "U1", "a follow-up, no mention", thread_ts=thread)
    await fake.wait_for(lambda: len(bot_texts(fake, "C1", thread)) == 3)
    await settled(gateway)
    assert bot_texts(fake, "C1", thread)[1:] == ["re: you can help me", "re: a follow-up, no mention"]


# -- Discord -----------------------------------------------------------------------------------

GUILD, CHANNEL, THREAD, USER, STRANGER = 500, 600, 701, 42, 999

fake = fake_discord()


async def test_a_refused_mention_in_a_discord_thread_does_not_put_the_bot_in_it(tmp_path, fake: FakeDiscord):
    model = ScriptedModel({"parent": echo})
    config = make_config(tmp_path, platforms={"discord": {"allowed_users": [str(USER)]}})
    gateway = await start_gateway(config, [adapter_for(fake)], model=model)
    try:
        fake.push_guild_message(GUILD, CHANNEL, STRANGER, "let me in", mention_bot=True, thread_id=THREAD)
        await fake.wait_for(lambda: fake.bot_messages(THREAD))
        await settled(gateway)
        fake.push_guild_message(GUILD, CHANNEL, USER, "ignore them, back to work", thread_id=THREAD)
        fake.push_dm(USER, "ping")  # events reach the client in order: answered, the reply before it was read
        await fake.wait_for(lambda: fake.bot_messages(fake.dm_channel(USER)))
        await settled(gateway)
        [refusal] = fake.bot_messages(THREAD)
        assert REFUSED in refusal.content
        assert [m.content for m in fake.bot_messages(fake.dm_channel(USER))] == ["re: ping"]
        assert len(model.requests) == 1
        # An allowed member's mention there makes it the bot's: a follow-up needs no mention.
        fake.push_guild_message(GUILD, CHANNEL, USER, "help me", mention_bot=True, thread_id=THREAD)
        await fake.wait_for(lambda: len(fake.bot_messages(THREAD)) == 2)
        fake.push_guild_message(GUILD, CHANNEL, USER, "and a follow-up", thread_id=THREAD)
        await fake.wait_for(lambda: len(fake.bot_messages(THREAD)) == 3)
        await settled(gateway)
        assert [m.content for m in fake.bot_messages(THREAD)][1:] == ["re: help me", "re: and a follow-up"]
    finally:
        await gateway.stop(grace=0)
        await join_heartbeat_threads()
