"""What a server admin can take away while the bot runs, beyond Read Message History
(`test_discord_reply_permission`): the real discord.py client inside `DiscordAdapter` against `FakeDiscord`,
with the real `Gateway`. Attach Files: a file refused (403) is noted in its place and the answer goes on. The
channel deleted while an answer waits: each part is refused (404) at once, nothing blocks the outbox."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from tests.discord_client import discord_gateways, fake_discord
from tests.scenarios.test_discord_chat import SEND, in_channel

GUILD, CHANNEL, OTHER, BOB = 500, 600, 601, 42

fake = fake_discord()
start = discord_gateways()


async def test_a_file_refused_for_want_of_attach_files_is_noted_and_the_answer_goes_on(fake, start, tmp_path):
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "the numbers"}}]},
        {"text": "there you go"},
    ]]})
    gateway = await start(model=model)
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
    fake.deny(CHANNEL, "attach_files")
    fake.push_guild_message(GUILD, CHANNEL, BOB, "the Q3 numbers please", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 2)
    await settled(gateway)
    assert [m.content for m in fake.bot_messages(CHANNEL)] == [
        "(The file `q3.csv` could not be sent here: the platform refused it.)", "there you go"]


async def test_an_answer_for_a_deleted_channel_is_given_up_at_once(fake, start):
    long = "\n\n".join(f"paragraph {i} " + "x" * 900 for i in range(5))  # three parts

    def parent(request) -> dict:
        asked = "write it all down" in request.messages[-1]["content"]
        return {"wait": "asked", "text": long} if asked else {"text": "still here"}

    model = ScriptedModel({"parent": parent})
    gateway = await start(model=model)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "write it all down", mention_bot=True)
    await model.reached("asked")
    fake.delete_channel(CHANNEL)
    model.release("asked")
    await settled(gateway)
    sends = in_channel(fake, SEND, CHANNEL)
    assert sends and {c.status for c in sends} == {404}
    assert len(sends) <= 4  # each part tried once (and the note of the one missing): no retries
    fake.push_guild_message(GUILD, OTHER, BOB, "are you there?", mention_bot=True)
    await fake.wait_for(lambda: fake.bot_messages(OTHER))
    assert fake.bot_messages(OTHER)[0].content == "still here"
