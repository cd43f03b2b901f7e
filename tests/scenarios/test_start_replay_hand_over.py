"""A message sent while the gateway was down waits, at the next start, behind the older message of its chat
that the start replays (`gateway.chat_intake.Replays`), but Telegram, which hands updates over one at a time,
goes on meanwhile: the other chats' updates after it are answered while the start still runs. The real aiogram
client inside `TelegramAdapter` against the loopback `FakeTelegram`; Slack's start held at ``auth.test``
(`SlowToAuthSlack`)."""

from __future__ import annotations

import asyncio

from gateway.testing import settled
from tests.scenarios.test_group_replies import chat, fake  # noqa: F401  (fixtures)
from tests.scenarios.test_start_replay import SlowToAuthSlack
from tests.scenarios.test_start_replay_order import OTHER, down_with_first_waiting, echo, starting
from tests.scenarios.test_telegram_edits_waiting import PRIVATE, write


async def test_a_message_waiting_behind_its_chats_replay_holds_no_other_chat(fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    write(fake, "second")  # waits behind "first", which the start replays once Slack has started
    write(fake, "third")
    write(fake, "ping", OTHER)  # handed over after them, with nothing to replay
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        await fake.wait_for(lambda: fake.messages[str(OTHER)])  # answered while Slack still starts
        assert not start.done() and not fake.messages[str(PRIVATE)]
        assert not fake.pending  # every update handed over, and confirmed to Telegram: recorded
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 3)
        await settled(gateway)
    assert [m["text"] for m in fake.messages[str(OTHER)]] == ["echo: ping"]
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: second", "echo: third"]
    assert read == ["ping", "first", "second", "third"]


async def test_a_stop_while_messages_wait_behind_the_replay_leaves_them_to_the_next_start(
        fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    write(fake, "second")
    write(fake, "ping", OTHER)
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        await fake.wait_for(lambda: fake.messages[str(OTHER)])
        await fake.wait_for(lambda: not fake.pending)  # "second" confirmed to Telegram: Telegram keeps it no more
        await gateway.stop(grace=0)  # the start never replays "first": neither runs here
        await asyncio.wait_for(asyncio.gather(start, return_exceptions=True), 10)
    assert not fake.messages[str(PRIVATE)] and read == ["ping"]
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2)
        await settled(gateway)
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: second"]
    assert read == ["ping", "first", "second"]
