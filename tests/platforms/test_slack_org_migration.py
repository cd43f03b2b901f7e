"""``team_added_to_org``: Slack's answer while the workspace is being moved into an Enterprise organization, when
its Web API is "intermittently unavailable until the transition is complete". It passes: taken for a bad request,
the answer was dropped for good. Real slack-sdk on the loopback FakeSlack."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import NetworkError, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.slack_client import fake_slack, running_slack

fake = fake_slack()
slack = running_slack()


async def test_a_workspace_moving_into_an_org_fails_the_call_for_now(fake: FakeSlack, slack: SlackAdapter) -> None:
    fake.fail_next("chat.postMessage", "team_added_to_org")
    with pytest.raises(NetworkError) as caught:
        await slack.send(Outbound(chat_id="C1", thread_id=None, text="the answer"))
    assert caught.value.method == "chat.postMessage" and caught.value.chat_id == "C1"


async def test_an_answer_refused_while_the_workspace_moves_into_an_org_still_arrives(
        fake: FakeSlack, slack: SlackAdapter, tmp_path) -> None:
    fake.fail_next("chat.postMessage", "team_added_to_org", times=2)
    store = GatewayStore(tmp_path / "state.db")
    outbox = Outbox(store.outbox, {"slack": slack}, clock=FakeClock())
    await outbox.start()
    try:
        outbox.enqueue("slack", "C1", None, "the answer", kind="completion", key="a1")
        assert await outbox.wait_sent("a1:0", timeout=5.0)
    finally:
        await outbox.close()
        store.close()
    assert fake.texts("C1") == ["the answer"] and len(fake.calls_to("chat.postMessage")) == 3
