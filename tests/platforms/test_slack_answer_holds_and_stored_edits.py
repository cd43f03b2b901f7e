"""Edges of two records the Slack adapter keeps between calls: a slash command's ``response_url`` refused with a 429
that is not the workspace's message limit holds only its own channel (`platforms.slack_message_limit.MessageLimit`
holds every channel's posts for ``message_limit_exceeded`` alone); and a message's latest edit kept in the gateway's
store (`platforms.slack_edits.LatestEdits`) that no longer reads as a ``ts`` passes no edit over, and is replaced by
the next edit handed over. The real slack-sdk and slack-bolt against the loopback FakeSlack."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.store import GatewayStore
from platforms.base import Outbound, RateLimited
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits
from platforms.slack_commands import inbound_of
from platforms.slack_edits import edit_key
from platforms.slack_errors import MessageLimitExceeded
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on

DM = "DU1"  # the fake's DM channel with user U1

fake = fake_slack()


@pytest.fixture
async def adapter(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    adapter = slack_on(fake)
    await adapter.start(Sink())
    yield adapter
    await adapter.stop()


@pytest.mark.parametrize("error", ["ratelimited", ""])
async def test_a_429_on_a_response_url_that_is_not_the_message_limit_holds_no_other_channel(
        fake: FakeSlack, adapter: SlackAdapter, error: str) -> None:
    fake.fail_next("response_url", error, status=429, retry_after=30)
    token = inbound_of("slack", {"channel_id": "C1", "user_id": "U1", "command": "/status", "text": "",
                                 "trigger_id": "R1.1", "response_url": f"{fake.base_url}/response/R1"}).reply_token
    with pytest.raises(RateLimited) as refused:
        await adapter.send(Outbound(chat_id="C1", thread_id=None, text="all well", kind="command", reply_token=token))
    assert not isinstance(refused.value, MessageLimitExceeded) and refused.value.retry_after == 30
    await adapter.send(Outbound(chat_id="C2", thread_id=None, text="a post"))
    assert fake.texts("C2") == ["a post"]


class Edits:
    """The gateway's `MessageEdits.edited`: records each edit's text."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        self.texts.append(text)
        return True


async def test_a_stored_latest_edit_that_is_no_ts_passes_no_edit_over_and_is_replaced(
        fake: FakeSlack, tmp_path: Path) -> None:
    store, sink, edits = GatewayStore(tmp_path / "state.db"), Sink(), Edits()
    adapter = slack_on(fake, catch_up=Limits(pace=0.0))
    adapter.bind_last_seen(store.last_seen.of("slack"), functools.partial(store.last_seen.record, "slack"),
                           functools.partial(store.last_seen.at, "slack"))
    adapter.bind_edits(edits)
    await adapter.start(sink, [])
    try:
        ts = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
        await fake.wait_for(lambda: sink.inbound)
        store.last_seen.record("slack", edit_key(DM, ts), "not a ts")  # a hand-edited or damaged row
        await fake.push_edit(DM, ts, "deploy to staging")
        await fake.wait_for(lambda: edits.texts)
        stored = store.last_seen.at("slack", edit_key(DM, ts))
    finally:
        await adapter.stop()
        store.close()
    assert edits.texts == ["deploy to staging"]
    assert stored == fake.messages[(DM, None)][-1]["edited"]["ts"]
