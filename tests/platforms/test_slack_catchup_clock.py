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
from platforms.base import Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack_catchup import Limits
from tests.platforms.test_slack_catchup import DM, Gateway, down, seen_once_then_down

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


async def test_a_clock_stepped_right_during_the_catch_up_skips_nothing_as_too_old(fake, caplog):
    # Twenty hours behind (a board booted stale), NTP steps the clock right just after the first conversation is
    # handed on. Aged by our clock plus the offset learned before the step, the second conversation's message of
    # five hours ago was a day "older" than it is: skipped as too old, and recorded as read, lost for good.
    gateway = Gateway()
    now = time.time()
    gateway.last_seen.update({("DU2", None): f"{now - HOUR:.6f}", (DM, None): f"{now - 6 * HOUR:.6f}"})
    for channel, user, age in (("DU2", "U2", HOUR / 2), (DM, "U1", 5 * HOUR)):
        fake.messages[(channel, None)].append({"type": "message", "channel": channel, "user": user,
                                               "ts": f"{now - age:.6f}", "text": f"{age / HOUR:g} h ago"})
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    adapter = await gateway.start(fake, clock=lambda: time.time() - (0.0 if gateway.items else 20 * HOUR))
    try:
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    assert gateway.texts() == ["0.5 h ago", "5 h ago"]
    assert not [r for r in caplog.records if "skipped" in r.getMessage()]


async def test_a_clock_stepped_right_before_slacks_first_answer_still_reads_up_to_where_the_catch_up_began(fake):
    # Behind by an hour when the catch-up began, stepped right while its first read failed: the offset learned
    # from the answer to the read again, taken from our stepped clock, put the catch-up's start an hour early, so
    # the read asked for none of what was sent while the gateway was down.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    await fake.push_dm("U1", "while down")
    fake.fail_next("conversations.history", "internal_error", status=500)
    adapter = await gateway.start(fake, Limits(pace=0.0, first_retry=0.05),
                                  clock=lambda: time.time() - (0.0 if fake.calls_to("conversations.history") else HOUR))
    try:
        await fake.wait_for(lambda: len(fake.calls_to("conversations.history")) == 2)
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    assert gateway.texts() == ["first from U1", "while down"]


async def test_a_page_dated_in_the_asctime_form_is_read_as_gmt_whatever_the_hosts_time_zone(monkeypatch):
    # RFC 9110 has recipients take the asctime form, which names no zone: read as local time, it put Slack's
    # clock off by the host's time zone, five hours here.
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()

    class Answer(dict):
        headers = {"Date": "Sat Dec  6 20:16:00 2025"}

    async def api(method: str, chat_id: str, **kw: object) -> Answer:
        return Answer(messages=[])

    try:
        assert (await slack_history.page(api, DM, None))[0].answered_at == 1765052160.0
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


async def test_a_post_is_found_by_a_host_clock_ahead_of_slacks_by_more_than_the_margin(fake):
    # Journaled five minutes "later" than Slack posted it, by a host clock five minutes ahead: looked up from a
    # minute before that, the post was not found, and the outbox sent it again.
    gateway = Gateway()
    adapter = await gateway.start(fake)
    try:
        ahead = 300.0
        since = time.time() + ahead
        part = Outbound("C1", None, "the answer", idempotency_key="t1:reply:0")
        sent = await adapter.send(part)
        found = await slack_history.find_sent(adapter._page, part, since, clock=lambda: time.time() + ahead)
        assert found == sent.message_id
        assert len(fake.calls_to("conversations.history")) == 2  # once more, from where Slack's clock puts it
    finally:
        await adapter.stop()


async def test_a_clock_behind_slacks_by_less_than_the_margin_reads_each_conversation_once(fake):
    # The margin past the start covers it: read again each time the host's clock was a few seconds behind, or
    # Slack's Date (in whole seconds) just a fraction ahead, the first conversation cost one more read.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    await fake.push_dm("U1", "while down")
    adapter = await gateway.start(fake, clock=lambda: time.time() - 5)
    try:
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    assert gateway.texts() == ["first from U1", "while down"]
    assert len(fake.calls_to("conversations.history")) == 1
