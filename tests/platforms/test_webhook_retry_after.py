"""Webhook deliveries honour the receiver's ``Retry-After``, capped by ``delivery.max_retry_after``."""

from __future__ import annotations

import email.utils
import random
from collections.abc import AsyncIterator

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import NetworkError, Outbound, RateLimited
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.webhook import WebhookAdapter

SECRET = "retry-after-secret-0123"
NOW = 1_700_000_000.0


@pytest.fixture
async def receiver() -> AsyncIterator[WebhookReceiver]:
    async with WebhookReceiver(SECRET, clock=lambda: NOW) as receiver:
        yield receiver


@pytest.fixture
async def adapter(receiver: WebhookReceiver) -> AsyncIterator[WebhookAdapter]:
    adapter = WebhookAdapter({"hook": (SECRET, receiver.url)}, clock=lambda: NOW)
    yield adapter
    await adapter.stop()


def message() -> Outbound:
    return Outbound("hook:ops", None, "done", idempotency_key="t1:reply:0", turn_id="t1")


@pytest.mark.parametrize(
    ("status", "header", "wait"),
    [
        (429, 7, 7.0),
        (503, "2.5", 2.5),
        (500, email.utils.formatdate(NOW + 90, usegmt=True), 90.0),  # an HTTP date, read against the clock
        (429, email.utils.formatdate(NOW - 90, usegmt=True), 0.0),  # already past: retry at once
    ],
)
async def test_retry_after_becomes_rate_limited(
    adapter: WebhookAdapter, receiver: WebhookReceiver, status: int, header: float | str, wait: float
) -> None:
    receiver.fail_next(1, status=status, retry_after=header)
    with pytest.raises(RateLimited) as info:
        await adapter.send(message())
    assert info.value.retry_after == pytest.approx(wait)
    assert str(status) in str(info.value) and SECRET not in str(info.value)


@pytest.mark.parametrize(("status", "header"), [(429, None), (500, None), (503, "soon"), (408, 5), (409, 5)])
async def test_without_a_usable_retry_after_it_is_a_network_error(
    adapter: WebhookAdapter, receiver: WebhookReceiver, status: int, header: float | str | None
) -> None:
    receiver.fail_next(1, status=status, retry_after=header)
    with pytest.raises(NetworkError) as info:
        await adapter.send(message())
    assert not isinstance(info.value, RateLimited)


@pytest.mark.parametrize(("asked", "cap", "waited"), [(3, 60.0, 3.0), (600, 5.0, 5.0)])
async def test_the_outbox_waits_what_the_receiver_asked_up_to_the_cap(
    tmp_path, adapter: WebhookAdapter, receiver: WebhookReceiver, asked: int, cap: float, waited: float
) -> None:
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"webhook": adapter}, max_retry_after=cap, clock=clock, rng=random.Random(1))
    await outbox.start()
    try:
        receiver.fail_next(1, status=429, retry_after=asked)
        outbox.enqueue("webhook", "hook:ops", None, "done", kind="reply", key="t1:reply", turn_id="t1")
        assert await outbox.wait_sent("t1:reply:0", timeout=5.0) is not None
    finally:
        await outbox.close()
        store.close()
    assert clock.sleeps == [waited]
    assert [d.status for d in receiver.deliveries] == [429, 200]
