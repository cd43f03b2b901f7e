"""The chats an adapter told the gateway the bot can no longer write to, for `platforms.base.LosesChats`.

Each chat is told once, until the bot may write there again (`LostChats.back`: added back, unblocked, unarchived,
or a message of the chat handed over), so the refusals of the parts still queued for the chat are not each one
more stop. What says a chat is lost, and in which words, is the platform's own (`platforms.slack_membership`,
`platforms.telegram_membership`).

A telling in a task of its own (`LostChats.lost`) is the adapter's to finish: a store that refuses it is asked
again, from `RETRY_FIRST` on, until it takes it, the chat is back, or the adapter closes. Back meanwhile, the stop
is not told: it would end the chat's new work. A chat's tellings are told one after another, and a message of the
chat is handed over once the one under way has ended (`LostChats.settled`): a stop taking effect after it would
end the message's turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict

from platforms.base import ChatLost
from platforms.not_recorded import storage_refusal

RETRY_FIRST, RETRY_MAX = 0.5, 5.0
"""Seconds before a stop the store refused is asked again, doubling: as an event it refused is handed over."""
REMEMBERED = 10_000
"""Chats kept as lost, the latest: one forgotten is told again at its next refusal, nothing worse."""


class LostChats:
    """The chats the gateway was told the bot can no longer write to, on ``platform`` (logged under
    ``platforms.<platform>``), each a ``kind`` there ("chat", "channel") in the log's words."""

    def __init__(self, platform: str, kind: str) -> None:
        self._platform, self._kind = platform, kind
        self._log = logging.getLogger(f"platforms.{platform}")
        self._lost: ChatLost | None = None
        self._gone: OrderedDict[str, asyncio.Event] = OrderedDict()
        """Each chat told lost, with a token of that loss, set once the chat is no longer lost by it: a telling still
        asking a refusing store gives up once the chat is back (or lost anew, told by a telling of its own), else
        it would stop the chat's new work."""
        self._telling: set[asyncio.Task[None]] = set()
        self._latest: dict[str, asyncio.Task[None]] = {}
        """Each chat's latest telling under way, which waits for the chat's earlier ones."""

    def bind(self, lost: ChatLost) -> None:
        self._lost = lost

    async def tell(self, chat_id: str, why: str) -> None:
        """Tell the gateway now that the bot can no longer write to ``chat_id``, unless told already. Raises what
        the gateway raises (its store refused the stop): nothing is remembered, the chat is told when asked again."""
        if self._lost is None or chat_id in self._gone:
            return
        # Remembered before it is told: a write refused meanwhile tells nothing more, and a chat back meanwhile
        # (`back`) is not taken for lost again once it is told.
        loss = self._remember(chat_id)
        try:
            await self._lost(chat_id, why)
        except BaseException:
            self._forget(chat_id, loss)
            raise

    def lost(self, chat_id: str, why: str) -> None:
        """Tell the gateway, in a task of its own, that the bot can no longer write to ``chat_id``, unless told
        already: the write refused may be a turn's placeholder or typing, which the stop ends. A store that refuses
        the stop is asked again until it takes it, the bot may write there again (`back`) or `close`; anything else
        it raises is logged, and the chat's next loss told again."""
        if self._lost is None or chat_id in self._gone:
            return
        loss = self._remember(chat_id)  # now: the chat's next parts, refused meanwhile, tell nothing more
        task = asyncio.create_task(self._tell(self._lost, chat_id, why, loss, self._latest.get(chat_id)),
                                   name=f"{self._platform}-chat-lost-{chat_id}")
        self._telling.add(task)
        self._latest[chat_id] = task
        task.add_done_callback(lambda _: self._ended(chat_id, task))

    async def settled(self, chat_id: str) -> None:
        """Wait until the tellings of ``chat_id`` under way (`lost`) have ended: told, given up, or cut off by
        `close`. Call it after `back`, before handing over a message of the chat: a telling asking a refusing
        store again then gives up at once, and one the gateway is taking ends before the message's turn begins."""
        if (task := self._latest.get(chat_id)) is not None:
            await asyncio.wait((task,))

    def back(self, chat_id: str) -> bool:
        """The bot may write to ``chat_id`` again: a later loss is told. Whether it was told lost."""
        if (loss := self._gone.pop(chat_id, None)) is None:
            return False
        loss.set()
        return True

    async def close(self) -> None:
        """Cancel the tellings under way: the gateway is stopping, which stops every chat's work anyway. Their chats
        are not remembered as told: started again, the adapter tells each at its next refusal."""
        for task in list(self._telling):
            task.cancel()
        if self._telling:
            await asyncio.wait(list(self._telling))

    async def _tell(self, lost: ChatLost, chat_id: str, why: str, loss: asyncio.Event,
                    after: asyncio.Task[None] | None) -> None:
        try:
            if after is not None:
                await asyncio.wait((after,))
            await self._until_told(lost, chat_id, why, loss)
        except asyncio.CancelledError:
            self._forget(chat_id, loss)  # closed before the store took it: started again, its next refusal tells it
            raise

    async def _until_told(self, lost: ChatLost, chat_id: str, why: str, loss: asyncio.Event) -> None:
        delay = RETRY_FIRST
        while self._gone.get(chat_id) is loss:
            try:
                await lost(chat_id, why)
                return
            except Exception as exc:
                if not storage_refusal(exc):
                    self._forget(chat_id, loss)  # the chat's next refusal tells it again
                    self._log.exception("%s: could not stop the work of %s %s, which the bot can no longer write to"
                                        " (%s)", self._platform, self._kind, chat_id, why)
                    return
                self._log.log(logging.WARNING if delay == RETRY_FIRST else logging.DEBUG,
                              "%s: the stop of %s %s's work (%s) was not recorded (%s: %s); asking again in %.1f s,"
                              " and until it is", self._platform, self._kind, chat_id, why, type(exc).__name__, exc,
                              delay)
            with contextlib.suppress(TimeoutError):  # the chat back meanwhile ends the wait: nothing more to tell
                await asyncio.wait_for(loss.wait(), delay)
            delay = min(delay * 2, RETRY_MAX)

    def _ended(self, chat_id: str, task: asyncio.Task[None]) -> None:
        self._telling.discard(task)
        if self._latest.get(chat_id) is task:
            del self._latest[chat_id]

    def _remember(self, chat_id: str) -> asyncio.Event:
        self._gone[chat_id] = loss = asyncio.Event()
        self._gone.move_to_end(chat_id)
        while len(self._gone) > REMEMBERED:
            self._gone.popitem(last=False)[1].set()
        return loss

    def _forget(self, chat_id: str, loss: asyncio.Event) -> None:
        """``loss`` of ``chat_id`` was not told: its next refusal tells it, unless the chat was lost anew since."""
        if self._gone.get(chat_id) is loss:
            del self._gone[chat_id]
