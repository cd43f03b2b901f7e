"""The real discord.py client against `FakeDiscord`, for tests: an adapter pointed at the fake, and
the wait for discord.py's heartbeat threads once the adapters have stopped."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from platforms.discord import DiscordAdapter
from platforms.fakes.discord import FakeDiscord


def adapter_for(fake: FakeDiscord, **kw: Any) -> DiscordAdapter:
    return DiscordAdapter(fake.token, api_base=fake.api_base, client_factory=fake.client_factory,
                          ready_timeout=5.0, **kw)


async def join_heartbeat_threads() -> None:
    """discord.py heartbeats from a thread of its own: wait until it has seen its stop flag, so that
    it does not outlive the event loop the test closes."""
    for thread in threading.enumerate():
        if thread.name.startswith("keep-alive-handler"):
            await asyncio.to_thread(thread.join, 5)
