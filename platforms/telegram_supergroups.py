"""Groups upgraded to supergroups: where the Telegram adapter's writes for a group go now.

A group upgraded to a supergroup gets a new chat id, and Telegram refuses every write to
the old one ("group chat was upgraded to a supergroup chat", with ``migrate_to_chat_id``)
without doing it. The adapter then remembers the move and makes the call once more in
the supergroup; from then on it sends, shows "typing" and deletes there whatever the
gateway addresses to the old id. A message it sends there has the id
``<supergroup>:<message id>``, so a later edit or deletion finds it. A message written
in the old chat before the upgrade can no longer change: editing or deleting it raises
`EditUnsupported`, and the gateway sends the text anew (into the supergroup). The two
service messages Telegram posts about the upgrade (``migrate_to_chat_id`` in the old
chat, ``migrate_from_chat_id`` in the new) tell the adapter too, usually first. The
supergroup's messages are handed over under the old chat id (`platforms.base.MovesChats`,
`Supergroups.moved_from`), so the conversation goes on in its session; each move is stored by
the gateway before it is used, and handed back at the next start. A webhook may get the
supergroup's first messages before the service messages: they wait for them a while
(`platforms.telegram_moves`).

Apart from the adapter (`platforms.telegram`) because it is a state of its own that every write
consults. Logged under ``platforms.telegram``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from aiogram.types import Message

from platforms.base import ChatMoved, EditUnsupported
from platforms.telegram_errors import GroupUpgraded
from platforms.telegram_moves import UpgradeWait

log = logging.getLogger("platforms.telegram")

T = TypeVar("T")


class Supergroups:
    """The moves this process knows, and ``upgrade_wait``, told of each new one."""

    def __init__(self, upgrade_wait: UpgradeWait) -> None:
        self.upgrade_wait = upgrade_wait
        self._moved_to: dict[str, str] = {}
        """Groups upgraded to supergroups: the old chat id (the gateway's) -> the supergroup's."""
        self.moved_from: dict[str, str] = {}
        """The other way round: a supergroup's chat id -> the gateway's."""
        self._store_move: ChatMoved | None = None

    def bind(self, moves: Mapping[str, str], moved: ChatMoved) -> None:
        """The groups upgraded so far, and where to store the next upgrades (`MovesChats`)."""
        self._moved_to = dict(moves)
        self.moved_from = {new: old for old, new in moves.items()}
        self._store_move = moved

    async def where_it_is_now(self, chat_id: str, call: Callable[[str], Awaitable[T]]) -> tuple[str, T]:
        """``call(chat)`` in the chat ``chat_id`` is now, and that chat. When Telegram answers that
        the group became a supergroup, the move is remembered and the call made once more, in
        the supergroup: the refused call did nothing, so nothing is doubled."""
        chat = self._moved_to.get(chat_id, chat_id)
        try:
            return chat, await call(chat)
        except GroupUpgraded as moved:
            await self.chat_moved(chat_id, moved.to)
            return moved.to, await call(moved.to)

    async def unmoved(self, method: str, chat_id: str, call: Awaitable[T]) -> T:
        """``call`` on a message in ``chat_id`` (a deletion): if Telegram answers that the group
        became a supergroup, the move is remembered and `EditUnsupported` raised (the message
        stays behind)."""
        try:
            return await call
        except GroupUpgraded as moved:
            await self.chat_moved(chat_id, moved.to)
            raise EditUnsupported(f"the message stayed in chat {chat_id}, upgraded to the supergroup {moved.to}",
                                  method=method, chat_id=chat_id, platform="telegram") from moved

    def locate(self, method: str, chat_id: str, message_id: str) -> tuple[str, str]:
        """The chat a message the adapter sent is in, and its id there: ``<chat>:<id>`` names a
        supergroup the gateway's chat became. Raises `EditUnsupported` for a message written in
        a group before it became a supergroup: Telegram lets it change no more."""
        chat, _, number = message_id.rpartition(":")
        if chat:
            return chat, number
        if chat_id in self._moved_to:
            raise EditUnsupported(f"the message stayed in chat {chat_id}, upgraded to the supergroup "
                                  f"{self._moved_to[chat_id]}", method=method, chat_id=chat_id, platform="telegram")
        return chat_id, message_id

    async def chat_moved(self, old: str, new: str) -> None:
        """The group ``old`` is the supergroup ``new`` now: stored (`bind`), then used."""
        if self._moved_to.get(old) == new:
            return  # both service messages tell, and so may a refused write
        if self._store_move is not None:
            await self._store_move(old, new)
        self._moved_to[old], self.moved_from[new] = new, old
        self.upgrade_wait.moved()
        log.info("telegram: chat %s was upgraded to the supergroup %s; the conversation goes on there", old, new)


def written_in(chat_id: str, gateway_chat: str, message_id: int) -> str:
    """A user's message id as the gateway keeps it (`platforms.base.Inbound.message_id`): the number
    alone in the gateway's own chat, ``<supergroup>:<number>`` for one handed over from the supergroup
    the gateway's chat became, as the ids of the bot's messages there (`Supergroups.locate`)."""
    return str(message_id) if chat_id == gateway_chat else f"{chat_id}:{message_id}"


def quotable_in(chat_id: str, gateway_chat: str, reply_to: str | None) -> int | None:
    """The number of the message ``reply_to`` (`written_in`) in ``chat_id``, where the reply goes;
    None when it was written in another chat. Ids are numbered per chat, and a supergroup's start
    anew: a message written in the group before its upgrade stayed there, and the same number in
    the supergroup is someone else's message, which the reply would quote instead."""
    if reply_to is None:
        return None
    chat, _, number = reply_to.rpartition(":")
    return int(number) if (chat or gateway_chat) == chat_id else None


def upgrade_of(message: Message) -> tuple[str, str] | None:
    """(old chat id, supergroup id) when ``message`` is one of the two service messages of an upgrade."""
    if message.migrate_to_chat_id is not None:
        return str(message.chat.id), str(message.migrate_to_chat_id)
    if message.migrate_from_chat_id is not None:
        return str(message.migrate_from_chat_id), str(message.chat.id)
    return None

