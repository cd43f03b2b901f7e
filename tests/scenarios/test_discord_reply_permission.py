"""Discord refuses a reply (403 Missing Permissions) where the bot lacks Read Message History, though it takes
the bot's plain posts there: the real discord.py client inside `DiscordAdapter` against `FakeDiscord`, with the
real `Gateway`. The answer (its first message quotes the question) arrives unquoted, and the log says why once.
The channel is remembered so for `REFUSED_FOR` seconds: its later answers go unquoted at once, not after a refused
reply each, and once that time is over a reply is tried again, so a permission granted meanwhile takes effect.

Before, the refused reply failed the answer's first part for good, and every part the quote was passed on to."""

from __future__ import annotations

import logging
import time

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.models.scripted import ScriptedModel
from gateway.testing import settled
from platforms.discord_unquoted import REFUSED_FOR
from tests.discord_client import discord_gateways, fake_discord
from tests.scenarios.test_discord_chat import SEND, in_channel

GUILD, CHANNEL, THREAD, BOB, CAROL, DAVE = 500, 600, 701, 42, 43, 44
UNQUOTED = "lacks Read Message History"


fake = fake_discord()
start = discord_gateways()


@pytest.mark.parametrize("thread", [None, THREAD])
async def test_answers_arrive_unquoted_where_the_bot_may_not_reply(fake, start, caplog, thread):
    model = ScriptedModel({"parent": [[{"text": "hi"}], [{"text": "answer for bob"}], [{"text": "answer for carol"}]]})
    gateway = await start(model=model)
    where = thread or CHANNEL
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", mention_bot=True, thread_id=thread)
    await fake.wait_for(lambda: fake.bot_messages(where))
    fake.deny(where, "read_message_history")
    with caplog.at_level(logging.WARNING, logger="platforms.discord"):
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True, thread_id=thread)
        await fake.wait_for(lambda: len(fake.bot_messages(where)) == 2)
        fake.push_guild_message(GUILD, CHANNEL, CAROL, "who is on call?", mention_bot=True, thread_id=thread)
        await fake.wait_for(lambda: len(fake.bot_messages(where)) == 3)
        await settled(gateway)
    assert [(m.content, m.reply_to) for m in fake.bot_messages(where)[1:]] == [
        ("answer for bob", None), ("answer for carol", None)]
    assert [c.status for c in in_channel(fake, SEND, where)[1:]] == [403, 200, 200]  # one refused reply, not one each
    said = [r for r in caplog.records if UNQUOTED in r.getMessage()]
    assert len(said) == 1 and str(where) in said[0].getMessage()  # once a channel, not at every answer


async def test_a_reply_is_tried_again_once_the_refusal_is_old(fake, start):
    # The admin grants Read Message History: within REFUSED_FOR the answers still go unquoted, after it they quote.
    later = [0.0]
    model = ScriptedModel({"parent": [[{"text": "answer for bob"}], [{"text": "answer for carol"}],
                                      [{"text": "answer for dave"}]]})
    gateway = await start(model=model, adapter={"clock": lambda: time.time() + later[0]})
    fake.deny(CHANNEL, "read_message_history")
    fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is the release?", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 1)
    fake.allow(CHANNEL, "read_message_history")
    fake.push_guild_message(GUILD, CHANNEL, CAROL, "who is on call?", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 2)
    later[0] = REFUSED_FOR
    daves = fake.push_guild_message(GUILD, CHANNEL, DAVE, "where are the notes?", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 3)
    await settled(gateway)
    assert [(m.content, m.reply_to) for m in fake.bot_messages(CHANNEL)] == [
        ("answer for bob", None), ("answer for carol", None), ("answer for dave", daves)]
    assert [c.status for c in in_channel(fake, SEND, CHANNEL)] == [403, 200, 200, 200]


async def test_a_file_that_opens_the_answer_arrives_unquoted(fake, start, tmp_path):
    model = ScriptedModel({"parent": [[
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "q3.csv", "caption": "the numbers"}}]},
        {"text": "there you go"},
    ]]})
    gateway = await start(model=model)
    (tmp_path / "state" / "workspace" / "q3.csv").write_text("region,total\nnorth,12\n")
    fake.deny(CHANNEL, "read_message_history")
    fake.push_guild_message(GUILD, CHANNEL, BOB, "the Q3 numbers please", mention_bot=True)
    await fake.wait_for(lambda: len(fake.bot_messages(CHANNEL)) == 2)
    await settled(gateway)
    document, reply = fake.bot_messages(CHANNEL)
    assert [a["filename"] for a in document.attachments] == ["q3.csv"] and document.content == "the numbers"
    assert fake.attachment_data[document.attachments[0]["id"]] == b"region,total\nnorth,12\n"
    assert (document.reply_to, reply.content) == (None, "there you go")


async def test_no_send_permission_is_not_taken_for_the_reply_permission(fake, start, caplog):
    # The plain post is refused too: that refusal fails the part, as before, and nothing blames the history.
    gateway = await start(model=ScriptedModel({"parent": [[{"text": "never seen"}]]}))
    fake.push_guild_message(GUILD, CHANNEL, BOB, "hello", mention_bot=True)
    fake.deny(CHANNEL, "send_messages")
    with caplog.at_level(logging.WARNING):
        await fake.wait_for(lambda: len(in_channel(fake, SEND, CHANNEL)) >= 2)
        await settled(gateway)
    assert fake.bot_messages(CHANNEL) == []
    assert not any(UNQUOTED in r.getMessage() for r in caplog.records)
    assert any("Missing Permissions" in r.getMessage() for r in caplog.records)
