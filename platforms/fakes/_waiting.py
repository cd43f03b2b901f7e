"""Waiting for a condition on a fake, without sleeping and hoping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def wait_until(predicate: Callable[[], T], timeout: float, *,
                     changed: Callable[[], asyncio.Event] | None = None, poll: float = 0.02,
                     describe: Callable[[], str] = lambda: "") -> T:
    """Return the first truthy ``predicate()``, re-checked whenever the fake's current
    ``changed()`` event is set (fakes set it and swap in a fresh one on every change), and
    every ``poll`` seconds for conditions on state kept elsewhere; TimeoutError after
    ``timeout`` seconds, with ``describe()`` appended to help read a failing test."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := predicate()):
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise TimeoutError(f"condition not met within {timeout}s{describe()}")
        if changed is None:
            await asyncio.sleep(min(remaining, poll))
            continue
        try:
            await asyncio.wait_for(changed().wait(), min(remaining, poll))
        except TimeoutError:
            pass
    return value
