"""The message a Discord user replied to reaches the model before their own text (`Inbound.replied`): "@bot what
does this mean?" sent as a reply to a teammate's message reached the model without that message. Its files are
named; a reply to the bot's own message brings nothing, as the model has that message in its history. The real
discord.py client inside `DiscordAdapter` against `FakeDiscord`, through a running gateway to a scripted model."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from platforms.fakes._discord_files import Upload
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import discord_gateways, fake_discord

GUILD, CHANNEL, OTHER_CHANNEL, ALICE, BOB = 500, 600, 601, 41, 42

fake = fake_discord()
start = discord_gateways()


def scripted() -> tuple[ScriptedModel, list[str]]:
    said: list[str] = []

    def answer(request) -> dict:
        said.append(str(request.messages[-1]["content"]))
        return {"text": "ok"}

    return ScriptedModel({"parent": answer}), said


async def test_a_reply_to_a_teammates_message_reaches_the_model_with_it(fake: FakeDiscord, start) -> None:
    model, said = scripted()
    await start(model=model)
    alices = fake.push_guild_message(GUILD, CHANNEL, ALICE, "The deploy failed:\nrollback needed", name="alice")
    fake.push_guild_message(GUILD, CHANNEL, BOB, "what does this mean?", mention_bot=True, name="bob",
                            reply_to=alices)
    file = fake.push_guild_message(GUILD, OTHER_CHANNEL, ALICE, "", name="alice",
                                   files=[Upload("report.pdf", b"%PDF", "application/pdf")])
    fake.push_guild_message(GUILD, OTHER_CHANNEL, BOB, "what is in it?", mention_bot=True, name="bob",
                            reply_to=file)
    await fake.wait_for(lambda: len(said) == 2)
    assert sorted(said) == [
        "[@bob] > (replying to @alice) (a file: report.pdf)\n\nwhat is in it?",
        "[@bob] > (replying to @alice) The deploy failed:\n> rollback needed\n\nwhat does this mean?"]


async def test_a_reply_to_the_bots_message_brings_nothing_more(fake: FakeDiscord, start) -> None:
    model, said = scripted()
    await start(model=model)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", mention_bot=True, name="bob")
    await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
    fake.push_guild_message(GUILD, CHANNEL, BOB, "and then?", reply_to_bot=True, name="bob")
    await fake.wait_for(lambda: len(said) == 2)
    assert said == ["[@bob] hello", "[@bob] and then?"]
