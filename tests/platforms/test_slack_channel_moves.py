"""A Slack channel given a new id (``channel_id_changed``: a private channel shared over Slack Connect):
`SlackAdapter` (real slack-bolt and slack-sdk against the loopback `FakeSlack`, over Socket Mode) has the move
stored before it acts on it, then hands the channel's events over under the id the gateway knows it by and makes
every call for that id in the channel as it is now (`platforms.base.MovesChats`, `platforms.slack_moves`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from platforms.base import MovesChats, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import bot_posts, fake_slack, slack_on
from tests.platforms.test_slack_adapter import settled
from tests.platforms.test_telegram_adapter import Moves  # the gateway's store of moves, as Telegram's tests have it

fake = fake_slack()


@pytest.fixture
async def moved(fake: FakeSlack) -> AsyncIterator[tuple[SlackAdapter, Sink, Moves]]:
    adapter, sink, moves = slack_on(fake), Sink(), Moves()
    adapter.bind_chat_moves({}, moves)
    await adapter.start(sink)
    yield adapter, sink, moves
    await adapter.stop()


async def test_a_channel_given_a_new_id_goes_on_under_the_old_one(fake: FakeSlack, moved) -> None:
    adapter, sink, moves = moved
    assert isinstance(adapter, MovesChats)
    thread = (await fake.push_mention("G1", "U1", "the word is teal"))["event"]["ts"]
    await fake.wait_for(lambda: sink.inbound)
    answer = await adapter.send(Outbound(chat_id="G1", thread_id=thread, text="noted"))

    await fake.change_channel_id("G1", "C1")
    await fake.wait_for(lambda: moves.stored)
    assert moves.stored == [("G1", "C1")]
    # A reply in the bot's thread needs no mention there, as before; a slash command comes from the old id too.
    await fake.push_message("C1", "U1", "what was the word?", thread_ts=thread)
    await fake.push_slash_command("/new", "U1", "C1")
    await fake.wait_for(lambda: len(sink.inbound) == 3)
    assert [(i.chat_id, i.thread_id, i.text) for i in sink.inbound[1:]] == [
        ("G1", thread, "what was the word?"), ("G1", None, "/new")]

    # What the gateway addresses to the old id goes to the channel as it is now: nothing is refused.
    await adapter.send(Outbound(chat_id="G1", thread_id=thread, text="teal"))
    await adapter.edit("G1", thread, answer.message_id, "noted, teal")
    await adapter.typing("G1", thread)
    await adapter.idle("G1", thread)
    assert [m["text"] for m in bot_posts(fake, "C1", thread)] == ["noted, teal", "teal"]
    written = [c for c in fake.calls if c.method.startswith("chat.") and c.params.get("channel") == "G1"]
    assert [c.method for c in written] == ["chat.postMessage"]  # the answer before the move

    await fake.change_channel_id("C1", "C2")  # moved again: still the gateway's G1
    await fake.wait_for(lambda: len(moves.stored) == 2)
    assert moves.stored[1] == ("G1", "C2")
    await fake.push_message("C2", "U1", "and now?", thread_ts=thread)
    await fake.wait_for(lambda: len(sink.inbound) == 4)
    assert sink.inbound[-1].chat_id == "G1"


async def test_moves_stored_before_a_restart_are_known_at_once(fake: FakeSlack) -> None:
    thread = (await fake.push_mention("G1", "U1", "before the restart"))["event"]["ts"]
    await fake.change_channel_id("G1", "C1", event=False)  # told to the process before
    adapter, sink, moves = slack_on(fake), Sink(), Moves()
    adapter.bind_chat_moves({"G1": "C1"}, moves)
    adapter.remember_threads([("G1", thread)])
    await adapter.start(sink)
    try:
        await fake.push_message("C1", "U1", "still there?", thread_ts=thread)
        await fake.wait_for(lambda: sink.inbound)
        assert (sink.inbound[0].chat_id, sink.inbound[0].thread_id) == ("G1", thread)
        await adapter.send(Outbound(chat_id="G1", thread_id=thread, text="yes"))
        assert [m["text"] for m in bot_posts(fake, "C1", thread)] == ["yes"] and moves.stored == []
    finally:
        await adapter.stop()


async def test_a_move_the_store_refuses_is_left_for_slack_to_send_again() -> None:
    async with FakeSlack(ack_timeout=0.2) as fake:
        adapter, sink, moves = slack_on(fake), Sink(), Moves(refusals=1)
        adapter.bind_chat_moves({}, moves)
        await adapter.start(sink)
        try:
            await fake.change_channel_id("G1", "C1")
            await fake.wait_for(lambda: moves.stored)
            await settled(fake)
            [envelope] = fake.envelopes.values()
            assert envelope.retry_attempt == 1 and moves.stored == [("G1", "C1")]
            await adapter.send(Outbound(chat_id="G1", thread_id=None, text="there"))
            assert fake.texts("C1") == ["there"]
        finally:
            await adapter.stop()
