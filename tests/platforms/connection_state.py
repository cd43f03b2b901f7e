"""`status`: waits for an adapter's connection state (`platforms.connection`) as a fake platform drives it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from platforms.connection import Connects


class _Fake(Protocol):
    async def wait_for(self, predicate: Callable[[], Any], timeout: float = ...) -> Any: ...


async def status(adapter: Connects, fake: _Fake, want: str, timeout: float = 10.0) -> str | None:
    """Wait until the adapter's connection has status ``want`` (TimeoutError after ``timeout`` s); its reason."""
    await fake.wait_for(lambda: adapter.connection().status == want, timeout)
    return adapter.connection().reason
