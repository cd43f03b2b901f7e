"""End to end on Slack: messages sent while the gateway was down, read back at its next start
(`platforms.slack_catchup`), through the real Gateway with its durable last-seen record and inbox,
the real SlackAdapter and the loopback FakeSlack."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agent import ModelRequest
from gateway.app import Gateway
from gateway.testing import make_config, settled, start_gateway
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits, ts_key
from platforms.slack_seen import REMEMBERED_NEWEST
from tests.sqlite_errors import full_disk

DM = "DU1"  # the fake's DM channel with user U1
PLACEHOLDER = "_working…_"
LATE_AFTER = 2.0


def echo(request: ModelRequest) -> dict:
    return {"text": f"re: {request.messages[-1].get('content')}"}


def answers(fake: FakeSlack, channel: str = DM, thread: str | None = None) -> list[str]:
    return [m.get("text", "") for m in fake.messages.get((channel, thread), [])
            if m.get("bot_id") and m.get("text") != PLACEHOLDER]


def acked(fake: FakeSlack, body: dict) -> bool:
    """The gateway acknowledged the envelope carrying ``body`` (a pushed event)."""
    return any(envelope.acked for envelope in fake.envelopes.values() if envelope.payload is body)


Start = Callable[..., Awaitable[Gateway]]


@pytest.fixture
async def restarts(tmp_path) -> AsyncIterator[tuple[FakeSlack, Start]]:
    """A fake Slack and a way to start a gateway on the same state directory (the last one started
    is stopped at the end)."""
    fake = await FakeSlack().start()
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, delivery={"late_after": LATE_AFTER})
    running: list[Gateway] = []

    async def start(limits: Limits = Limits(pace=0.0)) -> Gateway:
        adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2, catch_up=limits)
        running.append(await start_gateway(config, [adapter], script={"parent": echo}))
        return running[-1]

    yield fake, start
    for gateway in running:
        await gateway.stop(grace=0)
    await fake.close()


async def stopped_after_one_answer(fake: FakeSlack, start: Start) -> None:
    gateway = await start()
    await fake.push_dm("U1", "hello")
    await fake.wait_for(lambda: answers(fake) == ["re: hello"])
    await settled(gateway)
    await gateway.stop(grace=0)
    await fake.wait_for(lambda: not fake.open_connections)


async def test_a_message_read_back_and_then_retried_live_is_answered_once_with_the_late_note(restarts):
    fake, start = restarts
    await stopped_after_one_answer(fake, start)
    fake.give_up_after = 0.0  # Slack gave up on its event: only the catch-up can find it
    event = (await fake.push_dm("U1", "sent while it was down"))["event"]
    await asyncio.sleep(LATE_AFTER)  # down long enough for the answer to be late

    gateway = await start()
    await fake.wait_for(lambda: "re: sent while it was down" in answers(fake))
    assert fake.given_up
    retry = await fake.push_event(event)  # a late retry of the same message after all
    await fake.wait_for(lambda: acked(fake, retry))
    await settled(gateway)
    hello, note, answer = answers(fake)
    assert (hello, answer) == ("re: hello", "re: sent while it was down")
    assert note.startswith("⏱ Answering your message from ") and note.endswith(" ago: “sent while it was down”")


async def test_a_message_retried_live_while_the_catch_up_reads_it_is_answered_once(restarts):
    fake, start = restarts
    await stopped_after_one_answer(fake, start)
    pushed = await fake.push_dm("U1", "sent while it was down")  # queued: Slack retries it
    event = pushed["event"]
    reading = fake.hold("conversations.history")

    gateway = await start(Limits(pace=0.0, live_wait=0.1))
    # The retried event came, waited for the catch-up of its DM no longer than live_wait, and was taken first.
    await fake.wait_for(lambda: acked(fake, pushed))
    reading.set()
    # read back too (up to it, or past it to the answer if that was posted before the read)
    await fake.wait_for(lambda: ts_key(gateway.store.last_seen.of("slack")[DM]) >= ts_key(event["ts"]))
    await settled(gateway)
    assert answers(fake) == ["re: hello", "re: sent while it was down"]


async def test_a_message_whose_read_failed_at_start_is_answered_once_without_a_restart(restarts):
    # The catch-up's read failed (Slack answering 500), and the message waited for the next start.
    fake, start = restarts
    await stopped_after_one_answer(fake, start)
    fake.give_up_after = 0.0  # Slack gave up on its event: only the catch-up can find it
    await fake.push_dm("U1", "sent while it was down")
    fake.fail_next("conversations.history", "internal_error", status=500, times=2)

    gateway = await start(Limits(pace=0.0, first_retry=0.05))
    await fake.wait_for(lambda: "re: sent while it was down" in answers(fake))
    fake.give_up_after = None
    await fake.push_dm("U1", "and now")
    await fake.wait_for(lambda: "re: and now" in answers(fake))
    await settled(gateway)
    await gateway.stop(grace=0)
    await fake.wait_for(lambda: not fake.open_connections)
    assert len(fake.calls_to("conversations.history")) == 3

    gateway = await start()  # recorded as taken in: not read back and answered again
    await fake.wait_for(lambda: len(fake.calls_to("conversations.history")) == 4)
    await settled(gateway)
    assert [a for a in answers(fake) if not a.startswith("⏱")] == [
        "re: hello", "re: sent while it was down", "re: and now"]


class FirstRecordFails(SlackAdapter):
    """The real adapter, its gateway refusing to record the message ``slow`` for want of room from the
    moment the test says so, after Slack was acked for it (``sink_timeout``), as a full disk would."""

    def __init__(self, fail: asyncio.Event, **kw) -> None:
        super().__init__(sink_timeout=0.2, **kw)
        self.fail = fail
        self.refusals = 0

    async def start(self, sink, commands=()) -> None:
        async def failing_once(inbound):
            if inbound.text == "slow":
                await self.fail.wait()
                self.refusals += 1
                raise full_disk()
            return await sink(inbound)

        await super().start(failing_once, commands)


async def test_a_message_acked_and_then_not_recorded_is_answered_once_after_the_restart(restarts, tmp_path):
    # Slack never sends an acked message again, and the later message moved the conversation's last
    # seen past it: no catch-up read it, and it was never answered. Here the store refuses it until
    # the gateway stops (the retries end with the stop).
    fake, start = restarts
    await stopped_after_one_answer(fake, start)
    fail = asyncio.Event()
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, delivery={"late_after": LATE_AFTER})
    adapter = FirstRecordFails(fail, bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2, catch_up=Limits(pace=0.0))
    gateway = await start_gateway(config, [adapter], script={"parent": echo})
    try:
        await fake.wait_for(lambda: fake.calls_to("conversations.history"))
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
        slow = await fake.push_dm("U1", "slow")
        await fake.wait_for(lambda: acked(fake, slow))
        await fake.push_dm("U1", "later")
        fail.set()
        await fake.wait_for(lambda: "re: later" in answers(fake))
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    await fake.wait_for(lambda: not fake.open_connections)

    gateway = await start()
    await fake.wait_for(lambda: "re: slow" in answers(fake))
    await settled(gateway)
    assert [a for a in answers(fake) if not a.startswith("⏱")] == ["re: hello", "re: later", "re: slow"]


async def test_a_first_message_not_recorded_once_conversations_were_dropped_from_memory_is_answered_after_the_restart(
        restarts, tmp_path):
    # The adapter keeps the newest message of 10,000 conversations in memory. Past that, a conversation
    # missing from memory was left "as stored" when a message there was not taken: a DM never written
    # in before had nothing stored, so no catch-up read it, and the message was never answered.
    fake, start = restarts
    gateway = await start()
    for n in range(REMEMBERED_NEWEST + 1):  # a month of other conversations, all quiet since
        gateway.store.last_seen.record("slack", f"C{n:05d}", f"{1_600_000_000 + n}.000100")
    await gateway.stop(grace=0)
    await fake.wait_for(lambda: not fake.open_connections)

    fail = asyncio.Event()
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, delivery={"late_after": LATE_AFTER})
    adapter = FirstRecordFails(fail, bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                               ping_interval=0.2, catch_up=Limits(pace=0.0, max_conversations=1))
    gateway = await start_gateway(config, [adapter], script={"parent": echo})
    try:
        slow = await fake.push_dm("U2", "slow")  # the first DM from U2: no record of DU2 yet
        await fake.wait_for(lambda: acked(fake, slow))
        fail.set()
        await fake.wait_for(lambda: adapter.refusals >= 1)
    finally:
        await gateway.stop(grace=0)  # the disk stays full until then
    await fake.wait_for(lambda: not fake.open_connections)

    gateway = await start(Limits(pace=0.0, max_conversations=1))
    await fake.wait_for(lambda: "re: slow" in answers(fake, "DU2"))
    await settled(gateway)
    assert [a for a in answers(fake, "DU2") if not a.startswith("⏱")] == ["re: slow"]


class StoreFull(SlackAdapter):
    """The real adapter, its gateway's store refusing every message for want of room until ``room()``."""

    def __init__(self, room, **kw) -> None:
        super().__init__(**kw)
        self.room = room

    async def start(self, sink, commands=()) -> None:
        async def full(inbound):
            if not self.room():
                raise full_disk()
            return await sink(inbound)

        await super().start(full, commands)


async def test_a_message_the_store_refuses_until_slack_gives_up_on_it_is_answered_once_without_a_restart(
        restarts, tmp_path):
    # Slack sends an unacknowledged message again three times (over about five minutes here scaled
    # down), then no more: it was answered only after the next start, though the disk had room since.
    fake, start = restarts
    fake.ack_timeout = 0.2
    config = make_config(tmp_path, platforms={"slack": {"allow_all": True}}, delivery={"late_after": LATE_AFTER})
    adapter = StoreFull(lambda: fake.given_up, bot_token=fake.bot_token, app_token=fake.app_token,
                        api_base=fake.api_base, ping_interval=0.2, catch_up=Limits(pace=0.0))
    gateway = await start_gateway(config, [adapter], script={"parent": echo})
    try:
        await fake.push_dm("U1", "hello")
        await fake.wait_for(lambda: fake.given_up)
        await fake.wait_for(lambda: answers(fake) == ["re: hello"])
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    assert answers(fake) == ["re: hello"]
