"""Handing a Slack message over to the gateway until it is recorded (`platforms.slack_handover`), and
what is kept, acknowledged or dropped when the gateway fails to take it:
the real slack-bolt / slack-sdk clients on the loopback FakeSlack, a recording sink in the gateway's
place (`tests.platforms.test_slack_catchup.Gateway`)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator

import pytest

from platforms.base import Inbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_seen import just_before
from tests.platforms.test_slack_adapter import SECRET, mounted
from tests.platforms.test_slack_catchup import DM, NO_PACE, Gateway, acked, down, seen_once_then_down
from tests.sqlite_errors import full_disk


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # Slack gives up on what it cannot deliver at once
        yield fake


class FullDisk(Gateway):
    """A gateway whose store refuses every message for want of room until ``room()`` says there is."""

    def __init__(self, room) -> None:
        super().__init__()
        self.room, self.refusals = room, 0

    async def sink(self, inbound: Inbound) -> None:
        if not self.room():
            self.refusals += 1
            raise full_disk()
        await super().sink(inbound)


async def test_a_message_the_store_refuses_until_slack_gives_up_on_it_is_handed_over_again_meanwhile(
        caplog: pytest.LogCaptureFixture) -> None:
    # Refused before the ack, it was left to Slack to send again; Slack gives up after three retries
    # (over about five minutes), and then it waited for the next start's catch-up, though the store had
    # room again since: answered days later perhaps, or never (past the day a catch-up reads back).
    async with FakeSlack(ack_timeout=0.2) as fake:
        gateway = FullDisk(room=lambda: fake.given_up)
        caplog.set_level(logging.INFO, logger="platforms.slack")
        adapter = await gateway.start(fake)
        try:
            hello = (await fake.push_dm("U1", "hello"))["event"]
            [envelope] = await fake.wait_for(lambda: fake.given_up)
            await fake.wait_for(lambda: gateway.last_seen.get((DM, None)) == hello["ts"])
        finally:
            await down(fake, adapter)
    assert gateway.texts() == ["hello"] and len(envelope.deliveries) == 4 and not envelope.acked
    assert not fake.calls_to("conversations.history")  # no read of Slack for it: the adapter has the event
    hello_id = f"{DM}:{hello['ts']}"
    assert f"slack: message {hello_id} was not recorded (OperationalError: database or disk is full) while" \
           " Slack may still send it again; handing it over again in 0.5 s, and until it is" in caplog.messages
    assert f"slack: message {hello_id} is recorded" in caplog.messages


async def test_a_message_slack_sends_again_and_is_taken_is_not_left_behind_by_a_stop() -> None:
    # Slack's own delivery took it: the adapter's handing over again, cut short by the stop, must not
    # count it as not taken (the record moved back just before it, for the next start to read again).
    async with FakeSlack(ack_timeout=0.2) as fake:
        gateway = FullDisk(room=lambda: gateway.refusals == 1)
        adapter = await gateway.start(fake)
        try:
            hello = (await fake.push_dm("U1", "hello"))["event"]
            await fake.wait_for(lambda: gateway.last_seen.get((DM, None)) == hello["ts"])
        finally:
            await down(fake, adapter)
        assert gateway.taken() == ["hello"] and gateway.last_seen[(DM, None)] == hello["ts"]


async def test_a_message_the_store_refuses_after_the_ack_is_handed_over_again_until_it_is_taken(fake, caplog):
    # Slack will not send it again: waiting for the next start's catch-up could take days, past the
    # day it reads back.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    fake.give_up_after = None
    release, tries = asyncio.Event(), 0

    async def full_at_first(inbound: Inbound) -> None:
        nonlocal tries
        if inbound.text == "slow":
            tries += 1
            if tries == 1:
                await release.wait()
            if tries <= 2:
                raise full_disk()
        await gateway.sink(inbound)

    caplog.set_level(logging.INFO, logger="platforms.slack")
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2, catch_up=NO_PACE, sink_timeout=0.2)
    gateway.bind(adapter)
    await adapter.start(full_at_first)
    try:
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
        slow = await fake.push_dm("U1", "slow")
        await fake.wait_for(lambda: acked(fake, slow))
        later = (await fake.push_dm("U1", "later"))["event"]
        release.set()
        await fake.wait_for(lambda: "slow" in gateway.texts())
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] == later["ts"])
    finally:
        await down(fake, adapter)
    assert (gateway.texts(), tries) == (["first from U1", "later", "slow"], 3)
    slow_id = f"{DM}:{slow['event']['ts']}"
    assert f"slack: message {slow_id} was not recorded (OperationalError: database or disk is full) after Slack was" \
           " acknowledged for it; handing it over again in 0.5 s, and until it is" in caplog.messages
    assert f"slack: message {slow_id} is recorded" in caplog.messages


async def test_a_message_the_store_refuses_in_the_turn_the_ack_wait_ends_is_not_acked(fake):
    # The hand-over failed before it saw the ack (so it did not try again), and the ack went all the
    # same: Slack never sent the message again, and nothing in this process took it.
    fake.ack_timeout = 0.3
    gateway, tries = Gateway(), 0

    async def full_at_first(inbound: Inbound) -> None:
        nonlocal tries
        tries += 1
        if tries == 1:
            raise full_disk()
        await gateway.sink(inbound)

    # A wait of 0 ends in the loop turn the sink first runs in: the window, made certain.
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           ping_interval=0.2, catch_up=NO_PACE, sink_timeout=0.0)
    await adapter.start(full_at_first)
    try:
        await fake.push_dm("U1", "hello")
        await fake.wait_for(lambda: gateway.texts() == ["hello"])
    finally:
        await down(fake, adapter)
    assert tries == 2


class Poisoned(Gateway):
    """A gateway with a bug that one message trips: it fails on "poison" for its own sake, not storage's
    (after ``release`` is set, when one is given: slower than the adapter's sink_timeout)."""

    def __init__(self, release: asyncio.Event | None = None) -> None:
        super().__init__()
        self.release = release
        self.tries = 0

    async def sink(self, inbound: Inbound) -> None:
        if inbound.text == "poison":
            self.tries += 1
            if self.release is not None:
                await self.release.wait()
            raise ValueError("a bug this message trips")
        await super().sink(inbound)


def refusals(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "platforms.slack" and "the gateway refused message" in r.message]


async def test_a_live_message_the_gateway_fails_on_after_the_ack_is_dropped_not_kept_behind(
        fake: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    # Acked (slower than sink_timeout), then failing for its own sake: it kept its conversation just
    # before it for the whole process, so no live message there was recorded as seen, and every start
    # read it back and failed on it again.
    gateway = Poisoned(release=asyncio.Event())
    adapter = await gateway.start(fake, sink_timeout=0.1)
    try:
        poison = (await fake.push_dm("U1", "poison"))["event"]
        await fake.wait_for(lambda: all(e.acked for e in fake.envelopes.values()))
        assert gateway.release is not None
        gateway.release.set()
        after = (await fake.push_dm("U1", "after it"))["event"]
        await fake.wait_for(lambda: gateway.last_seen.get((DM, None)) == after["ts"])
    finally:
        await adapter.stop()
    assert gateway.texts() == ["after it"]
    [refused] = refusals(caplog)
    assert refused.getMessage() == (f"slack: the gateway refused message {DM}:{poison['ts']} after Slack was"
                                    " acknowledged for it; dropped, as it would fail alike at every try")
    assert refused.exc_info is not None and isinstance(refused.exc_info[1], ValueError)


async def test_a_message_read_back_that_the_gateway_fails_on_is_dropped_and_the_catch_up_goes_on(
        fake: FakeSlack, caplog: pytest.LogCaptureFixture) -> None:
    # It failed at every start, leaving the rest of its conversation unread and the conversation
    # "behind": live messages there were not recorded as seen for the whole process.
    gateway = Poisoned()
    adapter = await gateway.start(fake)
    await fake.push_dm("U1", "first")
    await fake.wait_for(lambda: (DM, None) in gateway.last_seen)
    await down(fake, adapter)
    poison = (await fake.push_dm("U1", "poison"))["event"]
    await fake.push_dm("U1", "after it, while down")
    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: gateway.texts() == ["first", "after it, while down"])
        live = (await fake.push_dm("U1", "live"))["event"]
        await fake.wait_for(lambda: gateway.last_seen.get((DM, None)) == live["ts"])
    finally:
        await adapter.stop()
    assert gateway.tries == 1
    [refused] = refusals(caplog)
    assert refused.getMessage() == (f"slack: the gateway refused message {DM}:{poison['ts']} as the catch-up read"
                                    " it back; dropped, as it would fail alike at every try")
    assert refused.exc_info is not None

    await down(fake, adapter)
    await fake.push_dm("U1", "while down again")
    adapter = await gateway.start(fake)  # read on after it, not from before it again
    try:
        await fake.wait_for(lambda: gateway.texts()[-1:] == ["while down again"])
    finally:
        await adapter.stop()
    assert gateway.tries == 1


class Hiccup(Gateway):
    """A gateway whose sink fails once for ``text``, at once (Slack is not acked: it sends it again)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.failing, self.recorded = text, []

    async def sink(self, inbound: Inbound) -> None:
        if inbound.text == self.failing:
            self.failing = ""
            raise sqlite3.OperationalError("database is locked")
        await super().sink(inbound)

    def seen(self, conversation: str, ts: str) -> None:
        self.recorded.append(ts)
        super().seen(conversation, ts)


async def test_a_message_failing_before_the_ack_is_logged_as_sent_again_and_holds_the_record_before_it(
        caplog: pytest.LogCaptureFixture) -> None:
    # It said "the next start reads it back", although Slack, not acked, sends it again within seconds.
    # The record does go back before it until it is taken (a crash meanwhile must not lose it), then
    # forward again (`test_slack_seen_order`).
    async with FakeSlack(ack_timeout=0.2) as fake:
        gateway = Hiccup("late")
        adapter = await gateway.start(fake)
        try:
            late = {**fake._store(DM, None, {"user": "U1", "text": "late"}), "channel_type": "im",
                    "team": fake.team_id}
            newer = (await fake.push_dm("U1", "newer"))["event"]
            await fake.wait_for(lambda: gateway.last_seen.get((DM, None)) == newer["ts"])
            await fake.push_event({**late, "event_ts": late["ts"]})  # Slack does not order events
            await fake.wait_for(lambda: gateway.texts() == ["newer", "late"])  # sent again, taken
        finally:
            await adapter.stop()
    assert gateway.recorded[:2] == [newer["ts"], just_before(late["ts"])] and gateway.recorded[-1] == newer["ts"]
    said = [r.getMessage() for r in caplog.records if r.name == "platforms.slack" and r.levelno >= logging.WARNING]
    assert said == [f"slack: message {DM}:{late['ts']} was not taken by the gateway (OperationalError: database is"
                    " locked); not acknowledged, so Slack sends it again"]


def lost_to_slack(fake: FakeSlack, body: dict) -> bool:
    """Slack gave up sending the event in ``body`` (a pushed event) again, unacknowledged, or does at the next
    connection: its retry found none open (``give_up_after=0``)."""
    [envelope] = [e for e in fake.envelopes.values() if e.payload is body]
    return not envelope.acked and (envelope in fake.given_up or envelope.retry_attempt >= len(envelope.deliveries))


async def test_a_later_message_is_not_recorded_past_one_whose_files_are_read_and_a_stop_leaves_it_to_the_next_start(
        ) -> None:
    # A Slack Connect file is described (files.info) before the message is handed over. A later message
    # there, taken meanwhile, moved the record past it; the stop (or a crash) then cut the read short, and
    # once Slack gave up sending it again, the next start's catch-up read only after the later one.
    async with FakeSlack(ack_timeout=0.2, give_up_after=0.0) as fake:
        gateway = Gateway()
        adapter = await gateway.start(fake)
        described = fake.hold("files.info")
        try:
            shared = await fake.push_file(DM, "U1", b"x", "notes.txt", text="read this", connect=True)
            await fake.wait_for(lambda: fake.calls_to("files.info"))
            await fake.push_dm("U1", "and this")
            await fake.wait_for(lambda: "and this" in gateway.texts())
            assert gateway.last_seen[(DM, None)] < shared["event"]["ts"]  # not past what the gateway does not have
        finally:
            await down(fake, adapter)
            described.set()
        assert gateway.last_seen[(DM, None)] < shared["event"]["ts"]
        await fake.wait_for(lambda: lost_to_slack(fake, shared))

        adapter = await gateway.start(fake)
        try:
            await fake.wait_for(lambda: "read this" in gateway.texts())
        finally:
            await down(fake, adapter)
    assert gateway.taken() == ["and this", "read this"]


@pytest.mark.parametrize("read", ["cut short", "ends during the stop"])
async def test_a_first_message_whose_files_are_read_as_a_stop_comes_is_read_back_at_the_next_start(read: str) -> None:
    # Nothing recorded in its conversation, and nothing recorded for it: the next start did not read there,
    # and once Slack gave up sending it again it was lost.
    async with FakeSlack(ack_timeout=0.2, give_up_after=0.0) as fake:
        gateway = Gateway()
        adapter = await gateway.start(fake)
        described = fake.hold("files.info")
        try:
            shared = await fake.push_file(DM, "U1", b"x", "notes.txt", text="read this", connect=True)
            await fake.wait_for(lambda: fake.calls_to("files.info"))
            if read == "ends during the stop":
                fake.stall()  # its close unanswered: the stop waits out its last calls' floor
                stopping = asyncio.create_task(adapter.stop_within(0))
                await fake.wait_for(lambda: adapter._stopping)
                described.set()  # read once the adapter stops: turned away, unacknowledged
                await stopping
        finally:
            await down(fake, adapter)
            described.set()
        assert gateway.items == []
        assert gateway.last_seen[(DM, None)] < shared["event"]["ts"]
        await fake.wait_for(lambda: lost_to_slack(fake, shared))

        adapter = await gateway.start(fake)
        try:
            await fake.wait_for(lambda: gateway.texts() == ["read this"])
        finally:
            await down(fake, adapter)

async def test_a_message_a_stop_turns_away_holds_the_record_before_it_for_the_next_start(fake: FakeSlack) -> None:
    # Slack does not order events: an older message than one recorded came during the stop and was left,
    # unacknowledged, for Slack to send again. The record stayed past it, so once Slack gave up on it no
    # catch-up read it back either.
    fake.http_retry_delays = ()
    gateway = Gateway()
    adapter = SlackAdapter(bot_token=fake.bot_token, mode="http", signing_secret=SECRET, api_base=fake.api_base)
    gateway.bind(adapter)
    async with mounted(adapter) as url:
        fake.events_url, fake.signing_secret = url, SECRET
        await adapter.start(gateway.sink)
        late = {**fake._store(DM, None, {"user": "U1", "text": "late"}), "channel_type": "im", "team": fake.team_id}
        newer = (await fake.push_dm("U1", "newer"))["event"]
        await fake.wait_for(lambda: gateway.last_seen.get((DM, None)) == newer["ts"])
        await adapter.typing("C1", None)  # a placeholder the stop deletes: held, it holds the stop midway
        deleting = fake.hold("chat.delete")
        stopping = asyncio.create_task(adapter.stop())
        try:
            await fake.wait_for(lambda: fake.calls_to("chat.delete"))
            delivered = len(fake.http_results)
            await fake.push_event({**late, "event_ts": late["ts"]})
            assert fake.http_results[delivered].status == 500  # left for Slack to send again
        finally:
            deleting.set()
            await stopping
    assert gateway.last_seen[(DM, None)] < late["ts"]

    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: "late" in gateway.texts())
    finally:
        await down(fake, adapter)
    assert gateway.taken() == ["newer", "late"]
