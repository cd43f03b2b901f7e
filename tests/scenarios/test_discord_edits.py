"""A member edits or deletes a message on Discord: the real discord.py client inside `DiscordAdapter`
against `FakeDiscord`, with the real `Gateway`.

The gateway takes a message as it was sent (docs/platforms/discord.md): an edit is never answered as
a message of its own, nor changes the text of one waiting for its turn or running; a deletion does
not take back one the gateway has received."""

from __future__ import annotations

import re

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from tests.scenarios.test_discord_chat import SENDER
from tests.scenarios.test_discord_replies import CHANNEL, GUILD, fake, start  # noqa: F401  (fixtures)

BOB, CAROL, DAVE = 42, 43, 44


def gated_echo() -> ScriptedModel:
    """Echoes each message; the one saying "first" waits at the gate ``first``."""
    def parent(request) -> dict:
        text = re.sub(SENDER, "", request.messages[-1]["content"]).strip()
        return {"wait": "first", "text": f"echo: {text}"} if text == "first" else {"text": f"echo: {text}"}
    return ScriptedModel({"parent": parent})


async def test_edits_and_deletions_change_nothing_the_gateway_received(
        fake, start):  # noqa: F811  (the fixtures imported)
    model = gated_echo()
    gateway = await start(model=model)
    bobs = fake.push_guild_message(GUILD, CHANNEL, BOB, "first", mention_bot=True)
    await model.reached("first")
    carols = fake.push_guild_message(GUILD, CHANNEL, CAROL, "deploy to prod", mention_bot=True)
    daves = fake.push_guild_message(GUILD, CHANNEL, DAVE, "sent by mistake", mention_bot=True)
    await fake.wait_for(lambda: sum(item.event is not None for s in gateway.sessions for item in s.queue) == 2)
    fake.edit_message(CHANNEL, bobs, f"<@{fake.bot_id}> first, running")  # its turn running
    fake.edit_message(CHANNEL, carols, f"<@{fake.bot_id}> deploy to staging")  # waiting for its turn
    fake.delete_message(CHANNEL, daves)  # waiting for its turn
    model.release("first")
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 3)
    fake.edit_message(CHANNEL, bobs, f"<@{fake.bot_id}> first, answered")  # answered already
    fake.push_guild_message(GUILD, CHANNEL, BOB, "last", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 4)
    await settled(gateway)
    assert [m.content for m in fake.bot_messages(CHANNEL)] == [
        "echo: first", "echo: deploy to prod", "echo: sent by mistake", "echo: last"]
