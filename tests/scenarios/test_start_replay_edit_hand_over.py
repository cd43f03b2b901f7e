"""A message sent while the gateway was down waits, at the next start, behind the older message of its chat that
the start replays (`gateway.chat_intake.Replays`), and its user edits it meanwhile: the edit is applied to the
waiting message at once (`gateway.message_edits`), so Telegram, which hands updates over one at a time, goes on
with the other chats' updates while the start still runs; the message's turn answers it as edited, after a stop
before its replay too (the edit is kept in the inbox). The real aiogram client inside `TelegramAdapter` against
the loopback `FakeTelegram`; Slack's start held at ``auth.test`` (`SlowToAuthSlack`)."""

from __future__ import annotations

import asyncio

from gateway.testing import settled
from tests.scenarios.test_group_replies import chat, fake  # noqa: F401  (fixtures)
from tests.scenarios.test_start_replay import SlowToAuthSlack
from tests.scenarios.test_start_replay_order import OTHER, down_with_first_waiting, echo, starting
from tests.scenarios.test_telegram_edits_waiting import PRIVATE, write


async def test_an_edit_of_a_message_waiting_behind_the_replay_holds_no_other_chat(fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    second = write(fake, "second")  # waits behind "first", which the start replays once Slack has started
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        await fake.wait_for(lambda: not fake.pending)  # "second" handed over and confirmed: recorded, waiting
        fake.edit_message(PRIVATE, second, "second, edited")
        fake.edit_message(PRIVATE, second, "/new")  # into a command: left as it was
        write(fake, "ping", OTHER)  # handed over after the edits, with nothing to replay
        await fake.wait_for(lambda: fake.messages[str(OTHER)])  # answered while Slack still starts
        assert not start.done() and not fake.messages[str(PRIVATE)]
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
        await settled(gateway)
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: second, edited"]
    assert read == ["ping", "first", "second, edited"]


async def test_a_stop_before_the_replay_leaves_the_waiting_message_edited_to_the_next_start(
        fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    second = write(fake, "second")
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        await fake.wait_for(lambda: not fake.pending)
        fake.edit_message(PRIVATE, second, "second, edited")
        await fake.wait_for(lambda: not fake.pending)  # the edit handed over and confirmed: durable
        await gateway.stop(grace=0)  # the start never replays "first": neither runs here
        await asyncio.wait_for(asyncio.gather(start, return_exceptions=True), 10)
    assert not fake.messages[str(PRIVATE)] and not read
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
        await settled(gateway)
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: second, edited"]
    assert read == ["first", "second, edited"]
