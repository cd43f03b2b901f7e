"""An adapter's own writes to a chat, outside the outbox, paced as the outbox's are.

Slack's "working" placeholder is a message the adapter posts and deletes itself
(`platforms.pacing.WritesAside`, `WaitsAside`). The platform counts those writes with the
outbox's, so each one is counted against the chat's pace, and waits its turn, on the sender's
`Pacer`; uncounted, the outbox's next call to the chat draws a 429. It stands apart from
`gateway.sender` because nothing in it concerns a journaled part: it is the adapters' side
of the one pacing both share.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from agent import Clock
from gateway.pacing import Pacer, pacing_of
from platforms.base import Adapter
from platforms.pacing import WaitsAside, WritesAside


def bind_aside_writes(adapters: Mapping[str, Adapter], pacer: Pacer, clock: Clock, max_retry_after: float) -> None:
    """Hand each adapter that writes aside the callbacks that count its writes and make them wait."""
    for name, adapter in adapters.items():
        if isinstance(adapter, WritesAside):
            adapter.bind_writes(functools.partial(_wrote_aside, pacer, max_retry_after, name, adapter))
        if isinstance(adapter, WaitsAside):
            adapter.bind_turns(functools.partial(_turn_aside, pacer, clock, name))


def _wrote_aside(pacer: Pacer, max_retry_after: float, platform: str, adapter: Adapter, chat_id: str,
                 op: str | None = None, refused_for: float = 0.0) -> None:
    if op is not None:
        pacer.account_called(platform, pacing_of(adapter, chat_id), op, refused_for=min(refused_for, max_retry_after))
    else:
        pacer.called((platform, chat_id, None), pacing_of(adapter, chat_id))


async def _turn_aside(pacer: Pacer, clock: Clock, platform: str, chat_id: str, op: str | None = None) -> None:
    """Return once an adapter's own progress write to the chat may go (`WaitsAside`): after the
    chat's pace and any 429 holding its progress messages; an ``op`` the platform counts across
    its chats (a deletion), after that count's spacing only. Its caller writes at once, counting
    the write (`WritesAside`), so the outbox's next call waits in turn."""
    if op is not None:
        while (pause := pacer.account_delay(platform, op)) > 0:
            await clock.sleep(pause)
        return
    chat = (platform, chat_id, None)
    while (pause := pacer.delay(chat, progress=True)) > 0:
        await clock.sleep(pause)
