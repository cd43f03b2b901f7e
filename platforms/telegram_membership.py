"""The bot's own place in a chat: whether it may still write there, for `platforms.base.LosesChats`.

Telegram says so in a ``my_chat_member`` update: a user who blocks the bot makes its status ``kicked`` in their
private chat, a group that removes it ``left`` or ``kicked`` there (``restricted`` and no longer a member, had it
been restricted); unblocked or added back, it is a member again. A write Telegram refuses as the bot's blocked or
removed says the same when that update never came: sent while the gateway was down for over a day (Telegram keeps
updates 24 h), or before the gateway asked for it. The gateway is told once per chat, until the bot may write
there again (a member once more, or a message of the chat handed over), so the refusals of the parts still queued
for the chat are not each one more stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from aiogram.types import ChatMemberUpdated

from platforms.base import ChatLost, DeliveryError, Forbidden

log = logging.getLogger("platforms.telegram")

GONE = frozenset({"left", "kicked"})
"""The statuses of a bot that is not in the chat (a ``restricted`` one may be too: ``is_member`` says)."""
GONE_WORDS = ("blocked by the user", "kicked from", "not a member", "user is deactivated", "chat was deleted")
"""Telegram's 403 descriptions for a chat the bot cannot write to at all ("Forbidden: bot was kicked from the
supergroup chat"), not those of a right it lacks there."""
REMEMBERED = 10_000
"""Chats kept as lost, the latest: one forgotten is told again at its next refusal, nothing worse."""


def gone(update: ChatMemberUpdated) -> str | None:
    """Why the bot can no longer write to the chat of ``update``, in plain words naming no one; None when it can."""
    member = update.new_chat_member
    if member.status not in GONE and not (member.status == "restricted" and not getattr(member, "is_member", True)):
        return None
    return "the bot was blocked by the user" if update.chat.type == "private" else "the bot was removed from the chat"


class Membership:
    """The chats the gateway was told the bot can no longer write to (`LosesChats`)."""

    def __init__(self) -> None:
        self._lost: ChatLost | None = None
        self._gone: OrderedDict[str, None] = OrderedDict()
        self._telling: set[asyncio.Task[None]] = set()

    def bind(self, lost: ChatLost) -> None:
        self._lost = lost

    async def lost(self, chat_id: str, why: str) -> None:
        """Tell the gateway the bot can no longer write to the chat it knows as ``chat_id``, unless told already.
        Raises what the gateway raises (its store refused the stop): the chat is told again when asked again."""
        if self._lost is None or chat_id in self._gone:
            return
        await self._lost(chat_id, why)
        self._remember(chat_id)

    def refused(self, chat_id: str, error: DeliveryError) -> None:
        """A write to the chat the gateway knows as ``chat_id`` failed with ``error``: one refused as the bot's
        blocked or removed tells the gateway, in a task of its own (the write may be a turn's typing, which the
        stop ends), once."""
        if self._lost is None or chat_id in self._gone or not isinstance(error, Forbidden) \
                or not any(words in str(error) for words in GONE_WORDS):
            return
        self._remember(chat_id)  # now: the chat's next parts, refused meanwhile, tell nothing more
        task = asyncio.create_task(self._tell(self._lost, chat_id, str(error).removeprefix("Forbidden: ")),
                                   name=f"telegram-chat-lost-{chat_id}")
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    def back(self, chat_id: str) -> bool:
        """The bot may write to the chat again (a member again, or its message handed over): a later loss is told.
        Whether it was told lost."""
        if chat_id not in self._gone:
            return False
        del self._gone[chat_id]
        return True

    async def close(self) -> None:
        """Cancel the tellings under way: the gateway is stopping, which stops every chat's work anyway."""
        for task in list(self._telling):
            task.cancel()
        if self._telling:
            await asyncio.wait(list(self._telling))

    async def _tell(self, lost: ChatLost, chat_id: str, why: str) -> None:
        try:
            await lost(chat_id, why)
        except Exception:
            self._gone.pop(chat_id, None)  # the chat's next refusal tells it again
            log.warning("telegram: could not stop the work of chat %s, which the bot can no longer write to (%s)",
                        chat_id, why, exc_info=True)

    def _remember(self, chat_id: str) -> None:
        self._gone[chat_id] = None
        self._gone.move_to_end(chat_id)
        while len(self._gone) > REMEMBERED:
            self._gone.popitem(last=False)
