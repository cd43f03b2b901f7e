"""The Slack adapter catching up at start on what was said while the gateway was down
(`platforms.slack_catchup`): the real slack-bolt / slack-sdk clients on the loopback FakeSlack,
a recording sink in the gateway's place, and the last-seen record kept in a dict."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from platforms.base import Inbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits, conversation_key, where_of
from tests.sqlite_errors import full_disk

DM = "DU1"  # the fake's DM channel with user U1
NO_PACE = Limits(pace=0.0)


class Gateway:
    """What the gateway keeps across restarts for the adapter: the Inbounds handed over and the
    newest message taken in per conversation."""

    def __init__(self) -> None:
        self.items: list[Inbound] = []
        self.last_seen: dict[tuple[str, str | None], str] = {}

    async def sink(self, inbound: Inbound) -> None:
        self.items.append(inbound)

    def seen(self, conversation: str, ts: str) -> None:
        self.last_seen[where_of(conversation)] = ts

    def bind(self, adapter: SlackAdapter) -> None:
        adapter.bind_last_seen({conversation_key(where): ts for where, ts in self.last_seen.items()}, self.seen,
                               lambda conversation: self.last_seen.get(where_of(conversation)))

    def texts(self) -> list[str]:
        return [i.text for i in self.items]

    def taken(self) -> list[str]:
        """The texts as the gateway's inbox takes them: a message handed over twice (read back by the
        catch-up, and its live event) counts once, where it came first."""
        return list({i.event_id: i.text for i in self.items}.values())

    async def start(self, fake: FakeSlack, limits: Limits = NO_PACE, **kw: Any) -> SlackAdapter:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2, catch_up=limits, **kw)
        adapter.remember_threads([key for key in self.last_seen if key[1] is not None])  # type: ignore[misc]
        self.bind(adapter)
        await adapter.start(self.sink)
        return adapter


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


async def down(fake: FakeSlack, adapter: SlackAdapter) -> None:
    await adapter.stop()
    await fake.wait_for(lambda: not fake.open_connections)


async def test_dm_messages_sent_while_down_are_handed_over_oldest_first_as_their_live_events(fake):
    gateway = Gateway()
    adapter = await gateway.start(fake)
    first = (await fake.push_dm("U1", "first"))["event"]
    await fake.wait_for(lambda: gateway.texts() == ["first"])
    assert gateway.last_seen == {(DM, None): first["ts"]}
    await down(fake, adapter)

    lost = [(await fake.push_dm("U1", text))["event"] for text in ("while down", "and again")]
    fake._store(DM, None, {"user": fake.bot_user_id, "bot_id": fake.bot_id, "text": "a bot's own post"})
    fake._store(DM, None, {"user": "U1", "subtype": "channel_join", "text": "<@U1> has joined"})
    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: len(gateway.items) == 3)
        await fake.wait_for(lambda: fake.given_up)  # Slack gave up on those events: they never came live
        assert gateway.texts() == ["first", "while down", "and again"]
        assert [i.event_id for i in gateway.items[1:]] == [f"{DM}:{e['ts']}" for e in lost]
        assert [i.sent_at for i in gateway.items[1:]] == [float(e["ts"]) for e in lost]
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] > lost[-1]["ts"])  # read past the bot's post
    finally:
        await adapter.stop()

    adapter = await gateway.start(fake)  # nothing new: nothing handed over again
    try:
        await fake.wait_for(lambda: len(fake.calls_to("conversations.history")) >= 2)
    finally:
        await adapter.stop()
    assert len(gateway.items) == 3


async def test_in_channels_only_mentions_and_replies_in_the_bots_threads_are_handed_over(fake):
    gateway = Gateway()
    adapter = await gateway.start(fake)
    thread = (await fake.push_mention("C1", "U1", "start a thread"))["event"]["ts"]
    await fake.wait_for(lambda: len(gateway.items) == 1)
    await fake.wait_for(lambda: (("C1", None) in gateway.last_seen and ("C1", thread) in gateway.last_seen))
    await down(fake, adapter)

    await fake.push_message("C1", "U1", "a follow-up, no mention", thread_ts=thread)
    await fake.push_message("C1", "U2", "people talking, not to the bot")
    new = (await fake.push_mention("C1", "U2", "a new question"))["event"]["ts"]
    await fake.push_message("C1", "U2", "a reply in people's thread", thread_ts=new)  # the bot is in it: mentioned
    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: len(gateway.items) == 4)
    finally:
        await adapter.stop()
    handed = {(i.chat_id, i.thread_id, i.text) for i in gateway.items[1:]}
    assert ("C1", thread, "a follow-up, no mention") in handed
    assert ("C1", new, "a new question") in handed
    assert "people talking, not to the bot" not in gateway.texts()
    # The thread the caught-up mention opened is read at the next start too.
    assert ("C1", new) in gateway.last_seen


async def test_the_newest_messages_within_the_bounds_are_handed_over_and_one_warning_names_the_rest(fake, caplog):
    gateway = Gateway()
    two_days_ago = time.time() - 2 * 86400
    gateway.last_seen[(DM, None)] = f"{two_days_ago - 1:.6f}"
    fake.messages[(DM, None)].insert(0, {"type": "message", "channel": DM, "user": "U1", "text": "from two days ago",
                                         "ts": f"{two_days_ago:.6f}"})
    for n in range(4):
        await fake.push_dm("U1", f"while down {n}")
    caplog.set_level(logging.INFO, logger="platforms.slack")
    adapter = await gateway.start(fake, Limits(pace=0.0, max_messages=3))
    try:
        await fake.wait_for(lambda: [r for r in caplog.records if r.levelno == logging.WARNING])
    finally:
        await adapter.stop()
    assert gateway.texts() == ["while down 1", "while down 2", "while down 3"]
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "skipped 1 older than 24 h and 1 over 3 per conversation" in warning
    [summary] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("slack: caught up on")]
    assert summary == f"slack: caught up on {DM}: 3 message(s) for the bot handed on, 2 skipped"


async def test_what_the_store_had_is_let_go_once_caught_up_only_the_newest_10000_kept(fake, caplog):
    """Every conversation recorded in 30 days stayed in memory for the life of the process, though the
    catch-up reads 100 at most and the docs bound what is kept at 10,000."""
    gateway = Gateway()
    gateway.last_seen = {(f"C{n:05d}", None): f"{1_700_000_000 + n}.000100" for n in range(10_050)}
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    adapter = await gateway.start(fake, Limits(pace=0.0, max_conversations=1))
    try:
        await fake.wait_for(lambda: [r for r in caplog.records if "catching up" in r.getMessage()])
        assert "10049 conversation(s) quiet longest, over 1" in caplog.records[-1].getMessage()
        assert adapter._taken_in.last_seen == {}
        assert len(adapter._taken_in._newest) == 10_000 and ("C10049", None) in adapter._taken_in._newest
    finally:
        await adapter.stop()


async def test_reads_are_paced_and_a_429_is_waited_out(fake):
    gateway = Gateway()
    adapter = await gateway.start(fake)
    await fake.push_dm("U1", "first")
    await fake.push_dm("U2", "first too")
    await fake.wait_for(lambda: len(gateway.last_seen) == 2)
    await down(fake, adapter)

    await fake.push_dm("U1", "while down")
    await fake.push_dm("U2", "while down too")
    fake.fail_next("conversations.history", status=429, retry_after=0)
    started = time.monotonic()
    adapter = await gateway.start(fake, Limits(pace=0.4))
    try:
        await fake.wait_for(lambda: len(gateway.items) == 4)
    finally:
        await adapter.stop()
    # Three reads (one answered 429), each after the pace: Slack's 50 a minute, scaled.
    assert len(fake.calls_to("conversations.history")) == 3
    assert time.monotonic() - started >= 2 * 0.4
    assert sorted(gateway.texts()[2:]) == ["while down", "while down too"]


async def test_a_message_read_back_that_the_store_refuses_is_handed_over_again_until_it_is_taken(fake, caplog):
    # It was left, its conversation with it, for the next start: days away perhaps, past the day a
    # catch-up reads back, though the store had room again a moment later.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    await fake.push_dm("U1", "while down")
    await fake.push_dm("U1", "and again")
    refusals = 0

    async def full_at_first(inbound: Inbound) -> None:
        nonlocal refusals
        if refusals < 2:
            refusals += 1
            raise full_disk()
        await gateway.sink(inbound)

    caplog.set_level(logging.INFO, logger="platforms.slack")
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2, catch_up=NO_PACE)
    gateway.bind(adapter)
    await adapter.start(full_at_first)
    try:
        await fake.wait_for(lambda: gateway.texts() == ["first from U1", "while down", "and again"])
        live = (await fake.push_dm("U1", "live"))["event"]
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] == live["ts"])  # not left behind for good
    finally:
        await down(fake, adapter)
    assert refusals == 2
    [while_down] = [i.event_id for i in gateway.items if i.text == "while down"]
    assert f"slack: message {while_down} was not recorded (OperationalError: database or disk is full) as the" \
           " catch-up read it back; handing it over again in 0.5 s, and until it is" in caplog.messages
    assert f"slack: message {while_down} is recorded" in caplog.messages


async def test_a_message_the_store_refuses_until_the_stop_is_read_again_at_the_next_start(fake):
    gateway = Gateway()
    adapter = await gateway.start(fake)
    await fake.push_dm("U1", "first")
    await fake.wait_for(lambda: gateway.last_seen)
    await down(fake, adapter)
    seen_before = dict(gateway.last_seen)

    await fake.push_dm("U1", "while down")
    await fake.push_dm("U1", "and again")
    refused = 0

    async def failing(inbound: Inbound) -> None:
        nonlocal refused
        refused += 1
        raise full_disk()  # a later start may have room

    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2, catch_up=NO_PACE)
    gateway.bind(adapter)
    await adapter.start(failing)
    try:
        await fake.wait_for(lambda: refused == 1)
    finally:
        await adapter.stop()
    assert gateway.last_seen == seen_before

    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: len(gateway.items) == 3)
    finally:
        await adapter.stop()
    assert gateway.texts() == ["first", "while down", "and again"]


async def test_a_command_typed_in_peoples_thread_leaves_nothing_to_read_back(fake):
    gateway = Gateway()
    adapter = await gateway.start(fake)
    try:
        top = (await fake.push_message("C1", "U1", "people talking"))["event"]["ts"]
        await fake.push_message("C1", "U2", "!stop", thread_ts=top)
        await fake.wait_for(lambda: gateway.texts() == ["!stop"])
        await fake.push_dm("U1", "then a DM")
        await fake.wait_for(lambda: gateway.last_seen)
    finally:
        await adapter.stop()
    assert list(gateway.last_seen) == [(DM, None)]  # the thread is not the bot's: no read of it at each start


async def test_a_conversation_whose_read_is_still_to_be_tried_again_at_the_stop_is_read_at_the_next_start(
        fake, caplog):
    # Though a live message came there since, the record stays before what was missed.
    gateway = Gateway()
    adapter = await gateway.start(fake)
    await fake.push_dm("U1", "first")
    await fake.wait_for(lambda: gateway.last_seen)
    await down(fake, adapter)
    seen_before = dict(gateway.last_seen)

    await fake.push_dm("U1", "while down")
    fake.fail_next("conversations.history", "internal_error")
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    adapter = await gateway.start(fake, Limits(pace=0.0, first_retry=60.0, live_wait=0.2))
    try:
        await fake.wait_for(lambda: [r for r in caplog.records if "reading it again in 60 s" in r.getMessage()])
        fake.give_up_after = None
        await fake.push_dm("U1", "live")
        await fake.wait_for(lambda: gateway.texts() == ["first", "live"])
    finally:
        await down(fake, adapter)
    assert len(fake.calls_to("conversations.history")) == 1
    assert gateway.last_seen == seen_before

    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: len(gateway.items) == 4)
    finally:
        await adapter.stop()
    assert gateway.texts() == ["first", "live", "while down", "live"]  # the gateway's inbox drops the repeat


def acked(fake: FakeSlack, body: dict) -> bool:
    """The adapter acknowledged the envelope carrying ``body`` (a pushed event)."""
    return any(envelope.acked for envelope in fake.envelopes.values() if envelope.payload is body)


async def seen_once_then_down(fake: FakeSlack, gateway: Gateway, *users: str) -> None:
    adapter = await gateway.start(fake)
    for user in users:
        await fake.push_dm(user, f"first from {user}")
    await fake.wait_for(lambda: len(gateway.last_seen) == len(users))
    await down(fake, adapter)


async def test_a_live_message_waits_for_the_older_ones_the_catch_up_reads_in_its_conversation(fake):
    # Slack's catch-up ran beside live events: a live message there was answered before one sent
    # while the gateway was down, out of the order in which they were sent.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    await fake.push_dm("U1", "while down")
    reading = fake.hold("conversations.history")
    adapter = await gateway.start(fake, sink_timeout=0.2)
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        fake.give_up_after = None  # from here on, events come live
        live = await fake.push_dm("U1", "live")
        await fake.wait_for(lambda: acked(fake, live))  # acked after sink_timeout, waiting still
        assert gateway.texts() == ["first from U1"]
        reading.set()
        await fake.wait_for(lambda: len(gateway.items) == 4)  # "live" read back too
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] == live["event"]["ts"])
    finally:
        await adapter.stop()
    assert gateway.taken() == ["first from U1", "while down", "live"]


async def test_a_conversation_a_live_message_waits_for_is_read_next(fake):
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1", "U2", "U3")  # U3's DM the most recently active: read first
    reading = fake.hold("conversations.history")
    adapter = await gateway.start(fake, sink_timeout=0.2)
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        fake.give_up_after = None
        live = await fake.push_dm("U1", "live")
        await fake.wait_for(lambda: acked(fake, live))
        reading.set()
        await fake.wait_for(lambda: gateway.texts()[-1:] == ["live"])
        await fake.wait_for(lambda: len(fake.calls_to("conversations.history")) == 3)
    finally:
        await adapter.stop()
    assert [c.params["channel"] for c in fake.calls_to("conversations.history")] == ["DU3", "DU1", "DU2"]


async def test_a_live_message_waits_no_longer_than_the_bound_for_a_catch_up_slack_does_not_answer(fake, caplog):
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    missed = (await fake.push_dm("U1", "while down"))["event"]
    reading = fake.hold("conversations.history")
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    adapter = await gateway.start(fake, Limits(pace=0.0, live_wait=0.2))
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        fake.give_up_after = None
        live = (await fake.push_dm("U1", "live"))["event"]
        await fake.wait_for(lambda: gateway.texts() == ["first from U1", "live"])
        assert gateway.last_seen[(DM, None)] < missed["ts"]  # not recorded past what is still to be read
        reading.set()
        await fake.wait_for(lambda: len(gateway.items) == 4)  # "live" read back too
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] == live["ts"])
    finally:
        await adapter.stop()
    assert gateway.taken() == ["first from U1", "live", "while down"]
    assert f"slack: a live message in {DM} waited 0.2 s for the catch-up there; handed on now, perhaps before" \
           " older ones, and the later ones there at once" in caplog.messages


async def test_a_message_acked_before_the_gateway_failed_to_take_it_is_read_back_once_at_the_next_start(fake):
    # Acked after sink_timeout, then refused by the store until the stop: Slack never sends it again,
    # and a later message there moved the last seen past it, so no catch-up read it either. (A failure
    # of its own, which would recur at every try, is dropped instead, as on Discord.)
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    fake.give_up_after = None
    release = asyncio.Event()
    refusals = 0

    async def fails_the_first(inbound: Inbound) -> None:
        nonlocal refusals
        if inbound.text == "slow":
            await release.wait()
            refusals += 1
            raise full_disk()
        await gateway.sink(inbound)

    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2, catch_up=NO_PACE, sink_timeout=0.2)
    gateway.bind(adapter)
    await adapter.start(fails_the_first)
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
        slow = await fake.push_dm("U1", "slow")
        await fake.wait_for(lambda: acked(fake, slow))
        later = (await fake.push_dm("U1", "later"))["event"]
        await fake.wait_for(lambda: gateway.texts()[-1] == "later")
        assert gateway.last_seen[(DM, None)] < slow["event"]["ts"]  # not past what the gateway does not have yet
        release.set()
        await fake.wait_for(lambda: refusals >= 1)
        await fake.push_dm("U1", "and after")
        await fake.wait_for(lambda: gateway.texts()[-1] == "and after")
    finally:
        await down(fake, adapter)
    assert gateway.last_seen[(DM, None)] < slow["event"]["ts"] < later["ts"]

    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: "slow" in gateway.texts())
        await fake.wait_for(lambda: len(fake.calls_to("conversations.history")) >= 1)
    finally:
        await adapter.stop()
    assert gateway.taken() == ["first from U1", "later", "and after", "slow"]
    assert gateway.texts().count("slow") == 1

