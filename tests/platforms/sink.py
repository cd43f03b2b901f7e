"""`Sink`: stands in for the gateway's intake and records what an adapter hands it."""

from __future__ import annotations

from platforms.base import Inbound


class Sink:
    def __init__(self) -> None:
        self.inbound: list[Inbound] = []

    async def __call__(self, inbound: Inbound) -> None:
        self.inbound.append(inbound)
