"""Thread replies also sent to the channel (Slack's ``thread_broadcast``), live and read back by the catch-up:
the real slack-bolt / slack-sdk clients on the loopback FakeSlack.

Slack lists such a reply in its thread and at the channel's top level alike (``conversations.replies`` and
``conversations.history``), and sends one ``message`` event for it, with the thread's ``thread_ts``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

import pytest

from platforms.fakes.slack import FakeSlack
from platforms.slack_catchup import Limits
from tests.platforms.sink import Sink
from tests.platforms.slack_client import slack_on
from tests.platforms.test_slack_catchup import NO_PACE, Gateway, down


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


async def settled(fake: FakeSlack) -> None:
    await fake.wait_for(lambda: bool(fake.envelopes) and all(e.acked for e in fake.envelopes.values()))


async def test_the_fake_lists_a_broadcast_reply_in_its_thread_and_at_the_top_level_until_deleted(fake):
    thread = (await fake.push_message("C1", "U1", "a question"))["event"]["ts"]
    event = (await fake.push_message("C1", "U2", "an answer for all", thread_ts=thread, broadcast=True))["event"]
    assert (event["subtype"], event["thread_ts"], event["root"]["ts"]) == ("thread_broadcast", thread, thread)
    assert (event["root"]["reply_count"], event["root"]["latest_reply"]) == (1, event["ts"])
    assert fake.texts("C1") == ["a question", "an answer for all"]
    assert fake.texts("C1", thread) == ["an answer for all"]
    await fake.push_deletion("C1", event["ts"])
    assert fake.texts("C1") == ["a question"] and fake.texts("C1", thread) == []


async def test_a_broadcast_reply_is_one_message_of_its_thread_and_needs_a_mention_where_the_bot_is_not(fake):
    sink = Sink()
    adapter = slack_on(fake)
    await adapter.start(sink)
    try:
        mine = (await fake.push_mention("C1", "U1", "start"))["event"]["ts"]
        theirs = (await fake.push_message("C1", "U2", "people talking"))["event"]["ts"]
        await fake.push_message("C1", "U1", "for everyone, no mention", thread_ts=mine, broadcast=True)
        await fake.push_message("C1", "U2", "not for the bot", thread_ts=theirs, broadcast=True)
        await fake.push_message("C1", "U2", f"<@{fake.bot_user_id}> now for it", thread_ts=theirs, broadcast=True)
        await fake.wait_for(lambda: len(sink.inbound) == 3)
        await settled(fake)
    finally:
        await adapter.stop()
    assert [(i.thread_id, i.text) for i in sink.inbound] == [
        (mine, "start"), (mine, "for everyone, no mention"), (theirs, "now for it")]


async def test_replies_sent_while_down_the_last_also_to_the_channel_are_handed_on_in_the_order_sent(fake):
    # Read back at the channel's top level first, the broadcast reply was handed on ahead of the replies sent
    # before it in its thread: the agent was asked the last question first.
    gateway = Gateway()
    adapter = await gateway.start(fake)
    thread = (await fake.push_mention("C1", "U1", "start a thread"))["event"]["ts"]
    await fake.wait_for(lambda: {("C1", None), ("C1", thread)} <= set(gateway.last_seen))
    await down(fake, adapter)

    await fake.push_message("C1", "U1", "first do this", thread_ts=thread)
    await fake.push_message("C1", "U1", "then that", thread_ts=thread)
    await fake.push_message("C1", "U1", "and tell everyone", thread_ts=thread, broadcast=True)
    adapter = await gateway.start(fake)
    try:
        last = fake.messages[("C1", thread)][-1]["ts"]
        await fake.wait_for(lambda: len(gateway.taken()) == 4 and gateway.last_seen[("C1", thread)] == last)
    finally:
        await adapter.stop()
    assert gateway.taken() == ["start a thread", "first do this", "then that", "and tell everyone"]
    assert gateway.texts().count("and tell everyone") == 1  # from its thread only


async def test_a_broadcast_reply_in_a_thread_a_mention_read_back_opens_comes_after_the_replies_before_it(fake):
    # The thread is opened while its channel's top level is read: the reply is left to the thread's read all the same.
    gateway = Gateway()
    adapter = await gateway.start(fake)
    await fake.push_mention("C1", "U1", "hello")
    await fake.wait_for(lambda: ("C1", None) in gateway.last_seen)
    await down(fake, adapter)

    thread = (await fake.push_mention("C1", "U2", "a new question"))["event"]["ts"]
    await fake.push_message("C1", "U2", "some detail", thread_ts=thread)
    await fake.push_message("C1", "U2", "the summary", thread_ts=thread, broadcast=True)
    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: len(gateway.taken()) == 4)
    finally:
        await adapter.stop()
    assert gateway.taken() == ["hello", "a new question", "some detail", "the summary"]


async def broadcast_while_down(fake: FakeSlack, gateway: Gateway, *replies: str) -> tuple[str, str]:
    """The bot's thread, and a reply also sent to the channel while the gateway was down, after ``replies``."""
    adapter = await gateway.start(fake)
    thread = (await fake.push_mention("C1", "U1", "start a thread"))["event"]["ts"]
    await fake.wait_for(lambda: {("C1", None), ("C1", thread)} <= set(gateway.last_seen))
    await down(fake, adapter)
    for text in replies:
        await fake.push_message("C1", "U1", text, thread_ts=thread)
    broadcast = (await fake.push_message("C1", "U1", "and tell everyone", thread_ts=thread, broadcast=True))["event"]
    return thread, broadcast["ts"]


async def caught_up(fake: FakeSlack, gateway: Gateway, limits: Limits, until: Callable[[], bool]) -> None:
    adapter = await gateway.start(fake, limits)
    try:
        await fake.wait_for(until)
    finally:
        await adapter.stop()


async def test_a_broadcast_reply_whose_thread_cannot_be_read_is_handed_on_from_the_channel(fake, caplog):
    # The channel's read left it to its thread's and was recorded past it: that read refused, it was lost.
    gateway = Gateway()
    _, broadcast = await broadcast_while_down(fake, gateway, "first do this")
    fake.fail_next("conversations.replies", "thread_not_found")
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    await caught_up(fake, gateway, NO_PACE, lambda: "not read: C1 thread" in caplog.text)  # its closing warning
    assert gateway.taken() == ["start a thread", "and tell everyone"]
    assert gateway.last_seen[("C1", None)] == broadcast


async def test_a_broadcast_reply_over_its_threads_limit_is_handed_on_in_its_place(fake, caplog):
    # Within the channel's limit, over the thread's: the thread's read dropped it, the channel's had left it there.
    gateway = Gateway()
    thread, _ = await broadcast_while_down(fake, gateway)
    for text in ("more", "and more"):
        await fake.push_message("C1", "U1", text, thread_ts=thread)
    last = fake.messages[("C1", thread)][-1]["ts"]
    caplog.set_level(logging.INFO, logger="platforms.slack")
    await caught_up(fake, gateway, Limits(pace=0.0, max_messages=2), lambda: gateway.last_seen[("C1", thread)] == last)
    assert gateway.taken() == ["start a thread", "and tell everyone", "more", "and more"]
    assert "3 message(s) for the bot handed on, 0 skipped" in caplog.text  # none said skipped: its channel kept it


async def test_a_broadcast_reply_whose_threads_read_fails_for_a_while_is_handed_on_in_order_once_it_works(fake):
    # Held for the thread's read again, which hands it on in its place, once.
    gateway = Gateway()
    thread, _ = await broadcast_while_down(fake, gateway, "first do this")
    fake.fail_next("conversations.replies", "internal_error", status=500)
    last = fake.messages[("C1", thread)][-1]["ts"]
    retry_soon = Limits(pace=0.0, first_retry=0.01)
    await caught_up(fake, gateway, retry_soon, lambda: gateway.last_seen[("C1", thread)] == last)
    assert gateway.taken() == ["start a thread", "first do this", "and tell everyone"]
