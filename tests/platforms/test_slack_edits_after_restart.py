"""An older edit of a message that Slack sends the next process (its answer cut off by a stop, lost in a crash, or
retried while the gateway was down) is passed over: the latest edit handed to the gateway, or read back with the
message by the catch-up, is kept in the gateway's store (`platforms.slack_edits.LatestEdits.bind`). Handed over,
the message still waiting for its turn was answered as it read before the later edit. The real slack-bolt client
over Socket Mode against `FakeSlack`, the gateway's real store for the adapter's records."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.store import GatewayStore
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from platforms.slack_catchup import Limits
from tests.platforms.sink import Sink
from tests.platforms.slack_client import slack_on

DM = "DU1"  # the fake's DM channel with user U1


class Edits:
    """The gateway's `MessageEdits.edited`: records each edit's text."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        self.texts.append(text)
        return True


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(give_up_after=0.0) as fake:  # an event no connection was open for is lost
        yield fake


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[GatewayStore]:
    store = GatewayStore(tmp_path / "state.db")
    yield store
    store.close()


async def started(fake: FakeSlack, store: GatewayStore, sink: Sink, edits: Edits) -> SlackAdapter:
    """A process's adapter, bound to the store as the gateway binds it."""
    adapter = slack_on(fake, catch_up=Limits(pace=0.0))
    adapter.bind_last_seen(store.last_seen.of("slack"), functools.partial(store.last_seen.record, "slack"),
                           functools.partial(store.last_seen.at, "slack"))
    adapter.bind_edits(edits)
    await adapter.start(sink, [])
    return adapter


async def stopped(fake: FakeSlack, adapter: SlackAdapter, store: GatewayStore) -> None:
    await store.durable()
    await adapter.stop()
    await fake.wait_for(lambda: not fake.open_connections)


async def sent_again(fake: FakeSlack, payload: dict) -> None:
    """Slack sends an event again (to whichever process is connected), and hears its answer."""
    again = await fake.push_event(payload["event"])
    await fake.wait_for(lambda: all(e.acked for e in fake.envelopes.values()
                                    if e.payload.get("event_id") == again["event_id"]))


async def test_an_earlier_edit_sent_again_after_a_restart_is_passed_over(fake: FakeSlack, store: GatewayStore) -> None:
    sink, first = Sink(), Edits()
    adapter = await started(fake, store, sink, first)
    prod = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
    await fake.wait_for(lambda: sink.inbound)
    staging = await fake.push_edit(DM, prod, "deploy to staging")
    await fake.push_edit(DM, prod, "deploy to dev")
    await fake.wait_for(lambda: first.texts == ["deploy to staging", "deploy to dev"])
    await stopped(fake, adapter, store)
    after = Edits()
    again = await started(fake, store, Sink(), after)
    try:
        await sent_again(fake, staging)
        await fake.push_edit(DM, prod, "deploy to test")  # a later edit still goes
        await fake.wait_for(lambda: after.texts)
    finally:
        await again.stop()
    assert after.texts == ["deploy to test"]
    # The edits kept beside the conversations are no conversation to catch up on.
    assert not [c for c in fake.calls if c.method.startswith("conversations.")
                and str(c.params.get("channel", "")).startswith("edited:")]


async def test_an_earlier_edit_after_the_catch_up_read_the_message_back_is_passed_over(
        fake: FakeSlack, store: GatewayStore) -> None:
    # Said and edited twice while the gateway was down: read back as it reads now, then a retry of the first edit.
    sink = Sink()
    adapter = await started(fake, store, sink, Edits())
    await fake.push_dm("U1", "hello")
    await fake.wait_for(lambda: sink.inbound)
    await stopped(fake, adapter, store)
    prod = (await fake.push_dm("U1", "deploy to prod"))["event"]["ts"]
    staging = await fake.push_edit(DM, prod, "deploy to staging")
    await fake.push_edit(DM, prod, "deploy to dev")
    sink, edits = Sink(), Edits()
    adapter = await started(fake, store, sink, edits)
    try:
        await fake.wait_for(lambda: [i.text for i in sink.inbound] == ["deploy to dev"])
        await sent_again(fake, staging)
    finally:
        await adapter.stop()
    assert edits.texts == []
