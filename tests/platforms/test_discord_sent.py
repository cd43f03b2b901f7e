"""`DiscordAdapter.find_sent` (`platforms.discord_sent`): a part that may have been posted, looked for
before it is sent again, by its nonce among the posts this process heard, else by its content in the
channel's history; the real discord.py client against the loopback fake."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from platforms import discord_sent
from platforms.base import Forbidden, Inbound, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, join_heartbeat_threads

HISTORY = "GET /channels/{channel_id}/messages"
GUILD, CHANNEL, THREAD, USER = 500, 600, 701, 42


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as fake:
        yield fake
    assert fake.errors == []


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


async def test_a_post_an_earlier_process_made_is_found_by_its_content_in_the_channel_and_in_a_thread(
        fake: FakeDiscord, adapters) -> None:
    earlier = await adapters()
    fake.push_guild_message(GUILD, CHANNEL, USER, "hi", mention_bot=True, thread_id=THREAD)
    since = time.time()
    top = await earlier.send(Outbound(str(CHANNEL), None, "the **answer**", idempotency_key="t1:0"))
    inside = await earlier.send(Outbound(str(CHANNEL), str(THREAD), "in the thread", idempotency_key="t2:0"))
    fake.push_guild_message(GUILD, CHANNEL, USER, "the **answer**")  # a user's words are never the bot's post
    await earlier.stop()

    adapter = await adapters()  # hears none of them: only the history can tell
    assert await adapter.find_sent(Outbound(str(CHANNEL), None, "the **answer**", idempotency_key="t1:0"),
                                   since) == top.message_id
    assert await adapter.find_sent(Outbound(str(CHANNEL), str(THREAD), "in the thread", idempotency_key="t2:0"),
                                   since) == inside.message_id
    assert await adapter.find_sent(Outbound(str(CHANNEL), None, "never posted", idempotency_key="t3:0"),
                                   since) is None
    later = since + discord_sent.CLOCK_SKEW + 5  # journaled after the post went out: not its post
    assert await adapter.find_sent(Outbound(str(CHANNEL), None, "the **answer**", idempotency_key="t4:0"),
                                   later) is None
    reads = fake.calls_to(HISTORY)
    assert [c.path for c in reads] == [f"/channels/{CHANNEL}/messages", f"/channels/{THREAD}/messages",
                                       f"/channels/{CHANNEL}/messages", f"/channels/{CHANNEL}/messages"]
    assert all(c.query["limit"] == "100" and "after" in c.query for c in reads)


async def test_a_post_this_process_heard_is_found_by_its_nonce_and_never_taken_for_another_part(
        fake: FakeDiscord, adapters) -> None:
    adapter = await adapters()
    dm = fake.dm_channel(USER)
    since = time.time()
    sent = await adapter.send(Outbound(dm, None, "Done.", idempotency_key="t1:0"))
    await fake.wait_for(lambda: adapter._posted.get(fake.bot_messages(dm)[0].nonce))  # its MESSAGE_CREATE came
    assert await adapter.find_sent(Outbound(dm, None, "Done.", idempotency_key="t1:0"), since) == sent.message_id
    assert fake.calls_to(HISTORY) == []
    # The same words for another part: the post heard is the first part's, so this one was not posted.
    assert await adapter.find_sent(Outbound(dm, None, "Done.", idempotency_key="t2:0"), since) is None


async def test_a_post_quoting_another_message_is_not_the_parts(fake: FakeDiscord, adapters) -> None:
    asked = fake.push_guild_message(GUILD, CHANNEL, USER, "question one", mention_bot=True)
    other = fake.push_guild_message(GUILD, CHANNEL, USER, "question two", mention_bot=True)
    since = time.time()
    earlier = await adapters()
    await earlier.send(Outbound(str(CHANNEL), None, "yes", idempotency_key="t2:0", reply_to=other))
    part = Outbound(str(CHANNEL), None, "yes", idempotency_key="t1:0", reply_to=asked)
    posted = await earlier.send(part)  # its answer lost: the process died before it knew
    await earlier.stop()
    adapter = await adapters()
    assert await adapter.find_sent(part, since) == posted.message_id  # not the earlier "yes", another's answer
    fake.delete_message(CHANNEL, posted.message_id)
    assert await adapter.find_sent(part, since) is None


async def test_the_lookup_reads_no_further_than_its_bound(fake: FakeDiscord, adapters, monkeypatch) -> None:
    monkeypatch.setattr(discord_sent, "LOOKUP_MESSAGES", 3)
    earlier = await adapters()
    dm = fake.dm_channel(USER)
    since = time.time()
    for text in ("one", "two", "three", "four"):
        await earlier.send(Outbound(dm, None, text))
    await earlier.stop()
    adapter = await adapters()
    assert await adapter.find_sent(Outbound(dm, None, "three", idempotency_key="t3:0"), since) is not None
    assert await adapter.find_sent(Outbound(dm, None, "four", idempotency_key="t4:0"), since) is None


async def test_a_slash_commands_answer_is_not_looked_for_and_a_refused_read_is_a_delivery_error(
        fake: FakeDiscord, adapters) -> None:
    adapter = await adapters()
    dm = fake.dm_channel(USER)
    answer = Outbound(dm, None, "Stopped.", idempotency_key="t1:0", reply_token="1:token")
    assert not adapter.findable(answer) and adapter.findable(Outbound(dm, None, "x", idempotency_key="t1:0"))
    assert await adapter.find_sent(answer, time.time()) is None
    assert fake.calls_to(HISTORY) == []
    fake.fail_next(HISTORY, 403, code=50001, message="Missing Access")
    with pytest.raises(Forbidden):
        await adapter.find_sent(Outbound(dm, None, "x", idempotency_key="t2:0"), time.time())
