"""The outbox's in-memory state per chat: its queued parts in two lanes, and its long messages' turn.

The store journals every part; these say only in which order a chat's sender takes them (an answer
before a progress message waiting to go) and which of the chat's `Outbox.enqueue_long` calls
journals next. Neither survives a restart, nor needs to: the outbox rebuilds its queues from the
store at start. Apart from `gateway.outbox` because they hold no rule of delivery, only order.
"""

from __future__ import annotations

import asyncio
from collections import deque


class ChatQueue:
    """One chat's queued row ids in two lanes: urgent parts first, then progress parts."""

    __slots__ = ("urgent", "progress", "urgent_arrived")

    def __init__(self) -> None:
        self.urgent: deque[int] = deque()
        self.progress: deque[int] = deque()
        self.urgent_arrived = asyncio.Event()
        """Set when an urgent part is queued: a progress part waiting to go yields to it."""

    def __len__(self) -> int:
        return len(self.urgent) + len(self.progress)

    def push(self, row_id: int, progress: bool) -> None:
        if progress:
            self.progress.append(row_id)
        else:
            self.urgent.append(row_id)
            self.urgent_arrived.set()

    def head(self) -> tuple[int, bool]:
        return (self.urgent[0], False) if self.urgent else (self.progress[0], True)

    def pop(self, progress: bool) -> None:
        (self.progress if progress else self.urgent).popleft()


class SplitTurn:
    """One chat's `enqueue_long` calls, waiting their turn (asyncio's lock is first come, first served)."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0
