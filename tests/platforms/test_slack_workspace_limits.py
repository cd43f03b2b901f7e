"""Slack's refusals that outlast one call, over the real slack-sdk and the loopback FakeSlack: a free workspace's
``message_limit_exceeded`` (the workspace's, not the channel's), chat.update's ``update_failed`` for one message
again and again, ``org_login_required`` (the workspace moving into an Enterprise organization), and the
placeholders' waits on a ``Retry-After`` (``delivery.max_retry_after`` at most, as the outbox's)."""

from __future__ import annotations

import logging

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms import slack_posts
from platforms.base import EditUnsupported, NetworkError, Outbound, RateLimited
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits
from tests.platforms.sink import Sink
from tests.platforms.slack_client import clocked_slack, fake_slack, running_slack, slack_on
from tests.platforms.test_slack_placeholders_left_behind import PLACEHOLDER, texts

A_DAY = 86400.0

fake = fake_slack()
slack = running_slack()
clock, clocked = clocked_slack()


def posts(fake: FakeSlack) -> int:
    return len(fake.calls_to("chat.postMessage"))


async def test_the_message_limit_met_in_one_channel_holds_every_channels_posts(
        fake: FakeSlack, clocked: SlackAdapter, clock: FakeClock) -> None:
    # Held in its own channel only, each other channel posted to met it anew: a call, and a minute of its own.
    fake.exceed_message_limit(60.0, clock)
    with pytest.raises(RateLimited) as first:
        await clocked.send(Outbound(chat_id="C1", thread_id=None, text="one"))
    assert first.value.retry_after == 60.0
    clock.advance(20.0)
    with pytest.raises(RateLimited) as held:
        await clocked.send(Outbound(chat_id="C2", thread_id=None, text="two"))
    assert held.value.retry_after == 40.0 and held.value.chat_id == "C2" and posts(fake) == 1
    await clocked.typing("C3", None)  # no placeholder either
    assert posts(fake) == 1
    clock.advance(40.0)
    await clocked.send(Outbound(chat_id="C2", thread_id=None, text="two"))
    assert fake.texts("C2") == ["two"] and posts(fake) == 2


async def test_answers_in_two_channels_past_the_message_limit_arrive_after_one_wait(
        fake: FakeSlack, clocked: SlackAdapter, clock: FakeClock, tmp_path) -> None:
    fake.exceed_message_limit(60.0, clock)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": clocked}, clock=clock)
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "one", kind="completion", key="a1")
        await fake.wait_for(lambda: posts(fake) == 1)
        await clock.until_sleeping(lasting=60.0)
        outbox.enqueue("slack", "C2", None, "two", kind="completion", key="a2")
        await clock.until_sleeping(2, lasting=60.0)  # the second waits the limit out too, without a call
        assert posts(fake) == 1
        clock.advance(60.0)
        assert await outbox.wait_sent("a1:0", timeout=5.0) and await outbox.wait_sent("a2:0", timeout=5.0)
    finally:
        await outbox.close()
        store.close()
    assert fake.texts("C1") == ["one"] and fake.texts("C2") == ["two"] and posts(fake) == 3


async def test_a_message_limits_wait_is_held_to_the_cap(fake: FakeSlack, clock: FakeClock) -> None:
    # A proxy's Retry-After of a day held every channel's posts for a day, though the outbox tries each minute.
    adapter = slack_on(fake, monotonic=clock.monotonic, catch_up=Limits(max_retry_after=5.0))
    await adapter.start(Sink())
    try:
        fake.fail_next("chat.postMessage", "message_limit_exceeded", status=429, retry_after=A_DAY)
        with pytest.raises(RateLimited):
            await adapter.send(Outbound(chat_id="C1", thread_id=None, text="one"))
        with pytest.raises(RateLimited) as held:
            await adapter.send(Outbound(chat_id="C2", thread_id=None, text="two"))
        assert held.value.retry_after == 5.0
        clock.advance(5.0)
        await adapter.send(Outbound(chat_id="C2", thread_id=None, text="two"))
    finally:
        await adapter.stop()
    assert fake.texts("C2") == ["two"]


async def test_an_edit_slack_keeps_failing_is_left_after_a_few_tries(
        fake: FakeSlack, slack: SlackAdapter, caplog: pytest.LogCaptureFixture) -> None:
    sent = await slack.send(Outbound(chat_id="C1", thread_id=None, text="⏳ working"))
    fake.fail_next("chat.update", "update_failed", times=slack_posts.EDIT_TRIES + 1)
    for _ in range(slack_posts.EDIT_TRIES - 1):
        with pytest.raises(NetworkError):
            await slack.edit("C1", None, sent.message_id, "✓ done")
    for _ in range(2):  # given up: one the outbox sends anew; later ones are tried once each
        with pytest.raises(EditUnsupported):
            await slack.edit("C1", None, sent.message_id, "✓ done")
    assert len(fake.calls_to("chat.update")) == slack_posts.EDIT_TRIES + 1 and fake.texts("C1") == ["⏳ working"]
    [warned] = [r for r in caplog.records if r.levelno == logging.WARNING and "not edited" in r.getMessage()]
    assert f"Slack failed {slack_posts.EDIT_TRIES} edits of it in a row" in warned.getMessage()
    await slack.edit("C1", None, sent.message_id, "✓ done")  # Slack makes it again: counted anew from here
    assert fake.texts("C1") == ["✓ done"]


async def test_the_outbox_sends_anew_an_edit_slack_keeps_failing(fake: FakeSlack, slack: SlackAdapter,
                                                                   tmp_path) -> None:
    # A progress message's edit was never given up for a failure that passes: tried once a minute while it lived,
    # the message saying "working" meanwhile.
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack}, clock=FakeClock())
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "⏳ working", kind="notice", key="n1")
        assert await outbox.wait_sent("n1:0", timeout=5.0)
        fake.fail_next("chat.update", "update_failed", times=100)
        outbox.enqueue_edit("slack", "C1", None, "n1:0", "✓ done", key="e1")
        assert await outbox.wait_sent("e1:0", timeout=5.0)
    finally:
        await outbox.close()
        store.close()
    assert fake.texts("C1") == ["⏳ working", "✓ done"]
    assert len(fake.calls_to("chat.update")) == slack_posts.EDIT_TRIES


async def test_a_workspace_migrating_into_an_enterprise_org_fails_the_call_for_now(
        fake: FakeSlack, slack: SlackAdapter, tmp_path) -> None:
    # Slack: "The workspace is undergoing an enterprise migration and will not be available until migration is
    # complete". Taken for a bad request, the answer was dropped for good.
    fake.fail_next("chat.postMessage", "org_login_required")
    with pytest.raises(NetworkError):
        await slack.send(Outbound(chat_id="C1", thread_id=None, text="first"))
    fake.fail_next("chat.postMessage", "org_login_required", times=2)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack}, clock=FakeClock())
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "the answer", kind="completion", key="a1")
        assert await outbox.wait_sent("a1:0", timeout=5.0)
    finally:
        await outbox.close()
        store.close()
    assert fake.texts("C1") == ["the answer"]


async def test_a_placeholders_deletion_waits_a_retry_after_for_the_cap_only(fake: FakeSlack) -> None:
    adapter = slack_on(fake, catch_up=Limits(max_retry_after=0.05))
    await adapter.start(Sink())
    try:
        await adapter.typing("C1", None)
        assert texts(fake, "C1") == [PLACEHOLDER]
        fake.fail_next("chat.delete", "ratelimited", status=429, retry_after=A_DAY)
        await adapter.idle("C1", None)
        await fake.wait_for(lambda: not texts(fake, "C1"), timeout=3.0)  # tried again in 0.05 s, not a minute
    finally:
        await adapter.stop()
    assert len(fake.calls_to("chat.delete")) == 2

