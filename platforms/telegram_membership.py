"""The bot's own place in a chat: whether it may still write there, for `platforms.base.LosesChats`.

Telegram says so in a ``my_chat_member`` update: a user who blocks the bot makes its status ``kicked`` in their
private chat, a group that removes it ``left`` or ``kicked`` there (``restricted`` and no longer a member, had it
been restricted); unblocked or added back, it is a member again. A write Telegram refuses as the bot's blocked or
removed says the same when that update never came: sent while the gateway was down for over a day (Telegram keeps
updates 24 h), or before the gateway asked for it. The gateway is told once per chat, until the bot may write
there again (a member once more, or a message of the chat handed over: `platforms.chat_losses`). A webhook's update
is confirmed to Telegram once the gateway took the stop (`tell`); polling's, and a refused write, tell it in a task
of its own (`lost`), a store that refuses it asked again until it takes it, the bot is back there or the adapter
closes.

A forum topic an admin deleted is gone for good, and a write into it is refused "message thread not found" (or
``TOPIC_DELETED``): the gateway is told the topic alone is lost (``lost(chat, why, thread_id=topic)``), once, as a
Discord thread deleted is, so its running turn stops and the messages waiting there are not each answered with a model
call for an answer Telegram refuses. The chat's other topics and its General topic go on. Not a topic an admin closed
(``TOPIC_CLOSED``): it may be reopened.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from datetime import datetime

from aiogram.types import ChatMemberUpdated

from platforms.base import BadRequest, ChatLost, DeliveryError, Forbidden, NotFound
from platforms.chat_losses import LostChats
from platforms.recent import remember

GONE = frozenset({"left", "kicked"})
"""The statuses of a bot that is not in the chat (a ``restricted`` one may be too: ``is_member`` says)."""
GONE_WORDS = ("blocked by the user", "kicked from", "not a member", "user is deactivated", "chat was deleted")
"""Telegram's 403 descriptions for a chat the bot cannot write to at all ("Forbidden: bot was kicked from the
supergroup chat"), not those of a right it lacks there."""
TOPIC_GONE_WORDS = ("message thread not found", "TOPIC_DELETED")
"""Telegram's refusals of a write into a forum topic that was deleted (the Bot API's own check, and the server's when
the Bot API still held the topic)."""
TOPIC_DELETED = "the forum topic was deleted"
REMEMBERED_UPDATES = 10_000
"""Chats whose latest ``my_chat_member`` update id is kept: one forgotten takes any later update as current."""


def gone(update: ChatMemberUpdated) -> str | None:
    """Why the bot can no longer write to the chat of ``update``, in plain words naming no one; None when it can."""
    member = update.new_chat_member
    if member.status not in GONE and not (member.status == "restricted" and not getattr(member, "is_member", True)):
        return None
    return "the bot was blocked by the user" if update.chat.type == "private" else "the bot was removed from the chat"


class Membership(LostChats):
    """The chats the gateway was told the bot can no longer write to (`LosesChats`), by Telegram's updates
    (`tell`) and refusals."""

    def __init__(self) -> None:
        super().__init__("telegram", "chat")
        self._topics = LostChats("telegram", "topic")
        """The topics told lost, each by ``<chat>/<topic>``: told apart from their chats, so that a topic's loss
        neither stands for its chat's nor waits behind it."""
        self._updates: OrderedDict[str, tuple[int, datetime]] = OrderedDict()
        """Each chat's latest ``my_chat_member`` update handled, its id and the time of its change (`current`)."""

    def current(self, chat_id: str, update_id: int, when: datetime) -> bool:
        """Whether the ``my_chat_member`` update ``update_id`` of ``chat_id``, of a change made at ``when``, says how
        the bot is there now: none later of the chat was handled. Telegram numbers a bot's updates in the order they
        happen, and a webhook may deliver one after a later one (sent again once its first delivery failed, or over
        another connection): the bot removed, then added back, the late removal stopped the work begun since it came
        back. Older is a lower id of a change made no later: after a week without updates, the next one's id is drawn
        at random, maybe lower than the last heard (the Bot API's ``update_id``), its change the latest all the same."""
        last = self._updates.get(chat_id)
        if last is not None and update_id < last[0] and when <= last[1]:
            return False
        remember(self._updates, chat_id, (update_id, when), REMEMBERED_UPDATES)
        return True

    def bind(self, lost: ChatLost) -> None:
        super().bind(lost)

        async def topic_lost(topic: str, why: str) -> None:
            chat, _, thread = topic.rpartition("/")
            await lost(chat, why, thread_id=thread)

        self._topics.bind(topic_lost)

    def refused(self, chat_id: str, error: DeliveryError) -> None:
        """A write to the chat the gateway knows as ``chat_id`` failed with ``error``: one refused as the bot's
        blocked or removed tells the gateway, once (`lost`)."""
        if isinstance(error, Forbidden) and any(words in str(error) for words in GONE_WORDS):
            self.lost(chat_id, str(error).removeprefix("Forbidden: "))

    def refused_in_topic(self, chat_id: str, thread_id: str | None, error: DeliveryError) -> None:
        """A write into topic ``thread_id`` of the chat the gateway knows as ``chat_id`` failed with ``error``: one
        refused as the topic is deleted tells the gateway that topic is lost, once (`LostChats.lost`)."""
        if thread_id is not None and isinstance(error, (BadRequest, NotFound)) and any(
                words in str(error) for words in TOPIC_GONE_WORDS):
            self._topics.lost(f"{chat_id}/{thread_id}", TOPIC_DELETED)

    def topic_back(self, chat_id: str, thread_id: str | None) -> None:
        """A message of the topic was handed over: it is there, its next refusal tells it again."""
        if thread_id is not None:
            self._topics.back(f"{chat_id}/{thread_id}")

    async def close(self) -> None:
        await asyncio.gather(super().close(), self._topics.close())
