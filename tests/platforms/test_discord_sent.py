"""`DiscordAdapter.find_sent` (`platforms.discord_sent`): a part that may have been posted is looked
for by its nonce among the posts this process heard, never by its words, which another part may share;
the real discord.py client and the real outbox against the loopback fake."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import CommandSpec, Inbound, NetworkError, Outbound
from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.gateway.observing import Lookups

HISTORY = "GET /channels/{channel_id}/messages"
SEND = "POST /channels/{channel_id}/messages"
FOLLOW_UP = "POST /webhooks/{application_id}/{token}"
USER = 42
GUILD, CHANNEL = 7, 70
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


async def test_the_part_that_replaces_a_commands_thinking_is_not_looked_for(fake: FakeDiscord) -> None:
    # Sending it again edits "thinking…" again, which changes nothing.
    adapter, command = await _commanded(fake)
    try:
        first = Outbound(command.chat_id, None, "Stopped.", idempotency_key="c1:0", reply_token=command.reply_token)
        assert not adapter.findable(first) and adapter.findable(Outbound(command.chat_id, None, "x"))
        await adapter.send(first)
        assert adapter.findable(replace(first, text="More.", idempotency_key="c2:0"))  # a follow-up now
    finally:
        await adapter.stop()
        await join_heartbeat_threads()


async def test_a_follow_up_discord_stored_but_answered_with_a_5xx_is_not_posted_again_by_discord_py(
        fake: FakeDiscord) -> None:
    """discord.py posts a follow-up again on a 5xx, up to five times, and a follow-up carries no nonce:
    the answer was in the chat twice. It fails at once instead, its answer lost (`NetworkError`)."""
    adapter, command = await _commanded(fake)
    try:
        await adapter.send(Outbound(command.chat_id, None, "Stopped.", idempotency_key="c1:0",
                                    reply_token=command.reply_token))
        fake.fail_next(FOLLOW_UP, 500, message="Internal Server Error", after=True)
        with pytest.raises(NetworkError):
            await adapter.send(Outbound(command.chat_id, None, "More.", idempotency_key="c2:0",
                                        reply_token=command.reply_token))
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert len(fake.calls_to(FOLLOW_UP)) == 1
    assert [m.content for m in fake.bot_messages(command.chat_id)] == ["Stopped.", "More."]


@pytest.mark.parametrize("guild", [False, True], ids=["dm", "guild"])
async def test_a_follow_up_discord_stored_but_answered_with_a_5xx_is_found_and_in_the_chat_once(
        fake: FakeDiscord, tmp_path: Path, guild: bool) -> None:
    async with _outbox(fake, tmp_path, guild=guild) as (outbox, command, lookups):
        _answer(outbox, command, "Stopped.", "c1")
        await outbox.wait_sent("c1:0", timeout=WAIT)
        if guild:  # the user's message in between, which the lookup reads past
            fake.push_guild_message(GUILD, CHANNEL, USER, "a user's message in between")
        else:
            fake.push_dm(USER, "a user's message in between")
        fake.fail_next(FOLLOW_UP, 500, message="Internal Server Error", after=True)
        _answer(outbox, command, "And one more thing.", "c2")
        found = await outbox.wait_sent("c2:0", timeout=WAIT)
    posts = [m for m in fake.bot_messages(command.chat_id) if m.content == "And one more thing."]
    assert [m.id for m in posts] == [found] and len(fake.calls_to(FOLLOW_UP)) == 1
    assert lookups.outcomes == ["discord:found"] and len(fake.calls_to(HISTORY)) == 1


async def test_a_follow_up_discord_did_not_store_is_looked_for_and_sent_once_though_another_has_its_words(
        fake: FakeDiscord, tmp_path: Path) -> None:
    """A follow-up in the same words went out before it: that one is no answer to this part's lookup."""
    async with _outbox(fake, tmp_path) as (outbox, command, lookups):
        _answer(outbox, command, "Stopped.", "c1")
        _answer(outbox, command, "Done.", "c2")
        await outbox.wait_sent("c2:0", timeout=WAIT)
        fake.fail_next(FOLLOW_UP, 500, message="Internal Server Error")
        _answer(outbox, command, "Done.", "c3")
        sent = await outbox.wait_sent("c3:0", timeout=WAIT)
    assert [m.content for m in fake.bot_messages(command.chat_id)] == ["Stopped.", "Done.", "Done."]
    assert fake.bot_messages(command.chat_id)[-1].id == sent
    assert lookups.outcomes == ["discord:not_found"] and len(fake.calls_to(FOLLOW_UP)) == 3


async def test_a_follow_up_in_a_channel_the_bot_cannot_read_is_sent_again_and_the_log_says_why(
        fake: FakeDiscord, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with _outbox(fake, tmp_path, guild=True) as (outbox, command, lookups):
        _answer(outbox, command, "Stopped.", "c1")
        await outbox.wait_sent("c1:0", timeout=WAIT)
        fake.fail_next(FOLLOW_UP, 500, message="Internal Server Error", after=True)
        fake.fail_next(HISTORY, 403, code=50001, message="Missing Access")
        _answer(outbox, command, "More.", "c2")
        await outbox.wait_sent("c2:0", timeout=WAIT)
    assert [m.content for m in fake.bot_messages(command.chat_id)] == ["Stopped.", "More.", "More."]
    assert lookups.outcomes == ["discord:unknown"]
    assert "cannot tell whether c2:0 went out already" in caplog.text


async def _commanded(fake: FakeDiscord, *, guild: bool = False) -> tuple[DiscordAdapter, Inbound]:
    """A started adapter and a slash command it took (deferred: it shows "thinking…")."""
    got: list[Inbound] = []

    async def sink(inbound: Inbound) -> None:
        got.append(inbound)

    adapter = adapter_for(fake)
    await adapter.start(sink, [CommandSpec("stop", "stop")])
    if guild:
        fake.push_interaction("stop", USER, channel=CHANNEL, guild=GUILD)
    else:
        fake.push_interaction("stop", USER)
    await fake.wait_for(lambda: got)
    return adapter, got[0]


@contextlib.asynccontextmanager
async def _outbox(fake: FakeDiscord, tmp_path: Path, *, guild: bool = False) -> AsyncIterator:
    """(the real outbox on an adapter, a slash command it took, the outbox's lookups)"""
    adapter, command = await _commanded(fake, guild=guild)
    store, lookups = GatewayStore(tmp_path / "state.db"), Lookups()
    outbox = Outbox(store.outbox, {"discord": adapter}, events=lookups.events)
    await outbox.start()
    try:
        yield outbox, command, lookups
    finally:
        await outbox.close()
        store.close()
        await adapter.stop()
        await join_heartbeat_threads()


def _answer(outbox: Outbox, command: Inbound, text: str, key: str) -> None:
    outbox.enqueue("discord", command.chat_id, command.thread_id, text, kind="command", key=key,
                   reply_token=command.reply_token)


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


async def test_a_follow_up_found_for_one_part_is_never_taken_for_another_in_the_same_words(
        fake: FakeDiscord, tmp_path: Path) -> None:
    """Two follow-ups alike ("Done."), both answered with a 5xx: the first stored, the second not. The
    first's lookup finds its post; the second's must not find that one again, or it is never posted."""
    async with _outbox(fake, tmp_path) as (outbox, command, lookups):
        _answer(outbox, command, "Stopped.", "c1")
        await outbox.wait_sent("c1:0", timeout=WAIT)
        fake.fail_next(FOLLOW_UP, 500, message="Internal Server Error", after=True)
        _answer(outbox, command, "Done.", "c2")
        first = await outbox.wait_sent("c2:0", timeout=WAIT)
        fake.fail_next(FOLLOW_UP, 500, message="Internal Server Error")
        _answer(outbox, command, "Done.", "c3")
        second = await outbox.wait_sent("c3:0", timeout=WAIT)
    assert [m.content for m in fake.bot_messages(command.chat_id)] == ["Stopped.", "Done.", "Done."]
    assert first != second and fake.bot_messages(command.chat_id)[-1].id == second
    assert lookups.outcomes == ["discord:found", "discord:not_found"]


async def test_the_first_answer_an_earlier_process_posted_is_found_and_not_posted_again_as_a_follow_up(
        fake: FakeDiscord) -> None:
    """The process died with the part that replaces "thinking…" posted, its answer lost: the next one,
    which does not know the interaction shows it no more, looks for it. Not found, it was sent again as
    a follow-up, and the answer showed twice."""
    adapter, command = await _commanded(fake)
    since = time.time()
    part = Outbound(command.chat_id, None, "Stopped.", idempotency_key="c1:0", reply_token=command.reply_token)
    try:
        first = await adapter.send(part)
    finally:
        await adapter.stop()
    later = adapter_for(fake)
    await later.start(_ignore)
    try:
        assert later.findable(part)
        # Another part, in other words, is not that answer; nor is this one, once taken for it.
        assert await later.find_sent(replace(part, text="Other.", idempotency_key="c0:0"), since) is None
        assert await later.find_sent(part, since) == first.message_id
        assert await later.find_sent(replace(part, idempotency_key="c2:0"), since) is None
    finally:
        await later.stop()
        await join_heartbeat_threads()
    assert [m.content for m in fake.bot_messages(command.chat_id)] == ["Stopped."]
    assert fake.calls_to(FOLLOW_UP) == []


async def test_a_part_after_a_follow_up_is_never_taken_for_the_first_answer_in_its_words(
        fake: FakeDiscord) -> None:
    adapter, command = await _commanded(fake)
    since = time.time()
    part = Outbound(command.chat_id, None, "Done.", idempotency_key="c1:0", reply_token=command.reply_token)
    try:
        await adapter.send(part)
        await adapter.send(replace(part, text="More.", idempotency_key="c2:0"))
    finally:
        await adapter.stop()
    later = adapter_for(fake)
    await later.start(_ignore)
    try:  # a follow-up went out, so the first answer was settled before this part
        assert await later.find_sent(replace(part, idempotency_key="c3:0"), since) is None
    finally:
        await later.stop()
        await join_heartbeat_threads()


async def test_a_follow_up_is_found_by_a_host_clock_ahead_of_discords_by_more_than_the_margin(
        fake: FakeDiscord) -> None:
    # The journal's time is on the host's clock, the history's snowflakes on Discord's: ten minutes ahead, the lookup
    # asked for what came after the follow-up, missed it, and it was posted twice.
    ahead = 600.0
    adapter, command = await _commanded(fake)
    part = Outbound(command.chat_id, None, "Stopped.", idempotency_key="c1:0", reply_token=command.reply_token)
    try:
        await adapter.send(part)
        since = time.time() + ahead
        follow_up = await adapter.send(replace(part, text="More.", idempotency_key="c2:0"))
    finally:
        await adapter.stop()
    later = adapter_for(fake, clock=lambda: time.time() + ahead)
    await later.start(_ignore)
    try:
        assert await later.find_sent(replace(part, text="More.", idempotency_key="c2:0"), since) == follow_up.message_id
    finally:
        await later.stop()
        await join_heartbeat_threads()
