"""In a Discord channel, what answers the bot's question (``clarify``): a reply to the question; not a reply to an
earlier answer of the bot's, which is a request of its own, answered after the turn. The real discord.py client
inside `DiscordAdapter` against `FakeDiscord`, with the real `Gateway`."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.testing import settled
from platforms.fakes.discord import FakeDiscord
from tests.asking_model import asking_parent
from tests.discord_client import discord_gateways, fake_discord

GUILD, CHANNEL, BOB, CAROL = 500, 600, 42, 43

fake = fake_discord()
start = discord_gateways()


def texts(fake: FakeDiscord) -> list[str]:
    return [m.content for m in fake.bot_messages(CHANNEL)]


def reply(fake: FakeDiscord, user: int, text: str, to: str) -> str:
    """``user``'s message replying to the message ``to`` of the channel, as Discord sends one (type 19)."""
    data = fake._message_payload(str(CHANNEL), str(user), None, text, guild=str(GUILD))
    stored = fake.messages[str(CHANNEL)][-1]
    stored.reply_to = to
    data.update(fake._message_json(stored, guild=str(GUILD)))
    return fake._dispatch("MESSAGE_CREATE", data)["id"]


async def test_a_reply_to_an_earlier_answer_is_a_request_of_its_own_not_the_answer(fake, start):
    gateway: Gateway = await start(model=ScriptedModel({"parent": asking_parent}))
    fake.push_guild_message(GUILD, CHANNEL, CAROL, "when is the release?", mention_bot=True)
    await fake.wait_for(lambda: texts(fake))
    fake.push_guild_message(GUILD, CHANNEL, BOB, "please deploy the app", mention_bot=True)
    await fake.wait_for(lambda: len(texts(fake)) == 2)
    earlier, question = fake.bot_messages(CHANNEL)
    assert question.content.startswith("❓ Which environment?")
    reply(fake, CAROL, "and the one after?", earlier.id)
    # Waiting for its turn, or (the fault) taken for the answer.
    await fake.wait_for(lambda: any(s.queue for s in gateway.sessions) or len(texts(fake)) == 3)
    reply(fake, BOB, "2", question.id)
    await fake.wait_for(lambda: len(texts(fake)) == 4)
    await settled(gateway)
    assert texts(fake)[2:] == ["deploying to: [@user42] production", "plain answer to [@user43] and the one after?"]
