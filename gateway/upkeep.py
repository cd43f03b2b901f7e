"""Periodic upkeep: forget old inbox and outbox rows, and let idle sessions leave memory.

Sessions live in the store; one that has been idle for a while (no turn running,
nothing queued, no child still working for it) is dropped from memory and loaded
again when its chat next speaks.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from gateway.store import INBOX_RETENTION, OUTBOX_RETENTION

if TYPE_CHECKING:
    from gateway.core import Gateway

log = logging.getLogger("gateway.upkeep")

INTERVAL_SECONDS = 300.0
IDLE_SESSION_SECONDS = 3600.0


def sweep(gateway: Gateway, *, idle_after: float = IDLE_SESSION_SECONDS) -> tuple[int, int, int]:
    """One round; returns (inbox rows, outbox rows, sessions) forgotten."""
    now = gateway.clock.time()
    inbox = gateway.store.prune_inbox(now - INBOX_RETENTION)
    outbox = gateway.store.prune_outbox(now - OUTBOX_RETENTION)
    evicted = 0
    for key, session in list(gateway.sessions.items()):
        busy = session.running is not None or session.queue
        children = gateway.runtime.lifecycle.host_view().children(session.session_id)
        if busy or children or now - session.last_active < idle_after:
            continue
        if session.worker is not None:
            session.worker.cancel()
        del gateway.sessions[key]
        gateway.forget_agent(session.session_id)
        evicted += 1
    if inbox or outbox or evicted:
        log.info("upkeep: forgot %d inbox rows, %d outbox rows, %d idle sessions", inbox, outbox, evicted)
    return inbox, outbox, evicted


async def run_forever(gateway: Gateway, interval: float = INTERVAL_SECONDS) -> None:
    while True:
        await asyncio.sleep(interval)
        try:
            sweep(gateway)
        except Exception:
            log.exception("upkeep failed")
