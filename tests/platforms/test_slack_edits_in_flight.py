"""An edit Slack sends again while a later edit of the same message is still being handed over is passed over
(`platforms.slack_edits.LatestEdits`): the gateway applies edits in the order they reach it, so handed over
third it would undo the later one. Slack sends an edit again when its answer was slow (a store slow to commit),
which is when the later one is slow too. The real slack-bolt client over Socket Mode against `FakeSlack`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink
from tests.platforms.slack_client import fake_slack, slack_on

fake = fake_slack()


class SlowEdits:
    """The gateway's `MessageEdits.edited` whose commit waits until ``done`` is set: records each edit's text."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.done = asyncio.Event()

    async def __call__(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        self.texts.append(text)
        await self.done.wait()
        return True


@pytest.fixture
async def edits(fake: FakeSlack) -> AsyncIterator[tuple[SlackAdapter, Sink, SlowEdits]]:
    adapter, sink, edits = slack_on(fake), Sink(), SlowEdits()
    adapter.bind_edits(edits)
    await adapter.start(sink, [])
    yield adapter, sink, edits
    edits.done.set()
    await adapter.stop()


async def test_an_earlier_edit_sent_again_while_a_later_one_is_handed_over_is_passed_over(fake, edits) -> None:
    _, sink, slow = edits
    prod = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
    await fake.wait_for(lambda: sink.inbound)
    staging = await fake.push_edit("DU1", prod, "deploy to staging")
    await fake.wait_for(lambda: slow.texts == ["deploy to staging"])
    await fake.push_edit("DU1", prod, "deploy to dev")
    await fake.wait_for(lambda: slow.texts == ["deploy to staging", "deploy to dev"])
    again = await fake.push_event(staging["event"])  # its answer is late: Slack sends it again
    [envelope] = [e for e in fake.envelopes.values() if e.payload["event_id"] == again["event_id"]]
    await fake.wait_for(lambda: len(slow.texts) == 3 or envelope.acked)
    slow.done.set()
    await fake.wait_for(lambda: all(e.acked for e in fake.envelopes.values()))
    assert slow.texts == ["deploy to staging", "deploy to dev"]
