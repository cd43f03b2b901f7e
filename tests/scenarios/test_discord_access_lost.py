"""The bot removed from the server (or the channel hidden from it) while an answer is being sent: Discord refuses
every post there with 403 Missing Access (50001). The real discord.py client inside `DiscordAdapter` against
`FakeDiscord`, with the real `Gateway`.

Before, each part quoting the question (the first, and each the quote passed on to as the one before failed) and a
file were posted twice, quoted then unquoted, as if only the reply were refused (`discord_posts._replying`): twice
the refused calls, which Discord counts toward barring the bot, and a file's bytes uploaded twice."""

from __future__ import annotations

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from tests.discord_client import discord_gateways, fake_discord
from tests.scenarios.test_discord_chat import SEND, in_channel

GUILD, CHANNEL, OTHER, BOB = 500, 600, 601, 42

fake = fake_discord()
start = discord_gateways()


async def test_each_part_and_file_is_posted_once_where_the_bot_lost_access(fake, start, tmp_path):
    long = "\n\n".join(f"paragraph {i} " + "x" * 900 for i in range(5))  # three parts

    def parent(request) -> dict:
        last = request.messages[-1]
        if "write it all down" in (last.get("content") or ""):
            return {"wait": "asked", "tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv"}}]}
        return {"text": long} if last["role"] == "tool" else {"text": "still here"}

    model = ScriptedModel({"parent": parent})
    gateway = await start(model=model)
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
    fake.push_guild_message(GUILD, CHANNEL, BOB, "write it all down", mention_bot=True)
    await model.reached("asked")
    fake.fail_next(f"POST /channels/{CHANNEL}/messages", 403, code=50001, message="Missing Access", times=50)
    model.release("asked")
    await settled(gateway)
    sends = in_channel(fake, SEND, CHANNEL)
    nonces = [c.body["nonce"] for c in sends]
    assert any(c.body.get("message_reference") for c in sends)  # the quote was there to fall back from
    assert {c.status for c in sends} == {403} and len(nonces) >= 4  # the file, three parts (and the notes)
    assert len(set(nonces)) == len(nonces)  # each tried once: none again unquoted
    fake.push_guild_message(GUILD, OTHER, BOB, "are you there?", mention_bot=True)
    await fake.wait_for(lambda: fake.bot_messages(OTHER))
    assert fake.bot_messages(OTHER)[0].content == "still here"
