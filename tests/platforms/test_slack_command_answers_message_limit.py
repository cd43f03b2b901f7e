"""A slash command's answer and a free workspace's ``message_limit_exceeded``: held, as every channel's posts are,
while the limit holds; one that meets the limit holds the others; and the outbox delivers it once the limit has
passed, never dropped. The real slack-sdk against the loopback FakeSlack, time on a fake clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Inbound, Outbound, RateLimited
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_commands import inbound_of
from tests.platforms.slack_client import clocked_slack, fake_slack

fake = fake_slack()
clock, clocked = clocked_slack()


def command(fake: FakeSlack, channel: str = "C1") -> Inbound:
    return inbound_of("slack", {"channel_id": channel, "user_id": "U1", "command": "/status", "text": "",
                                "trigger_id": "R1.1", "response_url": f"{fake.base_url}/response/R1"})


def answers(fake: FakeSlack) -> list[str]:
    return [e["text"] for e in fake.ephemeral]


async def test_an_answer_waits_while_the_workspaces_message_limit_holds(
        fake: FakeSlack, clocked: SlackAdapter, clock: FakeClock) -> None:
    # Sent at once, it was one more message Slack refused (and counted), the others held meanwhile.
    fake.exceed_message_limit(60.0, clock)
    with pytest.raises(RateLimited):
        await clocked.send(Outbound(chat_id="C2", thread_id=None, text="a post"))
    answer = Outbound(chat_id="C1", thread_id=None, text="all well", kind="command",
                      reply_token=command(fake).reply_token)
    clock.advance(20.0)
    with pytest.raises(RateLimited) as held:
        await clocked.send(answer)
    assert held.value.retry_after == 40.0 and not held.value.called
    assert fake.calls_to("response_url") == [] and fake.calls_to("chat.postEphemeral") == []
    clock.advance(40.0)
    assert (await clocked.send(answer)).message_id.startswith("ephemeral:")
    assert answers(fake) == ["all well"]


async def test_an_answer_meeting_the_limit_holds_every_channels_posts_and_is_delivered_after_it(
        fake: FakeSlack, clocked: SlackAdapter, clock: FakeClock, tmp_path: Path) -> None:
    # The response URL's 429, as Slack sends the limit, with no Retry-After: a minute.
    fake.fail_next("response_url", "message_limit_exceeded", status=429)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": clocked}, clock=clock)
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "all well", kind="command", key="c1",
                       reply_token=command(fake).reply_token)
        await fake.wait_for(lambda: len(fake.calls_to("response_url")) == 1)
        await clock.until_sleeping(lasting=60.0)
        outbox.enqueue("slack", "C2", None, "a post", kind="completion", key="a1")
        await clock.until_sleeping(2, lasting=60.0)  # held without asking Slack
        assert fake.calls_to("chat.postMessage") == [] and answers(fake) == []
        clock.advance(60.0)
        assert await outbox.wait_sent("c1:0", timeout=5.0) and await outbox.wait_sent("a1:0", timeout=5.0)
    finally:
        await outbox.close()
        store.close()
    assert answers(fake) == ["all well"] and fake.texts("C2") == ["a post"]
    assert len(fake.calls_to("response_url")) == 2 and len(fake.calls_to("chat.postMessage")) == 1
