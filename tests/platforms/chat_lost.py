"""The gateway's side of `platforms.base.LosesChats` for adapter tests: `Lost`, what an adapter told it, and
`losing`, an adapter bound to one and started."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TypeVar

from platforms import base
from tests.platforms.sink import Sink
from tests.sqlite_errors import full_disk

Adapter = TypeVar("Adapter", bound=base.Adapter)


class Lost:
    """The gateway's side of `base.LosesChats`: what it was told, and a store that may refuse it (``refuse`` times)."""

    def __init__(self) -> None:
        self.told: list[tuple[str, ...]] = []
        """(chat, why) for a chat, (chat, why, thread) for one thread of it."""
        self.refuse = 0

    async def __call__(self, chat_id: str, why: str, thread_id: str | None = None) -> None:
        if self.refuse:
            self.refuse -= 1
            raise full_disk()
        self.told.append((chat_id, why) if thread_id is None else (chat_id, why, thread_id))


@contextlib.asynccontextmanager
async def losing(adapter: Adapter) -> AsyncIterator[tuple[Adapter, Lost, Sink]]:
    """``adapter`` bound to a `Lost` and started with a `Sink`; stopped at the end."""
    lost, sink = Lost(), Sink()
    assert isinstance(adapter, base.LosesChats)
    adapter.bind_chat_lost(lost)
    await adapter.start(sink)
    try:
        yield adapter, lost, sink
    finally:
        await adapter.stop()
