"""Slack's answers that refuse a call for now, not for good, over the real slack-sdk and the loopback FakeSlack:
chat.update's ``update_failed`` (an internal failure, worth another try), ``message_limit_exceeded`` (a free
workspace's limit on messages, with a 200 or with a 429 that names no ``Retry-After``), and a ``Retry-After``
that is no wait at all. Beside them, the edits Slack refuses for good, which are sent anew."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import DeliveryError, EditUnsupported, MessageTooLong, NetworkError, Outbound, RateLimited
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, running_slack, slack_on

fake = fake_slack()
slack = running_slack()


@pytest.mark.parametrize(("error", "kind"), [
    ("update_failed", NetworkError),  # "Internal update failed": Slack's, not the edit's
    ("edit_window_closed", EditUnsupported),
    ("cant_update_message", EditUnsupported),
    ("msg_too_long", MessageTooLong),
])
async def test_an_edits_refusals(fake: FakeSlack, slack: SlackAdapter, error: str,
                                 kind: type[DeliveryError]) -> None:
    sent = await slack.send(Outbound(chat_id="C1", thread_id=None, text="⏳ working"))
    fake.fail_next("chat.update", error)
    with pytest.raises(kind) as caught:
        await slack.edit("C1", None, sent.message_id, "✓ done")
    assert caught.value.method == "chat.update" and caught.value.chat_id == "C1"


async def test_an_edit_slack_failed_to_make_is_made_not_sent_anew(fake: FakeSlack, slack: SlackAdapter,
                                                                  tmp_path) -> None:
    # Taken for a bad request, the edit became a new message: the answer twice, the first one never edited.
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack}, clock=FakeClock())
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "⏳ working", kind="notice", key="n1")
        assert await outbox.wait_sent("n1:0", timeout=5.0)
        fake.fail_next("chat.update", "update_failed")
        outbox.enqueue_edit("slack", "C1", None, "n1:0", "✓ done", key="e1")
        assert await outbox.wait_sent("e1:0", timeout=5.0)
    finally:
        await outbox.close()
        store.close()
    assert fake.texts("C1") == ["✓ done"] and len(fake.calls_to("chat.update")) == 2


@pytest.mark.parametrize("status", [200, 429])
async def test_a_workspaces_message_limit_is_a_rate_limit_of_a_minute(fake: FakeSlack, slack: SlackAdapter,
                                                                      status: int) -> None:
    # Slack's 429 names no Retry-After here: a second's wait asked again and again within the limit's minute.
    fake.fail_next("chat.postMessage", "message_limit_exceeded", status=status)
    with pytest.raises(RateLimited) as caught:
        await slack.send(Outbound(chat_id="C1", thread_id=None, text="the answer"))
    assert caught.value.retry_after == 60.0 and caught.value.method == "chat.postMessage"


async def test_an_answer_past_the_workspaces_message_limit_still_arrives(fake: FakeSlack, tmp_path) -> None:
    # Taken for a refusal (BadRequest), the outbox failed the answer for good: the chat never read it.
    fake.fail_next("chat.postMessage", "message_limit_exceeded")
    store = GatewayStore(tmp_path / "state.db")
    clock = FakeClock()
    # The adapter holds the workspace's posts for the limit's minute (`platforms.slack_message_limit`): on the
    # outbox's clock, which waits it out.
    slack = slack_on(fake, monotonic=clock.monotonic)
    await slack.start(Sink())
    outbox = Outbox(store.outbox, {"slack": slack}, clock=clock)
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "the answer", kind="completion", key="a1")
        assert await outbox.wait_sent("a1:0", timeout=5.0)
    finally:
        await outbox.close()
        await slack.stop()
        store.close()
    assert fake.texts("C1") == ["the answer"] and 60.0 in clock.sleeps


@pytest.mark.parametrize("header", [float("nan"), float("inf"), -5.0])
async def test_a_retry_after_that_is_no_wait_is_a_second(fake: FakeSlack, slack: SlackAdapter, header: float) -> None:
    # NaN passed the outbox's cap (min(nan, 60) is nan); infinity held Slack's catch-up reads for good.
    fake.fail_next("chat.postMessage", status=429, retry_after=header)
    with pytest.raises(RateLimited) as caught:
        await slack.send(Outbound(chat_id="C1", thread_id=None, text="x"))
    assert caught.value.retry_after == 1.0
