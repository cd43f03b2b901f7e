"""The Slack catch-up reading a conversation again, while the adapter runs, after its read failed
(`platforms.rereads`): the real slack-bolt / slack-sdk clients on the loopback FakeSlack, a
recording sink in the gateway's place, and the last-seen record kept in a dict."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator

import pytest

from platforms.base import Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack_catchup import Limits
from tests.platforms.test_slack_catchup import DM, Gateway, acked, down, seen_once_then_down

QUICK = Limits(pace=0.0, first_retry=0.05)
FAILED = "slack: catching up on DU1: the read failed"
READ_AT_LAST = "slack: catching up on DU1: read at last, after 1 failed read(s)"
ALIKE = "; others failing alike until a read succeeds wait with it (logged at DEBUG)"
"""Ends the warning of the read that found Slack down: the others' failures meanwhile are at DEBUG."""

KINDS = {
    "a 5xx": {"error": "internal_error", "status": 500},
    "no answer at all": {"error": "", "drop": True, "times": 2},  # aiohttp sends a GET once more by itself
    "a third 429 in a row": {"status": 429, "retry_after": 0, "times": 3},
}


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


def lines(caplog: pytest.LogCaptureFixture, start: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith(start)]


@pytest.mark.parametrize("failure", KINDS.values(), ids=list(KINDS))
async def test_a_read_that_fails_is_read_again_while_the_adapter_runs(fake, caplog, failure):
    # It was left for the next start, which may be days away, past the day a catch-up reads back.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    missed = (await fake.push_dm("U1", "while down"))["event"]
    fake.fail_next("conversations.history", **failure)
    caplog.set_level(logging.INFO, logger="platforms.slack")
    adapter = await gateway.start(fake, QUICK)
    try:
        await fake.wait_for(lambda: gateway.texts() == ["first from U1", "while down"])
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] == missed["ts"])
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    [failed] = lines(caplog, FAILED)
    assert failed.levelno == logging.WARNING
    assert failed.getMessage().endswith("; reading it again in 0.05 s, and until it is read" + ALIKE) or \
        failed.getMessage().endswith("; reading it again in 0 s (Retry-After), and until it is read")
    assert [r.levelno for r in lines(caplog, READ_AT_LAST)] == [logging.INFO]
    assert not [r for r in caplog.records if "not read" in r.getMessage()]


async def test_a_read_refused_for_the_token_is_read_again_once_slack_takes_it_again_not_before(fake, caplog):
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    await fake.push_dm("U1", "while down")
    fake.fail_next("conversations.history", "token_revoked")
    caplog.set_level(logging.INFO, logger="platforms.slack")
    adapter = await gateway.start(fake, Limits(pace=0.0, first_retry=0.05, live_wait=0.2))
    try:
        await fake.wait_for(lambda: adapter.connection().status == "down")
        fake.give_up_after = None
        live = (await fake.push_dm("U1", "live"))["event"]
        await fake.wait_for(lambda: gateway.texts() == ["first from U1", "live"])  # after live_wait: not held for good
        assert len(fake.calls_to("conversations.history")) == 1  # no timed retry, refused again and again
        live = (await fake.push_dm("U1", "live again"))["event"]  # one waited already: this one does not
        await fake.wait_for(lambda: gateway.texts()[-1] == "live again")
        assert gateway.last_seen[(DM, None)] < live["ts"]  # not past what is still to be read
        await adapter.send(Outbound(chat_id=DM, thread_id=None, text="an answer", idempotency_key="k1"))
        await fake.wait_for(lambda: gateway.taken() == ["first from U1", "live", "live again", "while down"])
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] >= live["ts"])  # (or past, to the answer)
    finally:
        await down(fake, adapter)
    assert adapter.connection().status == "connected"
    assert len(lines(caplog, "slack: a live message in DU1 waited 0.2 s")) == 1
    [failed] = lines(caplog, FAILED)
    assert failed.getMessage().endswith("; reading it again once Slack takes the bot token again, and until it is"
                                        " read" + ALIKE)
    assert lines(caplog, READ_AT_LAST)


async def test_a_live_message_waits_for_the_read_again_and_comes_after_the_missed_ones(fake, caplog):
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    await fake.push_dm("U1", "while down")
    fake.fail_next("conversations.history", "internal_error", status=500)
    caplog.set_level(logging.INFO, logger="platforms.slack")
    adapter = await gateway.start(fake, Limits(pace=0.0, first_retry=1.0), sink_timeout=0.2)
    try:
        await fake.wait_for(lambda: lines(caplog, FAILED))
        fake.give_up_after = None
        live = await fake.push_dm("U1", "live")
        await fake.wait_for(lambda: acked(fake, live))  # acked after sink_timeout, waiting still
        assert gateway.texts() == ["first from U1"]
        await fake.wait_for(lambda: len(gateway.items) == 4)  # "live" read back too
        await fake.wait_for(lambda: gateway.last_seen[(DM, None)] == live["event"]["ts"])
    finally:
        await down(fake, adapter)
    assert gateway.taken() == ["first from U1", "while down", "live"]


async def test_the_reads_back_off_together_and_a_failed_conversation_goes_after_the_others(fake, caplog):
    # In an outage the catch-up asks no more often than its backoff, not once per conversation.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1", "U2")  # U2's DM the most recently active: read first
    await fake.push_dm("U1", "while down")
    await fake.push_dm("U2", "while down too")
    fake.fail_next("conversations.history", "internal_error", status=500, times=3)
    caplog.set_level(logging.DEBUG, logger="platforms.slack")
    started = time.monotonic()
    adapter = await gateway.start(fake, Limits(pace=0.0, first_retry=0.1, max_retry=0.2))
    try:
        await fake.wait_for(lambda: len(gateway.items) == 4)
        elapsed = time.monotonic() - started
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    assert [c.params["channel"] for c in fake.calls_to("conversations.history")] == ["DU2", "DU1", "DU2", "DU1", "DU2"]
    assert elapsed >= 0.1 + 0.2 + 0.2  # doubling, up to max_retry; none after the first read that succeeded
    failed = [r for r in caplog.records if "the read failed" in r.getMessage()]
    assert [r.levelno for r in failed] == [logging.WARNING, logging.DEBUG, logging.DEBUG]  # once for the outage
    assert sorted(gateway.texts()[2:]) == ["while down", "while down too"]


async def test_reads_failing_until_what_was_missed_is_too_old_to_answer_are_given_up_for_the_next_start(
        fake, caplog):
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    seen_before = dict(gateway.last_seen)
    await fake.push_dm("U1", "while down")
    fake.fail_next("conversations.history", "internal_error", status=500)
    later = [0.0]
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    adapter = await gateway.start(fake, Limits(pace=0.0, first_retry=0.2),
                                  monotonic=lambda: time.monotonic() + later[0])
    try:
        await fake.wait_for(lambda: lines(caplog, FAILED))
        later[0] = 24 * 3600.0  # a day on, Slack failing all along
        await fake.wait_for(lambda: lines(caplog, "slack: catching up on messages sent while the gateway was down"))
    finally:
        await down(fake, adapter)
    assert len(fake.calls_to("conversations.history")) == 1
    assert lines(caplog, "slack: catching up on")[-1].getMessage().endswith(
        "; not read: DU1: reads failed until what was missed there was older than 24 h")
    assert gateway.last_seen == seen_before and gateway.texts() == ["first from U1"]


async def test_a_wall_clock_stepped_days_forward_during_the_catch_up_gives_up_no_read(fake, caplog):
    # Two days stale (a board booted without its time), NTP steps the clock right once the first conversation
    # is handed on: the give-up, counted on that clock, came at once, and the second conversation, whose read had
    # not even failed, was left to the next start with "reads failed until ... older than 24 h".
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1", "U2")
    await fake.push_dm("U1", "while down")
    await fake.push_dm("U2", "while down too")
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    stale = 2 * 24 * 3600.0
    adapter = await gateway.start(fake, clock=lambda: time.time() - (stale if len(gateway.items) < 3 else 0.0))
    try:
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    assert sorted(gateway.texts()[2:]) == ["while down", "while down too"]
    assert not [r for r in caplog.records if "not read" in r.getMessage()]


async def test_a_read_refused_for_good_is_left_for_the_next_start_as_before(fake, caplog):
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1")
    await fake.push_dm("U1", "while down")
    fake.fail_next("conversations.history", "not_in_channel")  # the conversation's own refusal
    caplog.set_level(logging.WARNING, logger="platforms.slack")
    adapter = await gateway.start(fake, QUICK)
    try:
        await fake.wait_for(lambda: lines(caplog, "slack: catching up on messages sent while the gateway was down"))
    finally:
        await down(fake, adapter)
    assert len(fake.calls_to("conversations.history")) == 1 and not lines(caplog, FAILED)
    assert caplog.records[-1].getMessage().endswith("; not read: DU1: conversations.history: not_in_channel")

    adapter = await gateway.start(fake, QUICK)
    try:
        await fake.wait_for(lambda: "while down" in gateway.texts())
    finally:
        await down(fake, adapter)


OUTAGE = {"error": "internal_error", "status": 500}
FIRST_PASS = {  # the reads' failures in turn -> what the first pass counts; read in all, and after the first pass
    "Slack failing for all": ([OUTAGE], "0 conversation(s) read, 3 waiting", 3, 3),  # the other reads wait with it
    "one conversation's reads failing": ([KINDS["a third 429 in a row"]], "2 conversation(s) read, 1 waiting", 3, 1),
    "one refused for good, then Slack failing": ([{"error": "not_in_channel"}, OUTAGE],
                                                 "0 conversation(s) read, 1 refused, 2 waiting", 2, 2),
}


@pytest.mark.parametrize("failures, first_pass, read, after", FIRST_PASS.values(), ids=list(FIRST_PASS))
async def test_a_line_says_how_far_the_first_pass_got_and_another_once_those_waiting_for_a_retry_are_read(
        fake, caplog, failures, first_pass, read, after):
    # The one summary came at the end of the whole catch-up, retries included, which last as long as an
    # outage: an operator watching the log meanwhile saw nothing of how far it got.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1", "U2", "U3")  # U3's DM the most recently active: read first
    for user in ("U1", "U2", "U3"):
        await fake.push_dm(user, f"while down from {user}")
    for failure in failures:
        fake.fail_next("conversations.history", **failure)
    caplog.set_level(logging.INFO, logger="platforms.slack")
    adapter = await gateway.start(fake, QUICK)
    try:
        await fake.wait_for(lambda: len(gateway.items) == 3 + read)
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    messages = [m for m in caplog.messages if m.startswith("slack: catching up")]
    [over] = [n for n, m in enumerate(messages) if m.startswith("slack: catching up: first pass over")]
    assert messages[over] == (f"slack: catching up: first pass over, {first_pass} for a retry (see the failed reads"
                              " above); a line says when all are read")
    assert min(n for n, m in enumerate(messages) if m.endswith(": read at last, after 1 failed read(s)")) > over
    assert [m for m in messages if m.startswith("slack: catching up: nothing left")] == [
        f"slack: catching up: nothing left waiting for a retry: {read} conversation(s) read, {after} of them after"
        " the first pass"]


async def test_an_outage_is_one_warning_not_one_per_conversation_and_one_line_says_when_the_others_are_read(
        fake, caplog):
    # Each conversation whose read failed warned the first time: in an outage of a workspace of a
    # thousand conversations, a thousand warnings saying the same thing.
    users = [f"U{n}" for n in range(1, 6)]
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, *users)  # U5's DM the most recently active: read first
    for user in users:
        await fake.push_dm(user, f"while down from {user}")
    fake.fail_next("conversations.history", **OUTAGE, times=4)  # the first read, then three reads again
    caplog.set_level(logging.DEBUG, logger="platforms.slack")
    adapter = await gateway.start(fake, Limits(pace=0.0, first_retry=0.01, max_retry=0.01))
    try:
        await fake.wait_for(lambda: len(gateway.items) == 2 * len(users))
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    failed = [r for r in caplog.records if ": the read failed (" in r.getMessage()]
    assert len(failed) == 4 and [r.levelno for r in failed] == [logging.WARNING] + 3 * [logging.DEBUG]
    assert failed[0].getMessage() == (
        "slack: catching up on DU5: the read failed (NetworkError: conversations.history: internal_error); reading it"
        " again in 0.01 s, and until it is read" + ALIKE)
    read = [r for r in caplog.records if ": read at last, after " in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in read if r.levelno > logging.DEBUG] == [
        (logging.INFO, "slack: catching up on DU5: read at last, after 1 failed read(s)")]
    assert len(read) == 4  # DU5 and the three others whose reads failed, at DEBUG
    assert [m for m in caplog.messages if " more read at last" in m] == [
        "slack: catching up: 3 more read at last, whose reads failed while Slack was down (each logged at DEBUG)"]


async def test_a_conversation_s_own_failures_still_warn_once_each(fake, caplog):
    # A third 429 in a row is that conversation's: the others are read meanwhile, so each says so.
    gateway = Gateway()
    await seen_once_then_down(fake, gateway, "U1", "U2")
    for user in ("U1", "U2"):
        await fake.push_dm(user, f"while down from {user}")
    fake.fail_next("conversations.history", **{**KINDS["a third 429 in a row"], "times": 6})
    caplog.set_level(logging.INFO, logger="platforms.slack")
    adapter = await gateway.start(fake, QUICK)
    try:
        await fake.wait_for(lambda: len(gateway.items) == 4)
        await fake.wait_for(lambda: adapter._catch_up is not None and not adapter._catch_up.reading)
    finally:
        await down(fake, adapter)
    assert [r.getMessage().split(": the read failed")[0] for r in caplog.records
            if ": the read failed (" in r.getMessage() and r.levelno == logging.WARNING] == [
        "slack: catching up on DU2", "slack: catching up on DU1"]
    assert len(lines(caplog, "slack: catching up on DU1: read at last")) == 1
    assert len(lines(caplog, "slack: catching up on DU2: read at last")) == 1
