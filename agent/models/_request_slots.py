"""How many model requests this process has in flight to one server at once (``model.max_concurrent_requests``).

A server that answers a few requests at a time (Ollama's ``OLLAMA_NUM_PARALLEL``, llama.cpp's ``--parallel``,
vLLM under load) keeps the rest waiting on its side, where the wait counts against each request's timeout:
after a long outage every chat's first turn asked at once, and most were told the model failed. Held back
here instead, first come first served, a request's timeout starts only once it is sent.

Slots are shared by every client of one server (its base URL, credentials aside) with the same bound: the
parent's model, ``delegation.model``'s and a route's, on one server, hold that many between them.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agent._clock import Clock
from agent.models._retry_budget import RetryBudget

_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, int], asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary())
"""Per event loop (a semaphore serves one loop), the slots of each (server, bound)."""


class RequestSlots:
    """At most ``bound`` requests at once to ``server``, shared with every `RequestSlots` of the same two."""

    __slots__ = ("_key",)

    def __init__(self, server: str, bound: int) -> None:
        if bound < 1:
            raise ValueError(f"a bound of requests at once must be 1 or more, not {bound}")
        self._key = (server.rstrip("/"), bound)

    @asynccontextmanager
    async def held(self, budget: RetryBudget | None, clock: Clock) -> AsyncIterator[None]:
        """Wait for a slot, first come first served, and hold it for the body.

        Cancelled while waiting, it frees no slot (it held none); the body ending in any way frees the one it
        held. The wait does not count against ``budget`` (a model call's, begun by an earlier request of the
        call: this is a retry): its end is moved on by as long."""
        semaphore = self._semaphore()
        waited_from = clock.monotonic()
        async with semaphore:
            if budget is not None and budget.until is not None:
                budget.until += clock.monotonic() - waited_from
            yield

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        by_server = _SHARED.get(loop)
        if by_server is None:
            by_server = _SHARED[loop] = {}
        semaphore = by_server.get(self._key)
        if semaphore is None:
            semaphore = by_server[self._key] = asyncio.Semaphore(self._key[1])
        return semaphore
