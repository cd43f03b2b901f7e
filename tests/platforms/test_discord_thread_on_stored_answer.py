"""A thread a member opens on the bot's answer sent before a restart (its id no longer in the adapter's memory) is the
bot's all the same: the adapter asks the gateway's outbox (`platforms.base.RemembersAnswers`, `OutboxRows.sent_answer`)
once per thread, at its first message, never for a channel's own messages nor for a thread on an answer it holds.
Real discord.py in `DiscordAdapter` against the loopback `FakeDiscord`, on a real store."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator

import pytest

import platforms.discord  # noqa: F401  (first: imports discord.py without its audioop warning)
from agent.testing import FakeClock
from gateway.store import GatewayStore, NewMessage
from platforms.base import Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.locked_thread import Clock
from tests.platforms.sink import Sink

GUILD, CHANNEL, BOB, ALICE = 500, 600, 42, 43

fake = fake_discord()


class Asked:
    """The store's `sent_answer` for Discord, with the ids it was asked of."""

    def __init__(self, store: GatewayStore) -> None:
        self.store = store
        self.ids: list[str] = []
        self.broken = False
        """The state database cannot be read (a failing disk)."""

    def __call__(self, message_id: str) -> bool:
        self.ids.append(message_id)
        if self.broken:
            exc = sqlite3.OperationalError("disk I/O error")
            exc.sqlite_errorcode = sqlite3.SQLITE_IOERR  # type: ignore[attr-defined]  # as SQLite's own carries it
            raise exc
        return self.store.outbox.sent_answer("discord", message_id)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def started(fake: FakeDiscord, tmp_path, clock: Clock) -> AsyncIterator[tuple[DiscordAdapter, Sink, GatewayStore,
                                                                                     Asked]]:
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    asked = Asked(store)
    sink = Sink()
    adapter = adapter_for(fake, clock=clock, monotonic=clock)
    adapter.bind_answers(asked)
    await adapter.start(sink)
    try:
        fake.push_guild_message(GUILD, CHANNEL, BOB, "how big is it?", mention_bot=True)
        await fake.wait_for(lambda: sink.inbound)
        yield adapter, sink, store, asked
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
        store.close()


def stored(store: GatewayStore, key: str, message_id: str, kind: str = "reply") -> str:
    """``message_id`` journaled as sent by an earlier process (its part ``key``)."""
    [row] = store.outbox.add_messages([NewMessage(key, "discord", str(CHANNEL), None, "about 3 MB", kind=kind)])
    assert row is not None
    store.outbox.mark_sent(row, message_id)
    return message_id


async def heard(fake: FakeDiscord, sink: Sink, thread: str, *texts: str) -> list[str]:
    """Which of Alice's ``texts`` in ``thread``, said without a mention, ``sink`` was handed, once a mention sent
    after them (in the channel) was handed over: events go in order."""
    count = len(sink.inbound)
    for text in texts:
        fake.push_guild_message(GUILD, CHANNEL, ALICE, text, thread_id=thread)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True)
    await fake.wait_for(lambda: any(m.text == "marker" for m in sink.inbound[count:]))
    return [m.text for m in sink.inbound[count:] if m.text in texts and m.thread_id == thread]


async def test_a_thread_on_an_answer_sent_before_a_restart_is_heard_asked_once(fake, started):
    _, sink, store, asked = started
    answer = stored(store, "turn-1:0", fake.new_id())
    assert await heard(fake, sink, answer, "and compressed?", "and zipped?") == ["and compressed?", "and zipped?"]
    assert await heard(fake, sink, answer, "thanks") == ["thanks"]
    assert asked.ids == [answer]  # the thread's first message alone; the channel's own messages ask nothing


async def test_a_thread_on_anything_else_is_asked_once_and_needs_a_mention(fake, started):
    _, sink, store, asked = started
    said = fake.push_guild_message(GUILD, CHANNEL, ALICE, "lunch?")  # a member's own message
    assert await heard(fake, sink, said, "pizza", "pasta") == []
    refusal = stored(store, "turn-2:0", fake.new_id(), kind="command")  # a command's answer, or a refusal
    assert await heard(fake, sink, refusal, "why not?") == []
    assert asked.ids == [said, refusal]


async def test_a_thread_on_an_answer_this_process_sent_asks_nothing(fake, started):
    adapter, sink, _, asked = started
    sent = await adapter.send(Outbound(chat_id=str(CHANNEL), thread_id=None, text="about 3 MB", kind="reply"))
    assert await heard(fake, sink, sent.message_id, "and compressed?") == ["and compressed?"]
    assert asked.ids == []


async def test_a_store_that_cannot_be_read_holds_a_threads_messages_until_it_answers(fake, started, caplog):
    # They were heard as in a thread of no answer's, for up to 10 s after each failure: passed over, lost.
    _, sink, store, asked = started
    answer = stored(store, "turn-1:0", fake.new_id())
    other = fake.push_guild_message(GUILD, CHANNEL, ALICE, "lunch?")
    asked.broken = True
    caplog.set_level(logging.INFO, logger="platforms.discord")
    count = len(sink.inbound)
    for text in ("and compressed?", "and zipped?"):
        fake.push_guild_message(GUILD, CHANNEL, ALICE, text, thread_id=answer)
    fake.push_guild_message(GUILD, CHANNEL, ALICE, "pizza", thread_id=other)
    fake.push_guild_message(GUILD, CHANNEL, BOB, "marker", mention_bot=True)
    await fake.wait_for(lambda: len(asked.ids) >= 2)  # asked at the first message, then again by the held one
    assert sink.inbound[count:] == []  # every event waits behind it, in order
    asked.broken = False
    await fake.wait_for(lambda: any(m.text == "marker" for m in sink.inbound[count:]))
    assert [m.text for m in sink.inbound[count:]] == ["and compressed?", "and zipped?", "marker"]
    assert set(asked.ids) == {answer, other} and asked.ids.count(other) == 1  # its message heard held, not asking
    read = len(asked.ids)
    assert await heard(fake, sink, answer, "thanks") == ["thanks"]
    assert len(asked.ids) == read
    warned = [r for r in caplog.records if "could not read the state database" in r.getMessage()]
    assert [r.levelno for r in warned] == [logging.WARNING]
    assert "the state database says again whether threads were opened on answers of the bot's" in caplog.text

