"""What the gateway forgets, and when: old inbox and outbox rows, conversations no message was seen
in for a month, and idle sessions' memory.

Sessions live in the store; one idle for a while (no turn running, nothing queued, no
child still working for it, no turn end owed) leaves memory and is loaded again when its chat
next speaks. Each sweep first records the turn ends that idle sessions owe (`gateway.owed_ends`):
refused by a full disk, they would otherwise wait for their chat's next message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from agent import Clock
from gateway.session_registry import SessionRegistry
from gateway.store import GatewayStore, delegations, inbox, last_seen, outbox_rows
from lifecycle import HostView

log = logging.getLogger("gateway.retention")

INTERVAL_SECONDS = 300.0
IDLE_SESSION_SECONDS = 3600.0


class Retention:
    def __init__(self, store: GatewayStore, registry: SessionRegistry, children: HostView, *, clock: Clock,
                 pay_owed: Callable[[], object], idle_after: float = IDLE_SESSION_SECONDS) -> None:
        """``pay_owed``: records the turn ends idle sessions owe (`gateway.turn_runner.TurnRunner.pay_owed`)."""
        self._store = store
        self._pay_owed = pay_owed
        self._registry = registry
        self._children = children
        self._clock = clock
        self.idle_after = idle_after

    def sweep(self) -> tuple[int, int, int]:
        """One round; returns (inbox rows, outbox rows, sessions) forgotten."""
        self._pay_owed()  # first: what a chat waits for, and a session that owed nothing more may leave memory
        now = self._clock.time()
        pruned_in = self._store.inbox.prune(now - inbox.RETENTION_SECONDS)
        pruned_out = self._store.outbox.prune(now - outbox_rows.RETENTION_SECONDS)
        self._store.delegations.prune(now - delegations.RETENTION_SECONDS)
        self._store.last_seen.prune(now - last_seen.RETENTION_SECONDS)
        evicted = self._registry.evict_idle(self.idle_after, lambda sid: bool(self._children.children(sid)))
        if pruned_in or pruned_out or evicted:
            log.info("retention: forgot %d inbox rows, %d outbox rows, %d idle sessions", pruned_in, pruned_out,
                     evicted)
        return pruned_in, pruned_out, evicted

    async def run_forever(self, interval: float = INTERVAL_SECONDS) -> None:
        while True:
            await self._clock.sleep(interval)
            try:
                self.sweep()
            except Exception:
                log.exception("retention sweep failed")
