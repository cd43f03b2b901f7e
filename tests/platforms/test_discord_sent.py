"""`DiscordAdapter.find_sent` (`platforms.discord_sent`): a part that may have been posted is looked
for by its nonce among the posts this process heard, never by its words, which another part may share;
the real discord.py client and the real outbox against the loopback fake."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads

HISTORY = "GET /channels/{channel_id}/messages"
SEND = "POST /channels/{channel_id}/messages"
USER = 42
WAIT = 5.0


fake = fake_discord()


@pytest.fixture
async def adapters(fake: FakeDiscord) -> AsyncIterator:
    """adapters() -> a started DiscordAdapter on the fake (one per simulated process)."""
    started: list[DiscordAdapter] = []

    async def make() -> DiscordAdapter:
        adapter = adapter_for(fake)
        await adapter.start(_ignore)
        started.append(adapter)
        return adapter

    yield make
    for adapter in started:
        await adapter.stop()
    await join_heartbeat_threads()


async def _ignore(_inbound: Inbound) -> None:
    return None


async def test_a_post_this_process_heard_is_found_by_its_nonce_and_never_taken_for_another_part(
        fake: FakeDiscord, adapters) -> None:
    adapter = await adapters()
    dm = fake.dm_channel(USER)
    since = time.time()
    sent = await adapter.send(Outbound(dm, None, "Done.", idempotency_key="t1:0"))
    await fake.wait_for(lambda: adapter._posted.get(fake.bot_messages(dm)[0].nonce))  # its MESSAGE_CREATE came
    assert await adapter.find_sent(Outbound(dm, None, "Done.", idempotency_key="t1:0"), since) == sent.message_id
    # The same words for another part: the post heard is the first part's, so this one was not posted.
    assert await adapter.find_sent(Outbound(dm, None, "Done.", idempotency_key="t2:0"), since) is None
    later = await adapters()  # another process heard none of them, and Discord keeps no nonce to read back
    assert await later.find_sent(Outbound(dm, None, "Done.", idempotency_key="t1:0"), since) is None
    assert fake.calls_to(HISTORY) == []


async def test_a_slash_commands_answer_is_not_looked_for(fake: FakeDiscord, adapters) -> None:
    adapter = await adapters()
    dm = fake.dm_channel(USER)
    answer = Outbound(dm, None, "Stopped.", idempotency_key="t1:0", reply_token="1:token")
    assert not adapter.findable(answer) and adapter.findable(Outbound(dm, None, "x", idempotency_key="t1:0"))
    assert await adapter.find_sent(answer, time.time()) is None


async def test_an_answer_in_the_same_words_as_the_last_is_posted_after_a_restart(
        fake: FakeDiscord, adapters, tmp_path: Path) -> None:
    """Two turns answered alike ("Done."): the process died with the second's post on its way (it
    failed), so the next one may not know whether it went out; the first's post, in the same words,
    must not be taken for it, or the second answer is never posted."""
    dm = fake.dm_channel(USER)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"discord": await adapters()})
    await outbox.start()
    outbox.enqueue("discord", dm, None, "Done.", kind="reply", key="t1")
    first = await outbox.wait_sent("t1:0", timeout=WAIT)
    fake.fail_next(SEND, 503)
    posting = fake.hold(SEND)  # answered with that 503 once let go
    outbox.enqueue("discord", dm, None, "Done.", kind="reply", key="t2")
    await fake.wait_for(lambda: len(fake.calls_to(SEND)) == 2)
    await outbox.close()  # the process dies, the post on its way
    store.close()
    posting.set()

    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"discord": await adapters()})
    await outbox.start()
    try:
        second = await outbox.wait_sent("t2:0", timeout=WAIT)
    finally:
        await outbox.close()
        store.close()
    assert first != second
    assert [m.id for m in fake.bot_messages(dm)] == [first, second]
