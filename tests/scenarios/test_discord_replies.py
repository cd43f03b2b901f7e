"""In a Discord guild channel or thread, each answer replies to (quotes) the message it answers:
the real discord.py client inside `DiscordAdapter` against `FakeDiscord`, with the real `Gateway`.

A DM's answers quote nothing, and an answer to a message deleted meanwhile still arrives, as a
plain message (``fail_if_not_exists: false``)."""

from __future__ import annotations

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.fakes.discord import FakeMessage
from tests.discord_client import discord_gateways, fake_discord
from tests.scenarios.test_discord_chat import SEND, echo_script, in_channel

GUILD, CHANNEL, THREAD, BOB, CAROL = 500, 600, 701, 42, 43


fake = fake_discord()
start = discord_gateways()


def replies(messages: list[FakeMessage]) -> list[tuple[str, str | None]]:
    return [(m.content, m.reply_to) for m in messages]


@pytest.mark.parametrize("thread", [None, THREAD])
async def test_each_members_answer_replies_to_their_question(fake, start, thread):
    model = ScriptedModel({"parent": [
        [{"wait": "bob", "text": "answer for bob"}],
        [{"text": "answer for carol"}],
    ]})
    gateway = await start(model=model)
    bobs = fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True,
                                   thread_id=thread)
    await model.reached("bob")
    carols = fake.push_guild_message(GUILD, CHANNEL, CAROL, "who is on call tonight?", mention_bot=True,
                                     thread_id=thread)
    await fake.wait_for(lambda: any(item.event is not None for s in gateway.sessions for item in s.queue))
    model.release("bob")
    where = thread or CHANNEL
    await fake.wait_for(lambda: len(fake.bot_messages(where)) == 2)
    await settled(gateway)
    assert replies(fake.bot_messages(where)) == [("answer for bob", bobs), ("answer for carol", carols)]
    reference = in_channel(fake, SEND, where)[0].body["message_reference"]
    assert str(reference["message_id"]) == bobs and reference["fail_if_not_exists"] is False


async def test_a_dms_answer_quotes_nothing(fake, start):
    gateway = await start(script=echo_script())
    fake.push_dm(BOB, "hello")
    dm = fake.dm_channel(BOB)
    await fake.wait_for(lambda: fake.bot_messages(dm))
    await settled(gateway)
    assert replies(fake.bot_messages(dm)) == [("echo: hello", None)]
    assert "message_reference" not in in_channel(fake, SEND, dm)[0].body


async def test_the_answer_to_a_message_deleted_meanwhile_still_arrives(fake, start):
    model = ScriptedModel({"parent": [[{"wait": "bob", "text": "answer for bob"}]]})
    gateway = await start(model=model)
    bobs = fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True)
    await model.reached("bob")
    fake.delete_message(CHANNEL, bobs)
    model.release("bob")
    await fake.wait_for(lambda: fake.bot_messages(CHANNEL))
    await settled(gateway)
    assert replies(fake.bot_messages(CHANNEL)) == [("answer for bob", None)]


async def test_a_file_that_opens_the_answer_replies_to_the_question(fake, start, tmp_path):
    # Among several members' requests, a file posted as a plain message is nobody's.
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "the numbers"}}]},
        {"text": "there you go"},
    ]]})
    gateway = await start(model=model)
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
    bobs = fake.push_guild_message(GUILD, CHANNEL, BOB, "the Q3 numbers please", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 2)
    await settled(gateway)
    document, reply = fake.bot_messages(CHANNEL)
    assert [a["filename"] for a in document.attachments] == ["q3.csv"]
    assert (document.reply_to, reply.reply_to) == (bobs, None)  # the answer's first message quotes, the rest follow


async def test_a_members_command_is_answered_replying_to_it(fake, start):
    # Several members' commands and their answers interleave in a channel: each answer shows whose it was.
    model = ScriptedModel({"parent": [[{"wait": "bob", "text": "never said"}]]})
    gateway = await start(model=model)
    bobs = fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True)
    await model.reached("bob")
    carols = fake.push_guild_message(GUILD, CHANNEL, CAROL, "!stop", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 2)
    await settled(gateway)
    # Bob, whose question goes unanswered, is told why, quoting it; Carol's answer quotes her command.
    assert replies(fake.bot_messages(CHANNEL)) == [(f"(Stopped by @user{CAROL}'s /stop.)", bobs),
                                                   ("Stopped the running turn.", carols)]
