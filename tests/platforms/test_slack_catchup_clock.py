"""The Slack catch-up at start when this host's clock is off from Slack's (`platforms.slack_catchup`): a VM
resumed or a board booted with a stale time before NTP steps it, a clock set a day ahead. The messages' ts are on
Slack's clock, so the catch-up reads its bounds there (the ``Date`` of Slack's answers), never on ours alone. The
real slack-sdk clients on the loopback FakeSlack, whose answers carry the real time."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

import pytest

from platforms import slack_history
from platforms.fakes.slack import FakeSlack
from tests.platforms.test_slack_catchup import DM, Gateway, down

HOUR = 3600.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


async def _missed_one(fake: FakeSlack, gateway: Gateway) -> str:
    adapter = await gateway.start(fake)
    await fake.push_dm("U1", "first")
    await fake.wait_for(lambda: gateway.last_seen)
    await down(fake, adapter)
    return (await fake.push_dm("U1", "while down"))["event"]["ts"]


async def test_a_clock_an_hour_behind_still_reads_what_was_sent_while_down_and_a_live_one_does_not_pass_it(fake):
    # Asked up to our clock's "now", the read found nothing; the live message then recorded the DM past the one
    # missed, which no later start read either.
    gateway = Gateway()
    missed = await _missed_one(fake, gateway)
    adapter = await gateway.start(fake, clock=lambda: time.time() - HOUR)
    try:
        await fake.wait_for(lambda: "while down" in gateway.texts())
        await fake.push_dm("U1", "live")
        await fake.wait_for(lambda: gateway.taken() == ["first", "while down", "live"])
    finally:
        await adapter.stop()
    assert gateway.last_seen[(DM, None)] > missed


async def test_a_clock_a_day_ahead_does_not_skip_what_was_sent_while_down_as_too_old(fake, caplog):
    gateway = Gateway()
    await _missed_one(fake, gateway)
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    adapter = await gateway.start(fake, clock=lambda: time.time() + 25 * HOUR)
    try:
        await fake.wait_for(lambda: "while down" in gateway.texts())
    finally:
        await adapter.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w for w in warnings if "clock is" in w and "s ahead of Slack's; catching up on Slack's" in w]
    assert not [w for w in warnings if "skipped" in w]


async def test_a_page_carries_the_time_slack_answered_it_by_its_own_clock():
    class Answer(dict):
        headers = {"Date": "Sat, 06 Dec 2025 20:16:00 GMT"}

    async def api(method: str, chat_id: str, **kw: object) -> Answer:
        return Answer(messages=[{"ts": "1.000001"}])

    messages, cursor = await slack_history.page(api, DM, None)
    assert isinstance(messages, slack_history.Messages) and messages == [{"ts": "1.000001"}] and cursor is None
    assert messages.answered_at == 1765052160.0

    async def bare(method: str, chat_id: str, **kw: object) -> dict:
        return {"messages": []}

    assert (await slack_history.page(bare, DM, None))[0].answered_at is None


async def test_a_read_still_stops_where_the_catch_up_began_by_slacks_clock(fake):
    # What `test_slack_rereads` pinned with a clock set two minutes back, now that such a clock is taken for one
    # that is off: the chatter since the start came live, and does not crowd the missed message out of the read.
    gateway = Gateway()
    now = time.time()
    gateway.last_seen[("C1", None)] = f"{now - 300:.6f}"
    fake.messages[("C1", None)].append({"type": "message", "channel": "C1", "user": "U1", "ts": f"{now - 200:.6f}",
                                        "text": f"<@{fake.bot_user_id}> sent while it was down"})
    for n in range(1000):  # sent two minutes after the start, beyond the clocks' minute of margin
        fake.messages[("C1", None)].append({"type": "message", "channel": "C1", "user": "U2",
                                            "ts": f"{now + 120 + n / 1000:.6f}", "text": f"people talking {n}"})
    adapter = await gateway.start(fake)
    try:
        await fake.wait_for(lambda: gateway.texts() == ["sent while it was down"])
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    assert len(fake.calls_to("conversations.history")) == 1
