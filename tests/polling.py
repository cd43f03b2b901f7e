"""Waiting in tests for state that nothing announces.

Wait on an event where the code under test gives one: a fake platform's or the fake OpenAI
server's ``wait_for``, `gateway.testing.RecordingAdapter.wait_for`, `FakeClock.until_sleeping`,
`ScriptedModel.reached`, a process's log line, a Temporal history read as it is appended. Poll
only state that changes without telling anyone: a lifecycle record's state or activity, a count
kept by worker threads, what another process keeps (its database, a file, Temporal's view of a
workflow). Then poll with `until`, not with a loop of one's own.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def until(predicate: Callable[[], T | Awaitable[T]], timeout: float = 10.0, *, every: float = 0.005) -> T:
    """The first truthy ``predicate()`` (awaited when it is a coroutine: a query of another
    process), checked every ``every`` seconds; TimeoutError, naming ``timeout``, once ``timeout``
    seconds pass without one."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                value = predicate()
                if inspect.isawaitable(value):
                    value = await value
                if value:
                    return value
                await asyncio.sleep(every)
    except TimeoutError:
        raise TimeoutError(f"condition not met within {timeout}s") from None
