"""Waiting in tests for state that nothing announces.

Wait on an event where the code under test gives one: a fake platform's or the fake OpenAI
server's ``wait_for``, `gateway.testing.RecordingAdapter.wait_for`, `FakeClock.until_sleeping`, a
process's log line, a Temporal history read as it is appended. Poll only state that changes
without telling anyone: a lifecycle record's state or activity, a count kept by worker threads,
rows or files another process writes. Then poll with `until`, not with a loop of one's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from platforms.fakes._waiting import wait_until

T = TypeVar("T")


async def until(predicate: Callable[[], T], timeout: float = 10.0, *, every: float = 0.005) -> T:
    """The first truthy ``predicate()``, checked every ``every`` seconds; TimeoutError, naming
    ``timeout``, once ``timeout`` seconds pass without one."""
    return await wait_until(predicate, timeout, poll=every)
