"""A part whose earlier attempt may have reached the platform unseen is looked up before it is
sent again (`platforms.base.FindsSent`): the real SlackAdapter against the loopback FakeSlack."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.progress_message import ProgressMessage
from gateway.store import GatewayStore
from platforms.base import Outbound
from platforms.fakes._slack_limits import Window
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_history import SENT_EVENT
from tests.clock_steps import run_clock_until
from tests.gateway.observing import Lookups
from tests.platforms.sink import Sink
from tests.platforms.slack_client import bot_posts, fake_slack, started_slacks

WAIT = 5.0


fake = fake_slack()
adapters = started_slacks()


@pytest.mark.parametrize("thread", [False, True], ids=["channel", "thread"])
async def test_a_post_whose_answer_was_lost_is_found_and_not_posted_again(tmp_path, fake, adapters, thread):
    clock = FakeClock()  # the chat's pacing and the backoff pass at once
    store, lookups = GatewayStore(tmp_path / "state.db", clock=clock), Lookups()
    outbox = Outbox(store.outbox, {"slack": await adapters()}, events=lookups.events, clock=clock)
    await outbox.start()
    thread_ts = None
    if thread:
        outbox.enqueue("slack", "C1", None, "the thread's start", kind="reply", key="t0")
        thread_ts = await outbox.wait_sent("t0:0", timeout=WAIT)
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)  # posted; the answer is lost
    outbox.enqueue("slack", "C1", thread_ts, "the answer", kind="reply", key="t1")
    message_id = await outbox.wait_sent("t1:0", timeout=WAIT)
    await outbox.close()
    store.close()
    [post] = [m for m in bot_posts(fake, thread=thread_ts) if m["text"] == "the answer"]
    assert post["ts"] == message_id and post["metadata"] == {"event_type": SENT_EVENT, "event_payload": {"key": "t1:0"}}
    assert len(fake.calls_to("conversations.replies" if thread else "conversations.history")) == 1
    assert lookups.outcomes == ["slack:found"]


class AheadClock:
    """The system's clocks, its wall clock ``ahead`` seconds fast (as NTP finds and steps back)."""

    def __init__(self, ahead: float) -> None:
        self.ahead = ahead

    def time(self) -> float:
        return time.time() + self.ahead

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@pytest.mark.parametrize(("upgraded", "ahead"), [(False, 0.0), (True, 0.0), (False, 30.0)],
                         ids=["same_build", "upgraded", "clock_stepped_back"])
async def test_a_post_in_flight_when_the_process_died_is_found_after_the_restart(tmp_path, fake, adapters, upgraded,
                                                                                 ahead):
    """Also when the wall clock was stepped back between the two processes: which parts the last
    process journaled is not told by their times."""
    path = tmp_path / "state.db"
    store1 = GatewayStore(path, clock=AheadClock(ahead))
    outbox1 = Outbox(store1.outbox, {"slack": await adapters()}, clock=AheadClock(ahead))
    await outbox1.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    outbox1.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    await fake.wait_for(lambda: bot_posts(fake))
    await outbox1.close()  # the process dies before it knows the post went out
    store1.close()
    if upgraded:  # it was a build that did not mark the parts it tried (schema 6): all of them count as tried
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            db.execute("ALTER TABLE gateway_outbox DROP COLUMN tried")
            db.execute("UPDATE gateway_meta SET value='6' WHERE key='schema_version'")

    store2 = GatewayStore(path)
    # The retry time process 1 recorded is on its wall clock, ahead: waited out to at most max_retry_after.
    outbox2 = Outbox(store2.outbox, {"slack": await adapters()}, max_retry_after=0.2)
    await outbox2.start()
    message_id = await outbox2.wait_sent("t1:0", timeout=WAIT)
    await outbox2.close()
    assert [m["ts"] for m in bot_posts(fake)] == [message_id]
    assert len(fake.calls_to("chat.postMessage")) == 1
    assert store2.outbox.message("t1:0").status == "sent"
    store2.close()


async def test_a_part_slack_cannot_look_up_is_sent_again_and_the_log_says_why(tmp_path, fake, adapters, caplog):
    clock = FakeClock()  # the backoff passes at once
    store, lookups = GatewayStore(tmp_path / "state.db", clock=clock), Lookups()
    outbox = Outbox(store.outbox, {"slack": await adapters()}, events=lookups.events, clock=clock)
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    fake.fail_next("conversations.history", "missing_scope")
    with caplog.at_level(logging.WARNING, logger="gateway.outbox"):
        outbox.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
        await outbox.wait_sent("t1:0", timeout=WAIT)
    await outbox.close()
    store.close()
    assert [m["text"] for m in bot_posts(fake)] == ["the answer", "the answer"]  # as before this lookup existed
    assert any("cannot tell whether t1:0 went out already" in r.getMessage() for r in caplog.records)
    assert lookups.outcomes == ["slack:unknown"]


async def test_a_rate_limited_lookup_is_asked_again_after_the_wait_and_finds_the_post(tmp_path, fake, adapters):
    clock = FakeClock()  # the backoff and the wait pass at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    fake.fail_next("conversations.history", status=429, retry_after=0.2)
    outbox.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    message_id = await outbox.wait_sent("t1:0", timeout=WAIT)
    await outbox.close()
    store.close()
    assert [m["ts"] for m in bot_posts(fake)] == [message_id]
    assert len(fake.calls_to("conversations.history")) == 2
    assert any(abs(s - 0.2) < 1e-3 for s in clock.sleeps), clock.sleeps  # the wait Slack asked for


async def test_a_lookup_the_outage_fails_too_is_asked_again_after_a_backoff_and_the_post_is_not_doubled(
    tmp_path, fake, adapters
):
    """Slack took the post but its answer was lost in an outage, and the lookup meets the outage
    too (a 503, or no connection): asked again once Slack is back, never answered by posting."""
    clock = FakeClock()  # the backoffs (0.5 s, 1 s, 2 s) pass at once
    store, lookups = GatewayStore(tmp_path / "state.db", clock=clock), Lookups()
    outbox = Outbox(store.outbox, {"slack": await adapters()}, events=lookups.events, clock=clock)
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    fake.fail_next("conversations.history", "service_unavailable", status=503, times=2)
    outbox.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    message_id = await outbox.wait_sent("t1:0", timeout=WAIT)
    await outbox.close()
    store.close()
    assert [m["ts"] for m in bot_posts(fake)] == [message_id]
    assert len(fake.calls_to("conversations.history")) == 3 and len(fake.calls_to("chat.postMessage")) == 1
    assert lookups.outcomes == ["slack:found"]


async def finish_a_card_while_its_post_loses_its_answer(store: GatewayStore, fake: FakeSlack, adapters, *,
                                                       delete: bool, clock: FakeClock) -> None:
    """A card's first post reaches Slack but its connection drops before the answer, and the turn
    finishes the card (``delete``: withdraws it) while that post is in flight; returns once the
    outbox has sent all it will and closed. ``clock``: the store's too, its pacing and backoffs passing at once."""
    outbox = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await outbox.start()
    card = ProgressMessage(outbox, ("slack", "C1", None), "card", turn_id="t1", run_id="r1")
    released = fake.hold("chat.postMessage")
    fake.fail_next("chat.postMessage", after=True, drop=True)  # posted; the connection drops before the answer
    card.publish("⏳ Working…", 0)
    await fake.wait_for(lambda: fake.calls_to("chat.postMessage"))
    card.finish("✓ Done", delete=delete)  # the turn ends while the post is in flight
    released.set()
    assert await outbox.flush(timeout=WAIT)
    await outbox.close()


def assert_found_and_finished(store: GatewayStore, fake: FakeSlack, *, delete: bool) -> None:
    """The card's one post was found and deleted, or edited to its final text."""
    assert [m["text"] for m in bot_posts(fake)] == ([] if delete else ["✓ Done"])  # no "⏳ Working…" left behind
    assert len(fake.calls_to("chat.postMessage")) == 1
    assert store.outbox.message("card:0").status == "sent"


@pytest.mark.parametrize("delete", [True, False], ids=["deleted", "finalised"])
async def test_a_card_withdrawn_while_its_post_lost_its_answer_is_found_and_finished(tmp_path, fake, adapters, delete):
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    await finish_a_card_while_its_post_loses_its_answer(store, fake, adapters, delete=delete, clock=clock)
    assert_found_and_finished(store, fake, delete=delete)
    store.close()


async def test_a_withdrawn_card_whose_lookup_meets_an_outage_is_left_as_it_is(tmp_path, fake, adapters, caplog):
    """The lookup of a withdrawn card fails too (a 503): a card is not worth holding the chat
    for, so it stays as it is; nothing blames the store for the platform's outage."""
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    fake.fail_next("conversations.history", "service_unavailable", status=503)
    await finish_a_card_while_its_post_loses_its_answer(store, fake, adapters, delete=True, clock=clock)
    assert [m["text"] for m in bot_posts(fake)] == ["⏳ Working…"]
    assert store.outbox.message("card:0").status == "dropped"
    assert len(fake.calls_to("conversations.history")) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "the store is not at fault"
    store.close()


@pytest.mark.parametrize("delete", [True, False], ids=["deleted", "finalised"])
async def test_a_card_whose_post_a_dead_process_left_in_flight_is_found_and_finished_after_the_restart(
        tmp_path, fake, adapters, delete):
    clock = FakeClock()  # both processes' pacing and backoffs pass at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    first = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await first.start()
    released = fake.hold("chat.postMessage")
    ProgressMessage(first, ("slack", "C1", None), "card", turn_id="t1", run_id="r1").publish("⏳ Working…", 0)
    await fake.wait_for(lambda: fake.calls_to("chat.postMessage"))
    await first.close()  # the process dies with the post in flight: the card stays pending in the store
    released.set()  # Slack posts it all the same
    await fake.wait_for(lambda: bot_posts(fake))

    again = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)  # the next start
    card = ProgressMessage(again, ("slack", "C1", None), "card", turn_id="t1", run_id="r2")
    card.finish("✓ Done", delete=delete)  # the turn, run again, ends before the card's turn to be sent
    await again.start()
    assert await again.flush(timeout=WAIT)
    await again.close()
    assert_found_and_finished(store, fake, delete=delete)
    store.close()


class Spun(BaseException):
    """A lookup past the bound: an outbox asking in a loop that never yields would not reach a timeout."""


class CountedSlack(SlackAdapter):
    """The real adapter, its lookups counted; past ``bound`` one stops the chat's sender (`Spun`),
    so a test of a spinning outbox fails instead of hanging."""

    def __init__(self, fake: FakeSlack, bound: int) -> None:
        super().__init__(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
        self.lookups, self._bound = 0, bound

    async def find_sent(self, message: Outbound, since: float) -> str | None:
        self.lookups += 1
        if self.lookups > self._bound:
            raise Spun(f"looked {message.idempotency_key} up {self.lookups} times")
        return await super().find_sent(message, since)


@pytest.mark.parametrize("answer", ["found", "not_found", "outage", "stopped"])
async def test_a_card_a_dead_process_left_is_looked_up_once_when_its_final_edit_comes(tmp_path, fake, adapters,
                                                                                       answer):
    """The turn, run again after a restart, finalises a card the dead process was posting (it may
    have gone out): the edit's look-up is made once. Found, the edit finishes the card; not found,
    or not answered (Slack in an outage, or the adapter stopped as the gateway shuts down), the edit
    is dropped and the card stays as it is: asking again would get the same answer, in a loop that
    never yielded while the adapter was stopped, so a SIGTERM never finished."""
    clock = FakeClock()  # both processes' pacing and backoffs pass at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    dead = await adapters()
    first = Outbox(store.outbox, {"slack": dead}, clock=clock)
    ProgressMessage(first, ("slack", "C1", None), "card", turn_id="t1", run_id="r1").publish("⏳ Working…", 0)
    await first.start()
    released = fake.hold("chat.postMessage")
    if answer == "not_found":
        fake.fail_next("chat.postMessage", "internal_error", status=500)  # Slack never takes it
    await fake.wait_for(lambda: fake.calls_to("chat.postMessage"))
    await first.close()  # the process dies with the post in flight
    released.set()
    if answer != "not_found":  # Slack posts it all the same
        await fake.wait_for(lambda: bot_posts(fake))
    await dead.stop()

    slack = CountedSlack(fake, bound=3)
    await slack.start(Sink(), [])
    if answer == "outage":
        fake.fail_next("conversations.history", "service_unavailable", status=503, times=3)
    elif answer == "stopped":
        await slack.stop()
    again = Outbox(store.outbox, {"slack": slack}, clock=clock)
    ProgressMessage(again, ("slack", "C1", None), "card", turn_id="t1", run_id="r2").finish("✓ Done", delete=False)
    await again.start()
    assert await again.flush(timeout=WAIT)
    await again.close()
    await slack.stop()
    assert slack.lookups == 1
    posted = {"found": ["✓ Done"], "not_found": []}.get(answer, ["⏳ Working…"])
    assert [m["text"] for m in bot_posts(fake)] == posted
    assert store.outbox.message("card-final-r2:0").status == ("sent" if answer == "found" else "dropped")
    store.close()


async def test_a_card_a_dead_process_never_tried_to_post_is_withdrawn_without_a_lookup(tmp_path, fake, adapters):
    """The dead process journaled the card but never began to post it (its turn was queued behind
    others): it cannot be in the chat, so the turn, run again, withdraws it for sure, asking Slack nothing."""
    store = GatewayStore(tmp_path / "state.db")
    first = Outbox(store.outbox, {"slack": await adapters()})
    ProgressMessage(first, ("slack", "C1", None), "card", turn_id="t1", run_id="r1").publish("⏳ Working…", 0)
    await first.close()  # the process dies before it tries to post the card
    slack = CountedSlack(fake, bound=0)
    await slack.start(Sink(), [])
    again = Outbox(store.outbox, {"slack": slack})
    ProgressMessage(again, ("slack", "C1", None), "card", turn_id="t1", run_id="r2").finish("✓ Done", delete=False)
    await again.start()
    assert await again.flush(timeout=WAIT)
    await again.close()
    await slack.stop()
    assert slack.lookups == 0 and fake.calls_to("conversations.history") == []
    assert bot_posts(fake) == [] and fake.calls_to("chat.postMessage") == []
    assert store.outbox.message("card:0").status == "dropped"
    assert store.outbox.message("card-final-r2:0") is None  # nothing to finalise
    store.close()


async def answers_whose_posts_failed(tmp_path, fake: FakeSlack, adapters, clock: FakeClock, channels: list[str], *,
                                     posted: bool) -> None:
    """An outbox on the fake clock posts an answer in each of ``channels``, each first post answered
    with a 500 (``posted``: it went out all the same); returns once every answer is counted as sent."""
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=posted, times=len(channels))
    for channel in channels:
        outbox.enqueue("slack", channel, None, f"the answer in {channel}", kind="reply", key=f"t-{channel}")
    sent = lambda: all(store.outbox.message(f"t-{c}:0").status == "sent" for c in channels)  # noqa: E731
    await run_clock_until(fake, clock, sent, timeout=60.0)
    await outbox.close()
    store.close()


async def test_after_an_outage_every_chats_lookup_keeps_to_slacks_limit_and_no_post_is_doubled(
        tmp_path, fake, adapters):
    # Thirty channels' posts went out but their answers were lost, so all thirty looked at once: Slack
    # refused twenty reads, they all asked again at its Retry-After, ten were refused a second time, and
    # those ten were posted a second time. Slack's 50 reads a minute, scaled down to 10 in 10 s.
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock, tiers={"conversations.history": Window(10, 10.0)})
    channels = [f"C{n}" for n in range(30)]
    await answers_whose_posts_failed(tmp_path, fake, adapters, clock, channels, posted=True)
    assert [len(bot_posts(fake, channel)) for channel in channels] == [1] * len(channels)
    assert [r for r in limits.refused if r.method == "conversations.history"] == []
    assert len([c for c in limits.calls if c.method == "conversations.history"]) == len(channels)  # one look each


async def test_the_adapters_own_reads_of_slack_take_turns_with_the_outboxs_lookups(tmp_path, fake, adapters):
    # The placeholders' clean-up at start (and the catch-up) read the same methods as the lookups, and
    # went unpaced beside them: Slack refused reads of both.
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock, tiers={"conversations.history": Window(10, 10.0)})
    adapter = await adapters()
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": adapter}, clock=clock)
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True, times=10)
    for n in range(10):
        outbox.enqueue("slack", f"C{n}", None, "the answer", kind="reply", key=f"t{n}")
    clean_ups = asyncio.ensure_future(asyncio.gather(*(adapter.clear_left_behind(f"D{n}", None) for n in range(10))))
    sent = lambda: all(store.outbox.message(f"t{n}:0").status == "sent" for n in range(10))  # noqa: E731
    await run_clock_until(fake, clock, lambda: sent() and clean_ups.done(), timeout=60.0)
    await clean_ups
    await outbox.close()
    store.close()
    assert [len(bot_posts(fake, f"C{n}")) for n in range(10)] == [1] * 10
    assert [r for r in limits.refused if r.method == "conversations.history"] == []
    assert len([c for c in limits.calls if c.method == "conversations.history"]) == 20


async def test_a_lookup_reading_several_pages_takes_a_turn_for_each(tmp_path, fake, adapters):
    # The outbox counted one read a lookup, but one not found in a busy channel reads up to five pages:
    # four such lookups drew 429s. Slack's 50 reads a minute, scaled down to 10 in 10 s.
    clock = FakeClock(autojump=False)
    limits = fake.enforce_rate_limits(clock, tiers={"conversations.history": Window(10, 10.0)})
    channels = [f"C{n}" for n in range(4)]
    for channel in channels:
        for i in range(450):  # three pages of history to read through
            fake._store(channel, None, {"user": "U1", "text": f"chatter {i}"})
    await answers_whose_posts_failed(tmp_path, fake, adapters, clock, channels, posted=False)
    assert [len(bot_posts(fake, channel)) for channel in channels] == [1] * len(channels)
    assert [r for r in limits.refused if r.method == "conversations.history"] == []
    assert len([c for c in limits.calls if c.method == "conversations.history"]) == 3 * len(channels)


async def test_a_lookup_refused_twice_still_holds_the_other_chats_lookups(tmp_path, fake, adapters):
    # Refused a second time, the part is posted blind, and its refusal held nothing: the next
    # chat's lookup went to Slack inside the Retry-After it had just been given.
    clock = FakeClock(autojump=False)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    fake.fail_next("conversations.history", status=429, retry_after=5, times=2)
    outbox.enqueue("slack", "C0", None, "the answer", kind="reply", key="t0")
    reads: list[float] = []

    async def run_until(done) -> None:
        async with asyncio.timeout(30):
            while not done():
                clock.advance(0.5)
                await asyncio.sleep(0.005)
                reads.extend([clock.time()] * (len(fake.calls_to("conversations.history")) - len(reads)))

    await run_until(lambda: store.outbox.message("t0:0").status == "sent")
    assert len(reads) == 2  # refused twice: posted blind, as documented
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    outbox.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    await run_until(lambda: store.outbox.message("t1:0").status == "sent")
    await outbox.close()
    store.close()
    assert len(reads) == 3 and reads[2] >= reads[1] + 5 - 0.5  # C1's lookup waited the second refusal out
    assert len(bot_posts(fake, "C1")) == 1


async def test_after_a_restart_only_the_parts_the_dead_process_began_to_post_are_looked_up(tmp_path, fake, adapters):
    # Every part journaled before the start was looked up first, though most had never been tried:
    # a backlog across a workspace's channels took a lookup's turn each (one every 1.2 s), N x 1.2 s
    # before it went out. The clock stands still here, so a part waiting for a lookup's turn never goes.
    clock, path = FakeClock(autojump=False), tmp_path / "state.db"
    store = GatewayStore(path, clock=clock)
    dead = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await dead.start()
    released = fake.hold("chat.postMessage")
    dead.enqueue("slack", "C0", None, "in flight", kind="reply", key="t0")
    await fake.wait_for(lambda: fake.calls_to("chat.postMessage"))
    dead.enqueue("slack", "C0", None, "queued behind it", kind="reply", key="t1")
    await dead.close()  # the process dies with the post in flight
    backlog = [f"C{n}" for n in range(1, 11)]
    for channel in backlog:  # and what it journaled as it went down, never tried
        dead.enqueue("slack", channel, None, f"backlog in {channel}", kind="reply", key=f"b-{channel}")
    released.set()  # Slack posts the one in flight all the same
    await fake.wait_for(lambda: bot_posts(fake, "C0"))
    store.close()
    clock.advance(60)

    store = GatewayStore(path, clock=clock)  # the next start, on the same state
    assert [store.outbox.message(k).tried for k in ("t0:0", "t1:0", "b-C1:0")] == [True, False, False]
    outbox = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await outbox.start()
    await fake.wait_for(lambda: all(bot_posts(fake, c) for c in backlog) and store.outbox.message("t0:0").status
                        == "sent")
    assert [c.params["channel"] for c in fake.calls_to("conversations.history")] == ["C0"]
    await run_clock_until(fake, clock, lambda: store.outbox.message("t1:0").status == "sent", timeout=WAIT)
    await outbox.close()
    store.close()
    assert [m["text"] for m in bot_posts(fake, "C0")] == ["in flight", "queued behind it"]  # not doubled
    assert [len(bot_posts(fake, c)) for c in backlog] == [1] * len(backlog)
    assert len(fake.calls_to("conversations.history")) == 1


async def test_a_slash_commands_answer_takes_no_lookups_turn(tmp_path, fake, adapters):
    # Slack keeps no answer to a slash command where a lookup could find it (it goes to the command's
    # response_url, or as an ephemeral message), so find_sent reads nothing for it; it took a lookup's
    # 1.2 s turn all the same, and made another chat's lookup wait for it. The clock stands still here.
    clock, path = FakeClock(autojump=False), tmp_path / "state.db"
    store, lookups = GatewayStore(path, clock=clock), Lookups()
    dead = Outbox(store.outbox, {"slack": await adapters()}, clock=clock)
    await dead.start()
    held = [fake.hold("chat.postEphemeral"), fake.hold("chat.postMessage")]
    fake.fail_next("response_url", "expired_url", status=404)  # answered with chat.postEphemeral instead
    token = json.dumps({"response_url": f"{fake.base_url}/response/R1", "channel": "C1", "user": "U1"})
    dead.enqueue("slack", "C1", None, "the command's answer", kind="command", key="c1", reply_token=token)
    dead.enqueue("slack", "C2", None, "the answer", kind="reply", key="t2")
    await fake.wait_for(lambda: fake.calls_to("chat.postEphemeral") and fake.calls_to("chat.postMessage"))
    await dead.close()  # the process dies with both in flight
    for release in held:
        release.set()
    await fake.wait_for(lambda: bot_posts(fake, "C2"))
    store.close()
    clock.advance(60)

    store = GatewayStore(path, clock=clock)
    outbox = Outbox(store.outbox, {"slack": await adapters()}, clock=clock, events=lookups.events)
    await outbox.start()
    await outbox.wait_sent("c1:0", timeout=WAIT)
    await outbox.wait_sent("t2:0", timeout=WAIT)
    await outbox.close()
    store.close()
    assert lookups.outcomes == ["slack:found"]  # the post's; the answer was sent again, as it cannot be found
    assert len(bot_posts(fake, "C2")) == 1 and len(fake.calls_to("conversations.history")) == 1


async def test_a_late_part_found_to_have_gone_out_gets_no_late_note(tmp_path, fake, adapters):
    # The note went first, then the lookup found the part posted before the crash: the chat read
    # "⏱ Delivered late: what follows was written 1 h ago." with nothing following it.
    path = tmp_path / "state.db"
    store1 = GatewayStore(path)
    outbox1 = Outbox(store1.outbox, {"slack": await adapters()})
    await outbox1.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    outbox1.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    await fake.wait_for(lambda: bot_posts(fake))
    await outbox1.close()  # the process dies before it knows the post went out
    store1.close()

    later = AheadClock(3600.0)  # the gateway was down an hour
    store2 = GatewayStore(path, clock=later)
    outbox2 = Outbox(store2.outbox, {"slack": await adapters()}, clock=later, late_after=600.0)
    await outbox2.start()
    message_id = await outbox2.wait_sent("t1:0", timeout=WAIT)
    await outbox2.close()
    assert [(m["ts"], m["text"]) for m in bot_posts(fake)] == [(message_id, "the answer")]
    assert store2.outbox.message("t1:0:late") is None
    store2.close()


async def test_a_late_part_not_found_goes_out_after_its_late_note(tmp_path, fake, adapters):
    path = tmp_path / "state.db"
    store1 = GatewayStore(path)
    outbox1 = Outbox(store1.outbox, {"slack": await adapters()})
    await outbox1.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500)  # refused: nothing was posted
    outbox1.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    await fake.wait_for(lambda: fake.calls_to("chat.postMessage"))
    await outbox1.close()
    store1.close()

    later = FakeClock(start=time.time() + 3600.0)  # an hour later; the pacing between note and part passes at once
    store2 = GatewayStore(path, clock=later)
    outbox2 = Outbox(store2.outbox, {"slack": await adapters()}, clock=later, late_after=600.0)
    await outbox2.start()
    await outbox2.wait_sent("t1:0", timeout=WAIT)
    await outbox2.close()
    texts = [m["text"] for m in bot_posts(fake)]
    assert len(texts) == 2 and texts[0].startswith("⏱ Delivered late") and texts[1] == "the answer"
    store2.close()


async def test_a_post_given_up_on_while_its_answer_was_lost_is_looked_up_when_the_operator_retries_it(
        tmp_path, fake, adapters):
    """Slack took the post, its answer was lost, and the outage lasted past give_up_after: the part
    failed. The console's Retry looks it up first, back to when it was first journaled, and finds it."""
    clock = FakeClock()  # the backoffs pass at once
    store, lookups = GatewayStore(tmp_path / "state.db", clock=clock), Lookups()
    outbox = Outbox(store.outbox, {"slack": await adapters()}, give_up_after={"slack": 0.1}, events=lookups.events,
                    clock=clock)
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)
    fake.fail_next("conversations.history", "service_unavailable", status=503)  # the lookup at the deadline
    outbox.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    assert await outbox.wait_sent("t1:0", timeout=WAIT) is None
    row = store.outbox.message("t1:0")
    assert row.status == "failed"
    assert outbox.retry(row.id)
    message_id = await outbox.wait_sent("t1:0", timeout=WAIT)
    await outbox.close()
    store.close()
    assert [m["ts"] for m in bot_posts(fake)] == [message_id]
    assert len(fake.calls_to("chat.postMessage")) == 1
    assert lookups.outcomes[-1] == "slack:found"
