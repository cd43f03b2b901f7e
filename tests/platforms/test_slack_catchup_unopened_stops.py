"""A thread the Slack catch-up holds unrecorded for its parent's read at the channel's top level
(`platforms.slack_catchup.CatchUp.record_now`) when that read never comes to it: a stop, a read refused for good,
a reconnect's catch-up replacing it. The real slack-bolt / slack-sdk clients on the loopback FakeSlack, a recording
sink in the gateway's place, and the last-seen record kept in a dict."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import conversation_key
from tests.platforms.test_slack_catchup_unread_parents import NO_PACE, Gateway
from tests.platforms.test_slack_outage_catchup import Clock, outage


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


async def start(gateway: Gateway, fake: FakeSlack, threads: list[tuple[str, str]], clock: Clock | None = None
                ) -> SlackAdapter:
    """As the gateway starts it: the threads of its stored sessions remembered (replies there need no mention)."""
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2, catch_up=NO_PACE, clock=clock or time.time)
    adapter.remember_threads(threads)
    adapter.bind_last_seen({conversation_key(where): ts for where, ts in gateway.last_seen.items()}, gateway.seen,
                           lambda conversation: gateway.last_seen.get(conversation))
    await adapter.start(gateway.sink)
    return adapter


def once_in_the_inbox(gateway: Gateway, text: str) -> bool:
    """Read back, a message answered live is handed on under its live event's key, which the inbox takes once."""
    return len({item.event_id for item in gateway.items if item.text == text}) == 1


async def stopped(adapter: SlackAdapter, fake: FakeSlack) -> None:
    await adapter.stop()
    await fake.wait_for(lambda: not fake.open_connections)


async def peoples_thread_mentioned_live(fake: FakeSlack, gateway: Gateway) -> str:
    """People talk in C1 while the gateway is down; at the next start, while the catch-up's read of C1 is held, the
    bot is mentioned in their thread. The thread's ts; the read is still held."""
    adapter = await start(gateway, fake, [])
    try:
        await fake.push_mention("C1", "U1", "before")
        await fake.wait_for(lambda: ("C1", None) in gateway.last_seen)
    finally:
        await stopped(adapter, fake)
    return (await fake.push_message("C1", "U2", "people talking while down"))["event"]["ts"]


async def test_a_stop_before_the_channels_read_keeps_the_thread_a_live_mention_brought_the_bot_into(fake):
    # The bot was brought into people's thread live, and answered there; the process stopped before the catch-up
    # read the channel's top level. A reply in that thread while the gateway was down again is the bot's to answer:
    # the next start must read the thread, so it must be recorded.
    gateway = Gateway()
    peoples = await peoples_thread_mentioned_live(fake, gateway)
    fake.hold("conversations.history")
    adapter = await start(gateway, fake, [])
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        await fake.push_mention("C1", "U1", "a live mention", thread_ts=peoples)
        await fake.wait_for(lambda: "a live mention" in gateway.texts())
    finally:
        await stopped(adapter, fake)
    await fake.push_message("C1", "U2", "a reply while down", thread_ts=peoples)

    fake.hold("conversations.history").set()
    adapter = await start(gateway, fake, [("C1", peoples)])
    try:
        await fake.wait_for(lambda: "a reply while down" in gateway.texts())
    finally:
        await stopped(adapter, fake)
    assert once_in_the_inbox(gateway, "a live mention")


async def replied_while_down_is_read_back(fake: FakeSlack, gateway: Gateway, peoples: str) -> None:
    """A reply in the bot's thread while the gateway is down is handed on at the next start."""
    await fake.push_message("C1", "U2", "a reply while down", thread_ts=peoples)
    adapter = await start(gateway, fake, [("C1", peoples)])
    try:
        await fake.wait_for(lambda: "a reply while down" in gateway.texts())
    finally:
        await stopped(adapter, fake)
    assert once_in_the_inbox(gateway, "a live mention")


async def test_a_thread_whose_channel_read_is_refused_for_good_is_recorded_after_its_parent(fake):
    # The channel's read refused (the bot out of it for a while): its parent unread, the thread is kept for the next
    # start to read from it, not left unrecorded (the next start would not read it at all).
    gateway = Gateway()
    peoples = await peoples_thread_mentioned_live(fake, gateway)
    reading = fake.hold("conversations.history")
    fake.fail_next("conversations.history", "channel_not_found")
    adapter = await start(gateway, fake, [])
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        await fake.push_mention("C1", "U1", "a live mention", thread_ts=peoples)
        await fake.wait_for(lambda: "a live mention" in gateway.texts())
        reading.set()
        await fake.wait_for(lambda: adapter._catch_up_run is not None and adapter._catch_up_run.done())
        assert ("C1", peoples) in gateway.last_seen  # not left to the next start, which would not read it
    finally:
        await stopped(adapter, fake)
    await replied_while_down_is_read_back(fake, gateway, peoples)


async def test_a_reconnects_catch_up_reads_the_thread_the_one_it_replaced_held_for_its_parent(fake):
    gateway, clock = Gateway(), Clock()
    peoples = await peoples_thread_mentioned_live(fake, gateway)
    reading = fake.hold("conversations.history")
    adapter = await start(gateway, fake, [], clock)
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        live = (await fake.push_mention("C1", "U1", "a live mention", thread_ts=peoples))["event"]["ts"]
        await fake.wait_for(lambda: "a live mention" in gateway.texts())
        await outage(fake, adapter, clock, 600.0)  # its catch-up replaces the one at start, C1 still unread
        reading.set()
        await fake.wait_for(lambda: gateway.last_seen.get(("C1", peoples)) == live)
        later = (await fake.push_mention("C1", "U1", "a later mention", thread_ts=peoples))["event"]["ts"]
        await fake.wait_for(lambda: gateway.last_seen.get(("C1", peoples)) == later)
    finally:
        await stopped(adapter, fake)
    assert once_in_the_inbox(gateway, "a live mention")
