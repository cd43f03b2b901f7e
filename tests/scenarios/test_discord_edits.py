"""A member edits or deletes a message on Discord: the real discord.py client inside `DiscordAdapter`
against `FakeDiscord` (``MESSAGE_UPDATE``, ``MESSAGE_DELETE``), with the real `Gateway` (`gateway.message_edits`).

An edit of a message still waiting for its turn is what that turn answers (docs/platforms/discord.md); an edit
is never answered as a message of its own, nor changes the text of a message running or answered, nor of one
it leaves no longer for the bot (its mention taken out in a channel). A deletion of a message waiting for its turn
drops it (`tests.scenarios.test_discord_deletions`)."""

from __future__ import annotations

import re

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import settled
from tests.scenarios.test_discord_chat import SENDER
from tests.scenarios.test_discord_replies import CHANNEL, GUILD, THREAD, fake, start  # noqa: F401  (fixtures)

BOB, CAROL, DAVE = 42, 43, 44


def gated_echo() -> ScriptedModel:
    """Echoes each message; the one saying "first" waits at the gate ``first``."""
    def parent(request) -> dict:
        text = re.sub(SENDER, "", request.messages[-1]["content"]).strip()
        return {"wait": "first", "text": f"echo: {text}"} if text == "first" else {"text": f"echo: {text}"}
    return ScriptedModel({"parent": parent})


def waiting(gateway: Gateway) -> list[str]:
    """The texts of the messages waiting for their turns."""
    return [item.text for s in gateway.sessions for item in s.queue if item.event is not None]


@pytest.mark.parametrize("thread", [None, THREAD])
async def test_an_edit_changes_only_a_message_waiting_for_its_turn(fake, start, thread):  # noqa: F811
    model = gated_echo()
    gateway = await start(model=model)
    where = thread or CHANNEL
    bobs = fake.push_guild_message(GUILD, CHANNEL, BOB, "first", mention_bot=True, thread_id=thread)
    await model.reached("first")
    carols = fake.push_guild_message(GUILD, CHANNEL, CAROL, "deploy to prod", mention_bot=True, thread_id=thread)
    daves = fake.push_guild_message(GUILD, CHANNEL, DAVE, "sent by mistake", mention_bot=True, thread_id=thread)
    await fake.wait_for(lambda: len(waiting(gateway)) == 2)
    fake.edit_message(where, bobs, f"<@{fake.bot_id}> first, running")  # its turn running: left as it is
    fake.edit_message(where, carols, f"<@{fake.bot_id}> deploy to staging")  # waiting for its turn
    fake.delete_message(where, daves)  # waiting for its turn: dropped
    await fake.wait_for(lambda: waiting(gateway) == ["deploy to staging"])
    model.release("first")
    await fake.wait_for(lambda: len(fake.bot_messages(where)) == 2)
    fake.edit_message(where, bobs, f"<@{fake.bot_id}> first, answered")  # answered already: no turn of its own
    fake.edit_message(where, carols, f"<@{fake.bot_id}> deploy to dev")
    fake.push_guild_message(GUILD, CHANNEL, BOB, "last", mention_bot=True, thread_id=thread)
    await fake.wait_for(lambda: len(fake.bot_messages(where)) == 3)
    await settled(gateway)
    assert [m.content for m in fake.bot_messages(where)] == ["echo: first", "echo: deploy to staging", "echo: last"]


async def test_an_edit_that_takes_the_mention_out_changes_nothing(fake, start):  # noqa: F811
    model = gated_echo()
    gateway = await start(model=model)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "first", mention_bot=True)
    await model.reached("first")
    carols = fake.push_guild_message(GUILD, CHANNEL, CAROL, "deploy to prod", mention_bot=True)
    daves = fake.push_guild_message(GUILD, CHANNEL, DAVE, "roll back", mention_bot=True)
    await fake.wait_for(lambda: len(waiting(gateway)) == 2)
    fake.edit_message(CHANNEL, carols, "deploy to staging, bob")  # no longer for the bot: left as it is
    fake.edit_message(CHANNEL, daves, f"roll back now <@{fake.bot_id}>")  # handed over after Carol's
    await fake.wait_for(lambda: "roll back now" in waiting(gateway))
    model.release("first")
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 3)
    await settled(gateway)
    assert [m.content for m in fake.bot_messages(CHANNEL)] == ["echo: first", "echo: deploy to prod",
                                                               "echo: roll back now"]
