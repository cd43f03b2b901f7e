"""Where the completion turns a start takes up were in their chats' queues when the last process ended
(`gateway.ledger.Ledger.places`): a turn that was running goes ahead of every replayed event of its chat, a queued one
before the first event that came after it was queued, so the messages that came after the results are answered after
them, as they would have been without the restart."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.store.delegations import DelegationRow

RUNNING = -1
"""The place of a completion turn that was running (`gateway.ledger.Ledger.places`): ahead of every event of its
chat."""


class QueuePlaces:
    """The completion turns a start takes up where they were in their chats' queues (`gateway.ledger.Ledger.places`),
    by chat, in the order they were queued, each with its place (an `Inbox.arrival`, or `RUNNING`)."""

    def __init__(self, chats: dict[str, list[tuple[int, DelegationRow]]]) -> None:
        self._chats = chats

    def __contains__(self, key: str) -> bool:
        return key in self._chats

    def before(self, key: str, arrival: int | None) -> list[DelegationRow]:
        """Take the chat's completion turns queued before its event of ``arrival`` (None: forgotten, after those
        that were running)."""
        placed = self._chats.get(key, [])
        n = next((i for i, (place, _) in enumerate(placed) if place >= (arrival or 0)), len(placed))
        taken, placed[:n] = placed[:n], []
        return [row for _, row in taken]

    def rest(self, key: str) -> list[DelegationRow]:
        """Take the chat's completion turns left: queued after its last event replayed, ahead of its new ones."""
        return [row for _, row in self._chats.pop(key, [])]
