"""The "working" indicators a turn left in its chat (Slack's placeholder is a message), cleared at start.

A process that died mid-turn, or a turn that ended while the platform refused the bot's token,
can leave a chat reading "working" for good. The adapter records a chat it could not clear
(`LeavesIndicators`); at start, that chat and every chat a turn may have run in are cleared in the
background. It stands apart from `gateway.app`: it is one clean-up of the start, with its own
bookkeeping in the store (`gateway.store.indicators_left`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from gateway.sessions import ChatKey
from gateway.store import GatewayStore
from platforms.base import Adapter, LeavesIndicators

log = logging.getLogger("gateway.app")  # the gateway's start-up lines, wherever they are written from


class LeftIndicators:
    def __init__(self, store: GatewayStore, adapters: Mapping[str, Adapter]) -> None:
        self._store, self._adapters = store, adapters

    def left(self, platform: str, chat_id: str, thread_id: str | None) -> None:
        """The adapter could not remove its indicator there: the next start clears it."""
        try:
            self._store.indicators_left.record(platform, chat_id, thread_id)
        except Exception:  # the adapter's deletion must go on; at worst the indicator stays, as before
            log.exception("could not record that %s chat %s still shows a working indicator", platform, chat_id)

    def clear(self, chats: set[ChatKey], *, recorded: set[ChatKey]) -> list[asyncio.Future[None]]:
        """A turn may have run in these chats when the last process died (an event to replay, a
        delivery still due), or ended unable to remove its indicator (the platform refused the
        token: its replies still pending, or the chat ``recorded`` by the adapter): the "working"
        indicators it showed as messages go, in the background (the tasks returned)."""
        tasks: list[asyncio.Future[None]] = []
        for chat in chats:
            adapter = self._adapters.get(chat[0])
            if isinstance(adapter, LeavesIndicators):
                tasks.append(asyncio.ensure_future(self._clear(adapter, chat, chat in recorded)))
        return tasks

    async def _clear(self, adapter: LeavesIndicators, chat: ChatKey, recorded: bool) -> None:
        platform, chat_id, thread_id = chat
        await adapter.clear_left_behind(chat_id, thread_id)
        if not recorded:
            return
        try:  # only now: a stop or a crash before the clean-up leaves the chat to the next start
            self._store.indicators_left.cleared(platform, chat_id, thread_id)
        except Exception:  # at worst the next start looks there again, finding nothing
            log.exception("could not forget %s chat %s, whose working indicators are gone", platform, chat_id)
