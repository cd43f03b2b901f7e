"""What the outbox logs while a platform fails for every chat at once (down, 5xx, a rate limit): one line
when its parts begin to be retried and one when it sends again, not a line per part and try."""

from __future__ import annotations

import logging
import re

from platforms.base import NetworkError, RateLimited
from tests.gateway.test_outbox import FakeAdapter, clock, make, sent, store  # noqa: F401 (fixtures)

CHATS = ("a", "b", "c", "d")


async def send_through(make, clock, caplog, *failures: BaseException) -> list[str]:  # noqa: F811
    """Each chat's answer sent while the platform fails ``failures`` (any chat's calls); the INFO lines."""
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter, give_up_after={"fake": 3600.0})
    adapter.fail_next(*failures)
    with caplog.at_level(logging.DEBUG, logger="gateway.outbox"):
        for chat in CHATS:
            outbox.enqueue("fake", chat, None, f"the answer for {chat}", kind="reply", key=chat)
        for chat in CHATS:
            assert await sent(outbox, f"{chat}:0") is not None
    assert sorted(adapter.texts()) == [f"the answer for {chat}" for chat in CHATS]
    return [r.getMessage() for r in caplog.records if r.name == "gateway.outbox" and r.levelno >= logging.INFO]


async def test_an_outage_is_one_line_when_it_begins_and_one_when_it_ends(make, clock, caplog):  # noqa: F811
    lines = await send_through(make, clock, caplog, *[NetworkError("HTTP 502") for _ in range(12)])
    assert len(lines) == 2, lines
    assert re.fullmatch(r"outbox: fake chat \w: \w:0 NetworkError: HTTP 502; retrying in [\d.]+s \(and the retries"
                        r" of any part of fake at DEBUG until one goes out\)", lines[0])
    assert re.fullmatch(r"outbox: fake sends again after \d+ s of failed calls \(11 more retries meanwhile\)",
                        lines[1])
    retries = [r for r in caplog.records if r.levelno == logging.DEBUG and "retrying in" in r.getMessage()]
    assert len(retries) == 11


async def test_the_next_outage_is_said_again(make, clock, caplog):  # noqa: F811
    adapter = FakeAdapter(clock=clock)
    outbox = await make(adapter, give_up_after={"fake": 3600.0})
    with caplog.at_level(logging.INFO, logger="gateway.outbox"):
        for n in range(2):
            adapter.fail_next(NetworkError("HTTP 502"), NetworkError("HTTP 502"))
            outbox.enqueue("fake", "a", None, f"answer {n}", kind="reply", key=f"k{n}")
            assert await sent(outbox, f"k{n}:0") is not None
    began, ended = "outbox: fake chat a: k{}:0 NetworkError", "outbox: fake sends again"
    lines = [r.getMessage() for r in caplog.records]
    assert [line[:len(start)] for line, start in zip(lines, (began.format(0), ended, began.format(1), ended))] \
        == [began.format(0), ended, began.format(1), ended] and len(lines) == 4, lines


async def test_a_rate_limit_of_every_chat_is_one_line(make, clock, caplog):  # noqa: F811
    lines = await send_through(make, clock, caplog, *[RateLimited("429", retry_after=1) for _ in range(12)])
    assert len(lines) == 1, lines
    assert re.fullmatch(r"outbox: fake chat \w: \w:0 RateLimited: 429; retrying in 1.0s", lines[0])
