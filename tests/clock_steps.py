"""Moving a manual `FakeClock` a step at a time while real SDKs talk to a loopback fake that keeps the
platform's rate limits on that clock.

No fake time passes while a call is on its way to the fake (`arrived`): on a loaded machine a call took
several steps of fake time to reach the fake, and met the limits later than the code under test counted
it (the Slack and Telegram rate-limit scenarios failed so on two CI workers).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from agent.testing import FakeClock

STEP = 0.5
"""Fake seconds the clock moves at a time."""


class CountsCallsInFlight(Protocol):
    """A fake that counts the calls it received and has not answered yet (`FakeSlack`, `FakeTelegram`)."""

    in_flight: int


async def arrived(fake: CountsCallsInFlight) -> None:
    """Return once what the client wrote has reached the fake and the fake has answered every call."""
    while True:
        for _ in range(3):  # what the client wrote is read by the fake's server on this loop
            await asyncio.sleep(0)
        if not fake.in_flight:
            return
        await asyncio.sleep(0.001)


async def run_clock(fake: CountsCallsInFlight, clock: FakeClock, seconds: float, step: float = STEP) -> None:
    """Let ``seconds`` pass on the fake clock, ``step`` at a time, the code under test running between steps,
    and none while a call is on its way to the fake (`arrived`)."""
    for _ in range(round(seconds / step)):
        await arrived(fake)
        clock.advance(step)
        await asyncio.sleep(0.005)


async def run_clock_until(fake: CountsCallsInFlight, clock: FakeClock, done: Callable[[], object],
                          timeout: float = 15.0, step: float = STEP) -> None:
    """`run_clock` a step at a time until ``done()``; TimeoutError after ``timeout`` real seconds."""
    async with asyncio.timeout(timeout):
        while not done():
            await run_clock(fake, clock, step, step)
