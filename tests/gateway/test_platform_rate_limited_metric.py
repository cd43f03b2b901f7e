"""Every 429 a platform answers is told to the gateway's events (`GatewayEvents.rate_limited`), which
``switchboard_platform_rate_limited_total`` counts: also a lookup's second refusal, after which the
part is sent without it, and a user's file download. The real SlackAdapter against the loopback FakeSlack."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agent.settings import ModelSettings
from agent.testing import FakeClock
from gateway.attachments import RETRY_WAIT_MAX, turn_input
from gateway.events import GatewayEvents
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import Inbound
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter

WAIT = 5.0


class Limits:
    """Records the 429s told to the events, as the metrics see them."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, float]] = []
        self.events = GatewayEvents()
        self.events.subscribe(self)

    def rate_limited(self, platform: str, retry_after: float) -> None:
        self.seen.append((platform, retry_after))


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def slack(fake: FakeSlack) -> AsyncIterator[tuple[SlackAdapter, asyncio.Queue[Inbound]]]:
    """A started SlackAdapter on the fake, and the events it hands over."""
    inbound: asyncio.Queue[Inbound] = asyncio.Queue()

    async def handle(event: Inbound) -> None:
        inbound.put_nowait(event)

    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    await adapter.start(handle, [])
    yield adapter, inbound
    await adapter.stop()


async def test_a_lookup_refused_twice_counts_both_429s(tmp_path, fake, slack) -> None:
    clock = FakeClock()  # the backoff and the wait pass at once
    store, limits = GatewayStore(tmp_path / "state.db", clock=clock), Limits()
    outbox = Outbox(store.outbox, {"slack": slack[0]}, events=limits.events, clock=clock)
    await outbox.start()
    fake.fail_next("chat.postMessage", "internal_error", status=500, after=True)  # posted; the answer is lost
    fake.fail_next("conversations.history", status=429, retry_after=0.2, times=2)
    outbox.enqueue("slack", "C1", None, "the answer", kind="reply", key="t1")
    await outbox.wait_sent("t1:0", timeout=WAIT)
    await outbox.close()
    store.close()
    assert len(fake.calls_to("conversations.history")) == 2 and len(fake.calls_to("chat.postMessage")) == 2
    assert limits.seen == [("slack", 0.2), ("slack", 0.2)]


@pytest.mark.parametrize("retry_after", [0.05, RETRY_WAIT_MAX + 1], ids=["waited_out", "too_long_to_wait"])
async def test_a_download_slack_rate_limits_is_counted(tmp_path, fake, slack, retry_after) -> None:
    adapter, inbound = slack
    fake.fail_next("files.info", status=429, retry_after=retry_after)
    await fake.push_file("DU1", "U1", b"a,b\n", "data.csv", mimetype="text/csv", text="read it")
    event = await asyncio.wait_for(inbound.get(), WAIT)
    limits, told = Limits(), []
    await turn_input(event.text, event, adapter, workspace=tmp_path, folder="slack/DU1", supports_vision=False,
                     model=ModelSettings(), tell=told.append, clock=FakeClock(), events=limits.events)
    assert limits.seen == [("slack", retry_after)]
    assert len(fake.calls_to("files.info")) == (2 if retry_after < RETRY_WAIT_MAX else 1)
