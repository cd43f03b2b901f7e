"""Every request on the Slack adapter's HTTP session is bounded by its ``call_timeout`` (`platforms.slack.CALL_TIMEOUT`,
30 s): slack-sdk applies its own ``timeout`` only to a session it opens, so a Slack that took a call and went silent
held it for aiohttp's 300 s. A call cut off is a `NetworkError`: a post is looked up before it is sent again, and a
slash command's answer is not posted the other way. Real slack-sdk and aiohttp against the loopback FakeSlack, one
method held in flight (``hold``), the bound shrunk."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import NetworkError, Outbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_commands import inbound_of
from tests.gateway.observing import Lookups
from tests.platforms.sink import Sink

BOUND = 1.0
"""The shrunk ``call_timeout``: wide enough for every loopback call a busy machine answers."""
WAIT = 10.0
"""Far past `BOUND`, far short of aiohttp's 300 s."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
def sink() -> Sink:
    return Sink()


@pytest.fixture
async def slack(fake: FakeSlack, sink: Sink) -> AsyncIterator[SlackAdapter]:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base,
                           call_timeout=BOUND)
    await adapter.start(sink, [])
    yield adapter
    await adapter.stop()


def bot_posts(fake: FakeSlack) -> list[dict]:
    return [m for m in fake.messages.get(("C1", None), []) if m.get("bot_id")]


async def test_a_post_slack_went_silent_on_ends_at_the_bound_is_looked_up_and_sent_once(
        tmp_path, fake: FakeSlack, sink: Sink, slack: SlackAdapter) -> None:
    clock = FakeClock(autojump=False)  # the retry waits until Slack has posted the held call
    store, lookups = GatewayStore(tmp_path / "state.db", clock=clock), Lookups()
    outbox = Outbox(store.outbox, {"slack": slack}, events=lookups.events, clock=clock)
    await outbox.start()
    held = fake.hold("chat.postMessage")
    loop = asyncio.get_running_loop()
    try:
        outbox.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
        await fake.wait_for(lambda: fake.calls_to("chat.postMessage"))
        began = loop.time()
        await clock.until_sleeping(timeout=WAIT)  # the outbox backs off: the call has ended
        assert BOUND * 0.9 <= loop.time() - began < WAIT
        row = store.outbox.message("t1:0")
        assert row is not None and row.status == "pending" and "TimeoutError" in (row.last_error or "")
        held.set()  # Slack took the post after all: its answer is what the call gave up on
        await fake.wait_for(lambda: bot_posts(fake))
        sending = asyncio.ensure_future(outbox.wait_sent("t1:0", timeout=WAIT))
        while not sending.done():
            clock.advance(1.0)
            await asyncio.sleep(0.005)
        message_id = await sending
        # Socket Mode's WebSocket, open all along and idle past the bound, is not cut by it.
        await fake.push_dm("U1", "still there?")
        await fake.wait_for(lambda: sink.inbound)
    finally:
        held.set()
        await outbox.close()
        store.close()
    assert [m["ts"] for m in bot_posts(fake)] == [message_id]
    assert len(fake.calls_to("chat.postMessage")) == 1 and lookups.outcomes == ["slack:found"]
    assert [i.text for i in sink.inbound] == ["still there?"] and len(fake.connections) == 1


async def test_an_edit_slack_went_silent_on_is_a_network_error_at_the_bound(fake: FakeSlack,
                                                                          slack: SlackAdapter) -> None:
    sent = await slack.send(Outbound("C1", None, "draft"))
    held = fake.hold("chat.update")
    try:
        async with asyncio.timeout(WAIT):
            with pytest.raises(NetworkError, match="chat.update"):
                await slack.edit("C1", None, sent.message_id, "final")
    finally:
        held.set()


async def test_a_command_answer_slack_went_silent_on_is_not_posted_the_other_way(fake: FakeSlack,
                                                                               slack: SlackAdapter) -> None:
    """No answer from the ``response_url`` says nothing of whether it was shown: tried again through the URL by the
    outbox, not posted at once with ``chat.postEphemeral`` (docs/platforms/slack.md)."""
    inbound = inbound_of("slack", {"channel_id": "C1", "user_id": "U1", "command": "/stop", "text": "",
                                   "trigger_id": "R1.1", "response_url": f"{fake.base_url}/response/R1"})
    held = fake.hold("response_url")
    try:
        async with asyncio.timeout(WAIT):
            with pytest.raises(NetworkError, match="response_url"):
                await slack.send(Outbound("C1", None, "stopped", kind="command", reply_token=inbound.reply_token))
    finally:
        held.set()
    assert fake.calls_to("chat.postEphemeral") == []
