"""The bot blocked by its user (or removed from a group) while a chat's work runs: the real `Gateway` with a
`TelegramAdapter` (real aiogram) polling the loopback `FakeTelegram`. The running turn and its subagents are
stopped as /stop stops them, the messages waiting for their turns dropped, without a word in the chat (which takes
none) and with one log line naming the chat; unblocked, the chat is answered as always."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from gateway.testing import settled
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.gateway.chat_lost import LOST, hanging_gateways, lines
from tests.hanging_children import children_hanging


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


gateways = hanging_gateways(
    "telegram", lambda fake: TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10),
    lambda fake: fake.calls_to("getUpdates"))


async def test_a_user_who_blocks_the_bot_stops_the_chats_work_without_a_word(fake, gateways, caplog):
    caplog.set_level(logging.INFO)
    # Inline (interim messages off): the turn runs as long as its children; queued: a second message waits.
    gateway, model = await gateways(interim_assistant_messages=False, busy_input_mode="queue")
    fake.push_message(42, "please delegate this")
    await children_hanging(model)
    (session,) = gateway.sessions
    working = session.session_id
    fake.push_message(42, "and one more thing")
    await fake.wait_for(lambda: session.queue)
    fake.remove_bot(42)
    children = gateway.host.children
    await fake.wait_for(lambda: session.running is None and not children.children(working))
    await settled(gateway)
    assert [c.state.value for c in children.recent(working)] == ["INTERRUPTED", "INTERRUPTED"]
    assert not session.queue  # dropped: its answer would be refused, after a model call
    assert fake.calls_to("sendMessage") == []  # no "Stopped" into a chat that takes nothing
    assert lines(caplog) == [f"telegram chat 42 {LOST} (the bot was blocked by the user): stopped the running turn"
                             " and 2 subagents; dropped 1 waiting message"]
    assert not any("alice" in r.getMessage().lower() for r in caplog.records)  # the user's name is theirs

    fake.add_bot(42)  # unblocked: answered as always
    fake.push_message(42, "hello again")
    await fake.wait_for(lambda: fake.messages["42"])
    await settled(gateway)
    assert [m["text"] for m in fake.messages["42"]] == ["all done"]
    assert len(lines(caplog)) == 1


async def test_a_block_whose_update_was_missed_stops_the_work_at_the_first_refusal(fake, gateways, caplog):
    caplog.set_level(logging.INFO)
    gateway, model = await gateways(interim_assistant_messages=True)  # background: the children outlive the turn
    fake.push_message(42, "please delegate this")
    await children_hanging(model)
    await fake.wait_for(lambda: fake.messages["42"])
    (session,) = gateway.sessions
    working = session.session_id
    fake.remove_bot(42, update=False)  # blocked while the gateway was down, say: no my_chat_member comes
    # Written just before the block: its turn's typing and answer are refused, and the work stops at the first.
    fake.push_message(42, "are you still there?")
    children = gateway.host.children
    await fake.wait_for(lambda: not children.children(working))
    await settled(gateway)
    assert [c.state.value for c in children.recent(working)] == ["INTERRUPTED", "INTERRUPTED"]
    assert [m["text"] for m in fake.messages["42"]] == ["I started the subagents."]
    # The new turn is stopped too, unless its answer (refused in its turn) was on its way already.
    (line,) = lines(caplog)
    assert line in (f"telegram chat 42 {LOST} (bot was blocked by the user): stopped {what}2 subagents"
                    for what in ("", "the running turn and "))
