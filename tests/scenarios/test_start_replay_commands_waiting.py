"""A command sent while the gateway was down waits, at the next start, behind the older message of its chat that
the start replays (`gateway.chat_intake.Replays`), and is then run as the command it is, on that message: /stop
stops it before its model is asked; an edit of a message waiting so changes it where it waits, and its turn
answers it as edited. The real aiogram client inside `TelegramAdapter` against the loopback `FakeTelegram`; Slack's
start held at ``auth.test`` (`SlowToAuthSlack`)."""

from __future__ import annotations

import asyncio

from gateway.testing import settled
from tests.scenarios.test_group_replies import chat, fake  # noqa: F401  (fixtures)
from tests.scenarios.test_start_replay import SlowToAuthSlack
from tests.scenarios.test_start_replay_order import OTHER, down_with_first_waiting, echo, starting
from tests.scenarios.test_telegram_edits_waiting import PRIVATE, write


async def test_a_stop_waiting_behind_the_replay_stops_the_replayed_message(fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    write(fake, "/stop")
    write(fake, "ping", OTHER)
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        await fake.wait_for(lambda: fake.messages[str(OTHER)])  # the other chat goes on while Slack starts
        await fake.wait_for(lambda: not fake.pending)  # /stop handed over and confirmed: recorded, waiting
        assert not fake.messages[str(PRIVATE)]
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: fake.messages[str(PRIVATE)])
        await settled(gateway)
    texts = [m["text"] for m in fake.messages[str(PRIVATE)]]
    assert read == ["ping"], texts  # "first" never reached its model again
    assert len(texts) == 1 and "echo: first" not in texts[0] and texts[0] != "Nothing was running.", texts


async def test_an_edit_of_a_message_waiting_behind_the_replay_is_what_its_turn_answers(
        fake, chat, tmp_path):  # noqa: F811
    await down_with_first_waiting(fake, chat)
    second = write(fake, "second")
    read: list[str] = []
    async with SlowToAuthSlack() as slack, starting(fake, slack, tmp_path, echo(read)) as (gateway, start):
        await fake.wait_for(lambda: not fake.pending)  # "second" handed over and confirmed: recorded, waiting
        edit = fake.edit_message(PRIVATE, second, "second, edited")  # applied where "second" waits, at once
        write(fake, "ping", OTHER)
        await fake.wait_for(lambda: edit in fake.served)
        slack.auth.set()
        await asyncio.wait_for(start, 10)
        await fake.wait_for(lambda: len(fake.messages[str(PRIVATE)]) == 2 and fake.messages[str(OTHER)])
        await settled(gateway)
    assert [m["text"] for m in fake.messages[str(PRIVATE)]] == ["echo: first", "echo: second, edited"]
    assert [m["text"] for m in fake.messages[str(OTHER)]] == ["echo: ping"]
