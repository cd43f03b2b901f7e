"""A live message in a thread whose parent the Slack catch-up has still to read at its channel's top level
(`platforms.slack_catchup`): the real slack-bolt / slack-sdk clients on the loopback FakeSlack, a recording
sink in the gateway's place, and the last-seen record kept in a dict."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits, conversation_key, ts_key, where_of

NO_PACE = Limits(pace=0.0)


class Gateway:
    """The Inbounds handed over and the newest message taken in per conversation."""

    def __init__(self, last_seen: dict[tuple[str, str | None], str] | None = None) -> None:
        self.items: list[Inbound] = []
        self.last_seen: dict[tuple[str, str | None], str] = dict(last_seen or {})

    async def sink(self, inbound: Inbound) -> None:
        self.items.append(inbound)

    def seen(self, conversation: str, ts: str) -> None:
        self.last_seen[where_of(conversation)] = ts

    def texts(self) -> list[str]:
        return [i.text for i in self.items]

    async def start(self, fake: FakeSlack) -> SlackAdapter:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2, catch_up=NO_PACE)
        adapter.bind_last_seen({conversation_key(where): ts for where, ts in self.last_seen.items()}, self.seen,
                               lambda conversation: self.last_seen.get(where_of(conversation)))
        await adapter.start(self.sink)
        return adapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


async def test_a_live_mention_in_the_thread_of_a_mention_still_unread_keeps_its_missed_replies_for_the_next_start(
        fake):
    # The question was asked while the gateway was down, and its thread answered without a mention (a reply in the
    # bot's thread once the question is taken). A mention in that thread came live before the catch-up read the
    # channel: the thread was new to the catch-up, so it was recorded past the missed reply at once, and a crash
    # before the channel's read opened the thread lost that reply for good (the next start read after the mention).
    gateway = Gateway()
    adapter = await gateway.start(fake)
    try:
        await fake.push_mention("C1", "U1", "before")
        await fake.wait_for(lambda: ("C1", None) in gateway.last_seen)
    finally:
        await adapter.stop()
        await fake.wait_for(lambda: not fake.open_connections)
    question = (await fake.push_mention("C1", "U1", "a question while down"))["event"]["ts"]
    missed = (await fake.push_message("C1", "U2", "a reply while down", thread_ts=question))["event"]["ts"]

    reading = fake.hold("conversations.history")
    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))  # the channel's read, held
        live = (await fake.push_mention("C1", "U1", "a live mention", thread_ts=question))["event"]["ts"]
        await fake.wait_for(lambda: "a live mention" in gateway.texts())
        await asyncio.sleep(0)  # recorded once the sink returned
        at_crash = dict(gateway.last_seen)
        assert ts_key(at_crash.get(("C1", question), "0")) < ts_key(missed)
        reading.set()
        await fake.wait_for(lambda: "a reply while down" in gateway.texts())
        await fake.wait_for(lambda: ts_key(gateway.last_seen.get(("C1", question), "0")) >= ts_key(live))
    finally:
        reading.set()
        await adapter.stop()
        await fake.wait_for(lambda: not fake.open_connections)

    crashed = Gateway(at_crash)  # the process died before the catch-up read the channel
    adapter = await crashed.start(fake)
    try:
        await fake.wait_for(lambda: "a reply while down" in crashed.texts())
        # The question first, which puts the bot in the thread its reply answers.
        assert crashed.texts().index("a question while down") < crashed.texts().index("a reply while down")
    finally:
        await adapter.stop()


async def test_a_live_mention_in_peoples_thread_is_recorded_once_the_channels_read_did_not_open_it(fake):
    gateway = Gateway()
    adapter = await gateway.start(fake)
    try:
        await fake.push_mention("C1", "U1", "before")
        await fake.wait_for(lambda: ("C1", None) in gateway.last_seen)
    finally:
        await adapter.stop()
        await fake.wait_for(lambda: not fake.open_connections)
    peoples = (await fake.push_message("C1", "U2", "people talking while down"))["event"]["ts"]

    reading = fake.hold("conversations.history")
    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        live = (await fake.push_mention("C1", "U1", "a live mention", thread_ts=peoples))["event"]["ts"]
        await fake.wait_for(lambda: "a live mention" in gateway.texts())  # answered at once, not held
        assert gateway.last_seen[("C1", peoples)] == peoples  # not past what a mention there may open
        reading.set()
        await fake.wait_for(lambda: gateway.last_seen.get(("C1", peoples)) == live)
    finally:
        reading.set()
        await adapter.stop()
    assert gateway.texts() == ["before", "a live mention"]
    # People's thread: nothing there to read back.
    assert not [call for call in fake.calls_to("conversations.replies") if call.params["ts"] == peoples]
