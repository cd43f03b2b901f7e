"""The bot blocked by a user or removed from a group: `TelegramAdapter` (real aiogram, polling the loopback
`FakeTelegram`) asks for ``my_chat_member`` and tells the gateway once that it can no longer write to the chat
(`platforms.base.LosesChats`), by Telegram's update or, when that never came, by a write Telegram refuses so."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from platforms.base import Forbidden, Outbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.chat_lost import Lost, losing
from tests.platforms.sink import Sink

GROUP = -1005


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
async def started(fake) -> AsyncIterator[tuple[TelegramAdapter, Lost, Sink]]:
    async with losing(TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)) as started:
        yield started


def reply(chat: int, text: str = "an answer") -> Outbound:
    return Outbound(chat_id=str(chat), thread_id=None, text=text)


async def test_the_bot_blocked_or_removed_is_told_once_by_its_update(fake, started):
    adapter, lost, sink = started
    polls = await fake.wait_for(lambda: fake.calls_to("getUpdates"))
    assert "my_chat_member" in json.loads(polls[0]["allowed_updates"])
    fake.remove_bot(42)
    fake.remove_bot(GROUP)
    await fake.wait_for(lambda: len(lost.told) == 2)
    assert lost.told == [("42", "the bot was blocked by the user"), (str(GROUP), "the bot was removed from the chat")]
    # Its answers, refused for the same reason, tell nothing more.
    for chat in (42, GROUP):
        with pytest.raises(Forbidden):
            await adapter.send(reply(chat))
    fake.add_bot(42)  # unblocked: nothing to tell
    fake.push_message(42, "hello again")
    await fake.wait_for(lambda: not fake.pending)
    assert lost.told == [("42", "the bot was blocked by the user"), (str(GROUP), "the bot was removed from the chat")]
    assert (await adapter.send(reply(42))).message_id


async def test_a_write_refused_as_blocked_tells_it_when_the_update_never_came(fake, started):
    adapter, lost, sink = started
    fake.remove_bot(42, update=False)  # missed while the gateway was down
    for text in ("first part", "second part"):
        with pytest.raises(Forbidden):
            await adapter.send(reply(42, text))
    await fake.wait_for(lambda: lost.told)
    await adapter.typing("42", None)  # refused too: told already
    assert lost.told == [("42", "bot was blocked by the user")]
    # A 403 for a right the bot lacks is no loss of the chat.
    fake.fail_next("sendMessage", 403, description="Forbidden: bot can't send messages to bots")
    with pytest.raises(Forbidden):
        await adapter.send(reply(7))
    # Unblocked without a word (the update missed too), then written to, then blocked again: told again.
    fake.add_bot(42, update=False)
    fake.push_message(42, "I am back")
    await fake.wait_for(lambda: sink.inbound)
    fake.remove_bot(42, update=False)
    with pytest.raises(Forbidden):
        await adapter.send(reply(42, "third part"))
    await fake.wait_for(lambda: len(lost.told) == 2)
    assert lost.told == [("42", "bot was blocked by the user")] * 2


async def test_a_removal_the_store_refused_is_handed_over_again(fake, started):
    adapter, lost, sink = started
    lost.refuse = 1
    fake.remove_bot(GROUP)
    await fake.wait_for(lambda: lost.told, timeout=5)
    assert lost.told == [(str(GROUP), "the bot was removed from the chat")]
    await fake.wait_for(lambda: not fake.pending)


async def test_a_refusal_whose_stop_the_store_refused_is_told_again_until_it_takes_it(fake, started):
    adapter, lost, sink = started
    lost.refuse = 1
    fake.remove_bot(42, update=False)
    with pytest.raises(Forbidden):
        await adapter.send(reply(42))  # the chat's last part: no later refusal would tell it
    await fake.wait_for(lambda: lost.told, timeout=5)
    assert lost.told == [("42", "bot was blocked by the user")]
