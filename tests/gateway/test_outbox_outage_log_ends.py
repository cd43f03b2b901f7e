"""An outage the outbox logged ends when a part of the platform goes out, or when none is retried any more (each
given up on, warned of): a later failure, hours on, is said again when it begins, and its end says how long it
lasted, not the hours since the first. It was logged at DEBUG only, its end "after 18021 s of failed calls"."""

from __future__ import annotations

import logging
import re

from platforms.base import NetworkError
from tests.gateway.test_outbox import FakeAdapter, clock, make, sent, store  # noqa: F401 (fixtures)


async def test_an_outage_after_one_given_up_on_is_said_again(make, clock, caplog):  # noqa: F811
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter, give_up_after={"fake": 20.0})
    with caplog.at_level(logging.INFO, logger="gateway.outbox"):
        adapter.fail_next(*[NetworkError("HTTP 404") for _ in range(100)], chat="a")
        outbox.enqueue("fake", "a", None, "to a receiver that is gone", kind="reply", key="a1")
        assert await sent(outbox, "a1:0") is None
        adapter.scripts.clear()
        clock.now += 5 * 3600
        adapter.fail_next(NetworkError("HTTP 502"), NetworkError("HTTP 502"))
        outbox.enqueue("fake", "b", None, "hours later", kind="reply", key="b1")
        assert await sent(outbox, "b1:0") is not None
    lines = [r.getMessage() for r in caplog.records if r.name == "gateway.outbox"]
    assert [line.split(";")[0].split(" after ")[0] for line in lines] == [
        "outbox: fake chat a: a1:0 NetworkError: HTTP 404", "outbox: fake chat a: a1:0 failed",
        "outbox: fake chat b: b1:0 NetworkError: HTTP 502", "outbox: fake sends again"], lines
    assert re.fullmatch(r"outbox: fake sends again after [0-9] s of failed calls \(1 more retries meanwhile\)",
                        lines[-1])
