"""The outbox's outage and rate-limit lines for webhooks: each route posts to its own receiver (its
``deliver_url``), down, up or rate limited apart from the others', so each has its own lines, naming it.
They were kept per platform: one route sending said "webhook sends again" while another route's receiver
was still down, and a second route going down was said at DEBUG only. The rate limit's 10 minutes ran on
the real clock, not the sender's."""

from __future__ import annotations

import logging
import random
import re
from collections.abc import AsyncIterator

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.webhook import WebhookAdapter

WAIT = 5.0
ROUTES = ("a", "b")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(autojump=False)


@pytest.fixture
async def receivers(clock: FakeClock) -> AsyncIterator[dict[str, WebhookReceiver]]:
    made = {route: await WebhookReceiver(f"secret-of-{route}-0123", clock=clock.time).start() for route in ROUTES}
    yield made
    for receiver in made.values():
        await receiver.close()


@pytest.fixture
async def outbox(tmp_path, clock: FakeClock, receivers: dict[str, WebhookReceiver]) -> AsyncIterator[Outbox]:
    adapter = WebhookAdapter({route: (r.secret, r.url) for route, r in receivers.items()}, clock=clock.time)
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    outbox = Outbox(store.outbox, {"webhook": adapter}, clock=clock, rng=random.Random(7))
    await outbox.start()
    yield outbox
    await outbox.close()
    await adapter.stop()
    store.close()


def send(outbox: Outbox, route: str, key: str) -> None:
    outbox.enqueue("webhook", f"{route}:ops", None, f"the answer {key}", kind="reply", key=key)


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "gateway.outbox" and r.levelno >= logging.INFO]


def began(route: str, key: str) -> str:
    return (rf"outbox: webhook chat {route}:ops: {key}:0 NetworkError: .*; retrying in [\d.]+s \(and the retries"
            rf" of any part of webhook route '{route}' at DEBUG until one goes out\)")


def ended(route: str, retries: int) -> str:
    return (rf"outbox: webhook route '{route}' sends again after \d+ s of failed calls"
            rf" \({retries} more retries meanwhile\)")


async def test_a_route_that_sends_does_not_end_the_outage_of_another(outbox, receivers, clock, caplog):
    receivers["a"].fail_next(1000, status=502)
    with caplog.at_level(logging.DEBUG, logger="gateway.outbox"):
        send(outbox, "a", "a1")
        await clock.until_sleeping()  # backing off
        send(outbox, "b", "b1")
        assert await outbox.wait_sent("b1:0", timeout=WAIT) is not None
        clock.advance(60)
        await clock.until_sleeping()  # a's receiver is still down: a's part backs off again
        receivers["a"].heal()
        clock.advance(60)
        assert await outbox.wait_sent("a1:0", timeout=WAIT) is not None
    said = lines(caplog)
    assert len(said) == 2 and re.fullmatch(began("a", "a1"), said[0]) and re.fullmatch(ended("a", 1), said[1]), said


async def test_each_route_going_down_is_said_and_so_is_its_end(outbox, receivers, clock, caplog):
    for receiver in receivers.values():
        receiver.fail_next(1000, status=502)
    with caplog.at_level(logging.INFO, logger="gateway.outbox"):
        send(outbox, "a", "a1")
        send(outbox, "b", "b1")
        await clock.until_sleeping(2)
        for receiver in receivers.values():
            receiver.heal()
        clock.advance(60)
        assert await outbox.wait_sent("a1:0", timeout=WAIT) is not None
        assert await outbox.wait_sent("b1:0", timeout=WAIT) is not None
    said = sorted(lines(caplog))
    assert len(said) == 4, said
    assert [re.fullmatch(pattern, line) is not None for pattern, line in zip(
        (began("a", "a1"), began("b", "b1"), ended("a", 0), ended("b", 0)), said)] == [True] * 4, said


async def test_each_routes_rate_limit_is_said(outbox, receivers, clock, caplog):
    for receiver in receivers.values():
        receiver.fail_next(1, status=429, retry_after=5)
    with caplog.at_level(logging.INFO, logger="gateway.outbox"):
        send(outbox, "a", "a1")
        send(outbox, "b", "b1")
        await clock.until_sleeping(2)
        clock.advance(5)
        assert await outbox.wait_sent("a1:0", timeout=WAIT) is not None
        assert await outbox.wait_sent("b1:0", timeout=WAIT) is not None
    said = sorted(lines(caplog))
    assert len(said) == 2 and all(re.fullmatch(rf"outbox: webhook chat {route}:ops: {route}1:0 RateLimited: .*;"
                                               r" retrying in 5.0s", line) for route, line in zip(ROUTES, said)), said


async def test_a_rate_limit_is_said_again_after_ten_minutes_of_the_senders_clock(outbox, receivers, clock, caplog):
    with caplog.at_level(logging.INFO, logger="gateway.outbox"):
        for n, later in enumerate((0, 0, 600)):
            clock.advance(later)
            receivers["a"].fail_next(1, status=429, retry_after=1)
            send(outbox, "a", f"k{n}")
            await clock.until_sleeping()
            clock.advance(1)
            assert await outbox.wait_sent(f"k{n}:0", timeout=WAIT) is not None
    said = lines(caplog)
    assert len(said) == 2, said
    assert re.fullmatch(r"outbox: webhook chat a:ops: k2:0 RateLimited: .*; retrying in 1.0s \(and 1 more like it in"
                        r" the last 60\d s\)", said[1]), said
