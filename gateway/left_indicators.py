"""The "working" indicators a turn left in its chat (Slack's placeholder is a message), cleared at start.

A process that died mid-turn, or a turn that ended while the platform refused the bot's token,
can leave a chat reading "working" for good. The adapter records a chat it could not clear
(`LeavesIndicators`); at start, that chat and every chat a turn may have run in are cleared in the
background. It stands apart from `gateway.app`: it is one clean-up of the start, with its own
bookkeeping in the store (`gateway.store.indicators_left`). A chat the store refuses to record (a full
disk) is kept in memory and written once the store takes it, tried again at waits that double (`RETRY`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from gateway.sessions import ChatKey
from gateway.store import GatewayStore
from platforms.base import Adapter, IndicatorLeft, LeavesIndicators

log = logging.getLogger("gateway.app")  # the gateway's start-up lines, wherever they are written from

RETRY = (0.5, 30.0)
"""Seconds before a record the store refused is first written again, and the most between two tries."""


class LeftIndicators:
    def __init__(self, store: GatewayStore, adapters: Mapping[str, Adapter]) -> None:
        self._store, self._adapters = store, adapters
        self._unrecorded: dict[ChatKey, None] = {}  # an ordered set
        """Chats the store refused to record (a full disk), written again until it takes them: dropped,
        they were looked in by no start, and a stop or a crash left their indicators for good."""
        self._retry, self._wait = RETRY, RETRY[0]
        self._timer: asyncio.TimerHandle | None = None
        self._clearing: set[ChatKey] = set()
        """Chats this start's clean-up has yet to finish: a turn's placeholder deleted there meanwhile does not
        make the chat forgotten, as one an earlier process left may still be there."""

    def left(self, platform: str, chat_id: str, thread_id: str | None) -> None:
        """The adapter shows its indicator there, or could not remove it: the next start clears it."""
        self._unrecorded[(platform, chat_id, thread_id)] = None
        if self._timer is None:  # else a refusal is being waited out: this one is written with the rest
            self._record()

    def told(self, platform: str) -> IndicatorLeft:
        """The adapter's `LeavesIndicators.bind_indicators_left` callback, with its ``gone``."""
        return _Told(self, platform)

    def gone(self, platform: str, chat_id: str, thread_id: str | None) -> None:
        """The adapter removed what it showed there. Never raises: kept, the next start only looks again."""
        if (platform, chat_id, thread_id) in self._clearing:
            return
        self._unrecorded.pop((platform, chat_id, thread_id), None)
        if self._store.db.closed:
            return
        try:
            self._store.indicators_left.forget(platform, chat_id, thread_id)
        except Exception as exc:
            log.warning("could not forget %s chat %s, whose working indicator is gone (%s: %s)",
                        platform, chat_id, type(exc).__name__, exc)

    def _record(self) -> None:
        """Never raises: the adapter's deletion must go on."""
        self._timer = None
        for chat in list(self._unrecorded):
            try:
                self._store.indicators_left.record(*chat)
            except Exception as exc:
                self._refused(chat, exc)
                return
            del self._unrecorded[chat]
        if self._wait != self._retry[0]:
            log.info("recorded the chats still showing a working indicator that the state database had refused")
        self._wait = self._retry[0]

    def _refused(self, chat: ChatKey, exc: Exception) -> None:
        platform, chat_id, _ = chat
        if self._store.db.closed:
            log.error("could not record that %s chat %s (and %d more) still shows a working indicator before "
                      "the state database closed: it stays there", platform, chat_id, len(self._unrecorded) - 1)
            return
        if self._wait == self._retry[0]:  # once a refusal, not at every try
            log.error("could not record that %s chat %s still shows a working indicator (%s: %s); kept, and "
                      "written once the state database takes it", platform, chat_id, type(exc).__name__, exc)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop to try on: the next indicator left writes it
        self._timer = loop.call_later(self._wait, self._record)
        self._wait = min(self._wait * 2, self._retry[1])

    def clear(self, chats: set[ChatKey], *, recorded: set[ChatKey]) -> list[asyncio.Future[None]]:
        """A turn may have run in these chats when the last process died (an event to replay, a
        delivery still due), or ended unable to remove its indicator (the platform refused the
        token: its replies still pending, or the chat ``recorded`` by the adapter): the "working"
        indicators it showed as messages go, in the background (the tasks returned)."""
        tasks: list[asyncio.Future[None]] = []
        for chat in chats:
            adapter = self._adapters.get(chat[0])
            if isinstance(adapter, LeavesIndicators):
                self._clearing.add(chat)
                tasks.append(asyncio.ensure_future(self._clear(adapter, chat, chat in recorded)))
        return tasks

    async def _clear(self, adapter: LeavesIndicators, chat: ChatKey, recorded: bool) -> None:
        platform, chat_id, thread_id = chat
        try:
            await adapter.clear_left_behind(chat_id, thread_id)
        finally:
            self._clearing.discard(chat)
        if not recorded:
            return
        try:  # only now: a stop or a crash before the clean-up leaves the chat to the next start
            self._store.indicators_left.cleared(platform, chat_id, thread_id)
        except Exception:  # at worst the next start looks there again, finding nothing
            log.exception("could not forget %s chat %s, whose working indicators are gone", platform, chat_id)


class _Told:
    def __init__(self, indicators: LeftIndicators, platform: str) -> None:
        self._indicators, self._platform = indicators, platform

    def __call__(self, chat_id: str, thread_id: str | None) -> None:
        self._indicators.left(self._platform, chat_id, thread_id)

    def gone(self, chat_id: str, thread_id: str | None) -> None:
        self._indicators.gone(self._platform, chat_id, thread_id)
