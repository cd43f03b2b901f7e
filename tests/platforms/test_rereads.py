"""The catch-ups' policy for reads that failed (`platforms.rereads`), on its own: which failures are
read again, after what wait, and when it gives up. Slack's and Discord's catch-ups follow it end to
end in tests/platforms/test_slack_rereads.py and test_discord_rereads.py."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from platforms.base import BadRequest, Forbidden, NetworkError, NotFound, RateLimited, Unauthorized
from platforms.connection import TokenWatch
from platforms.rereads import Rereads

log = logging.getLogger("tests.rereads")


def rereads(token: TokenWatch | None = None, *, give_up_in: float = 3600.0, first: float = 0.05,
            most: float = 0.1) -> Rereads:
    return Rereads(token or TokenWatch("fake", "Fake", "fix it"), log, platform="fake",
                   give_up_at=time.time() + give_up_in, clock=time.time, first=first, most=most)


def now() -> float:
    return asyncio.get_running_loop().time()


async def waited(policy: Rereads, since: float | None = None) -> tuple[bool, float]:
    """Whether the turn came, and the seconds since ``since`` (default: now). A wait shown to be at
    least a backoff is measured from before the failure that set it: the backoff runs from then."""
    started = now() if since is None else since
    go = await policy.turn()
    return go, now() - started


@pytest.mark.parametrize("error", [NotFound("gone"), Forbidden("not_in_channel"), BadRequest("invalid_cursor"),
                                   ValueError("a bug")], ids=lambda e: type(e).__name__)
async def test_a_refusal_for_good_is_not_read_again_nor_waited_for(error: Exception) -> None:
    policy = rereads()
    assert not policy.failed("C1", error)
    assert policy.failing == {}
    go, wait = await waited(policy)
    assert go and wait < 0.05


async def test_an_outage_backs_off_doubling_up_to_the_most_and_a_read_ends_it(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="tests.rereads")
    policy = rereads(first=0.05, most=0.1)
    for expected in (0.05, 0.1, 0.1):
        since = now()
        assert policy.failed("C1", NetworkError("internal_error"))
        go, wait = await waited(policy, since)
        assert go and wait >= expected
    assert policy.failing == {"C1": 3}
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.DEBUG, logging.DEBUG]
    policy.read("C1")
    assert caplog.messages[-1] == "fake: catching up on C1: read at last, after 3 failed read(s)"
    assert policy.failed("C2", NetworkError("internal_error"))
    go, wait = await waited(policy)
    assert go and wait < 0.1  # from the first wait again


async def test_reads_that_failed_together_wait_the_first_backoff_not_one_doubled_for_each(
        caplog: pytest.LogCaptureFixture) -> None:
    # Discord's first pass reads five channels at once: in an outage all five failed, and the backoff
    # doubled five times (32 s before the first read again, not 2 s), as if they had gone one after another.
    caplog.set_level(logging.DEBUG, logger="tests.rereads")
    policy = rereads(first=0.05, most=1.0)
    for name in ("C1", "C2", "C3", "C4", "C5"):
        assert policy.failed(name, NetworkError("503"))
    go, wait = await waited(policy)
    assert go and wait < 0.1
    assert all("; reading it again in 0.05 s, and until it is read" in message for message in caplog.messages)
    assert [r.levelno for r in caplog.records] == [logging.WARNING] + 4 * [logging.DEBUG]  # one for the outage
    since = now()
    assert policy.failed("C1", NetworkError("503"))  # a read that went after the wait: twice as long
    go, wait = await waited(policy, since)
    assert go and wait >= 0.1


async def test_a_429_is_waited_out_for_its_retry_after() -> None:
    policy = rereads()
    since = now()
    assert policy.failed("C1", RateLimited("ratelimited", retry_after=0.2))
    go, wait = await waited(policy, since)
    assert go and wait >= 0.2


async def test_a_refused_token_is_waited_for_until_a_call_with_it_succeeds() -> None:
    token = TokenWatch("fake", "Fake", "fix it")
    token.refused("a call answered invalid_auth")
    policy = rereads(token, first=0.0, most=0.0)  # a timed read again would go at once
    assert policy.failed("C1", Unauthorized("invalid_auth"))
    turn = asyncio.ensure_future(policy.turn())
    for _ in range(10):  # loop turns enough to run it to its wait, no time passing: not a timed one
        await asyncio.sleep(0)
    assert not turn.done()
    token.accepted()
    assert await asyncio.wait_for(turn, 1.0)


async def test_a_refusal_the_token_watch_did_not_see_backs_off_instead_of_asking_again_at_once() -> None:
    policy = rereads(first=0.1)
    since = now()
    assert policy.failed("C1", Unauthorized("invalid_auth"))
    go, wait = await waited(policy, since)
    assert go and wait >= 0.1


async def test_it_gives_up_once_what_was_missed_is_too_old_even_while_waiting_for_the_token() -> None:
    token = TokenWatch("fake", "Fake", "fix it")
    token.refused("a call answered invalid_auth")
    policy = rereads(token, give_up_in=0.2)
    assert policy.failed("C1", Unauthorized("invalid_auth"))
    go, wait = await asyncio.wait_for(waited(policy), 1.0)
    assert not go and wait >= 0.15
    assert not await rereads(give_up_in=0.0).turn()


async def test_in_an_outage_one_warning_tells_of_it_and_one_line_counts_the_others_read_at_last(
        caplog: pytest.LogCaptureFixture) -> None:
    # Each conversation whose read failed warned: a thousand warnings in an outage of a thousand.
    caplog.set_level(logging.DEBUG, logger="tests.rereads")
    policy = rereads()
    for name in ("C1", "C2", "C3"):
        assert policy.failed(name, NetworkError("503"))
    assert policy.failed("C4", RateLimited("ratelimited", retry_after=0.0))  # C4's own: warned of still
    assert not policy.failed("C3", NotFound("gone"))  # left for the next start: not counted as read
    for name in ("C2", "C1", "C4"):
        policy.read(name)
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno > logging.DEBUG] == [
        ("WARNING", "fake: catching up on C1: the read failed (NetworkError: 503); reading it again in 0.05 s, and"
                    " until it is read; others failing alike until a read succeeds wait with it (logged at DEBUG)"),
        ("WARNING", "fake: catching up on C4: the read failed (RateLimited: ratelimited); reading it again in 0 s"
                    " (Retry-After), and until it is read"),
        ("INFO", "fake: catching up: 1 more read at last, whose reads failed while Fake was down (each logged at"
                 " DEBUG)"),
        ("INFO", "fake: catching up on C1: read at last, after 1 failed read(s)"),
        ("INFO", "fake: catching up on C4: read at last, after 1 failed read(s)")]
    assert policy.failing == {}
    assert policy.failed("C5", NetworkError("503"))  # a new outage, after a read succeeded: warned of again
    assert caplog.records[-1].levelno == logging.WARNING
