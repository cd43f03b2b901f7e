"""``switchboard_platform_rate_limited_total`` counts the platform's own answers asking the gateway to slow down,
not the sends an adapter holds back itself while a limit the platform set before still holds (Slack's workspace-wide
``message_limit_exceeded``, `platforms.slack_message_limit.MessageLimit`): those never reached the platform. The real
SlackAdapter against the loopback FakeSlack."""

from __future__ import annotations

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.gateway.test_platform_rate_limited_metric import Limits
from tests.platforms.slack_client import clocked_slack, fake_slack

fake = fake_slack()
clock, clocked = clocked_slack()


def posts(fake: FakeSlack) -> int:
    return len(fake.calls_to("chat.postMessage"))


async def test_posts_held_by_slacks_workspace_message_limit_are_not_counted_as_its_refusals(
        fake: FakeSlack, clocked: SlackAdapter, clock: FakeClock, tmp_path) -> None:
    fake.exceed_message_limit(60.0, clock)
    store, limits = GatewayStore(tmp_path / "state.db"), Limits()
    outbox = Outbox(store.outbox, {"slack": clocked}, events=limits.events, clock=clock)
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "one", kind="completion", key="a1")
        await fake.wait_for(lambda: posts(fake) == 1)
        await clock.until_sleeping(lasting=60.0)
        for n in range(2, 5):  # each in a channel of its own, held without a call
            outbox.enqueue("slack", f"C{n}", None, f"answer {n}", kind="completion", key=f"a{n}")
        await clock.until_sleeping(4, lasting=60.0)
        assert posts(fake) == 1
        clock.advance(60.0)
        for n in range(1, 5):
            assert await outbox.wait_sent(f"a{n}:0", timeout=5.0)
    finally:
        await outbox.close()
        store.close()
    assert limits.seen == [("slack", 60.0)]  # the one answer Slack gave
