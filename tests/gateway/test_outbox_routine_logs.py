"""What the outbox says at INFO of routine events: an operator tailing the log all day reads there what
concerns them. A progress card withdrawn before it reached the chat (its work ended first, the usual fate
of a card a quick delegation or a blip of the platform held back) drops its pending changes: said at DEBUG.
In a chaos soak that line was a third of the gateway's INFO lines after start-up, each naming two outbox
keys and nothing an operator could act on."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.store import GatewayStore
from platforms.base import RateLimited
from tests.gateway.test_outbox import WAIT, FakeAdapter


@pytest.fixture
async def make(tmp_path) -> AsyncIterator[Callable[[FakeAdapter], Awaitable[Outbox]]]:
    made: list[tuple[Outbox, GatewayStore]] = []

    async def make(adapter: FakeAdapter) -> Outbox:
        state = GatewayStore(tmp_path / "state.db", clock=adapter.clock)
        outbox = Outbox(state.outbox, {adapter.name: adapter}, clock=adapter.clock, rng=random.Random(7))
        made.append((outbox, state))
        await outbox.start()
        return outbox

    yield make
    for outbox, state in made:
        await outbox.close()
        state.close()


async def test_the_final_change_of_a_card_that_never_went_out_is_dropped_without_an_info_line(make, caplog):
    adapter = FakeAdapter(clock=FakeClock())
    adapter.gate.clear()
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "⏳ Working", kind="notice", key="card")
    await adapter.until(lambda: len(adapter.calls) == 1)  # the card's send is under way...
    adapter.fail_next(RateLimited("429", retry_after=5))  # ...and refused for now
    assert not outbox.withdraw("fake", "c1", None, "card:0")
    outbox.enqueue_edit("fake", "c1", None, "card:0", "✓ Done", key="final")
    outbox.enqueue("fake", "c1", None, "the answer", kind="reply", key="r")
    with caplog.at_level(logging.DEBUG, logger="gateway"):
        adapter.gate.set()
        assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == ["the answer"]
    dropped = [r for r in caplog.records if "final:0 dropped" in r.getMessage()]
    assert [(r.levelno, r.getMessage()) for r in dropped] == [
        (logging.DEBUG, "outbox: fake chat c1: final:0 dropped: card:0 never went out")]
