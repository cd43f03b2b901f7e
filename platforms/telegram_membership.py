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
"""

from __future__ import annotations

from aiogram.types import ChatMemberUpdated

from platforms.base import DeliveryError, Forbidden
from platforms.chat_losses import LostChats

GONE = frozenset({"left", "kicked"})
"""The statuses of a bot that is not in the chat (a ``restricted`` one may be too: ``is_member`` says)."""
GONE_WORDS = ("blocked by the user", "kicked from", "not a member", "user is deactivated", "chat was deleted")
"""Telegram's 403 descriptions for a chat the bot cannot write to at all ("Forbidden: bot was kicked from the
supergroup chat"), not those of a right it lacks there."""


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

    def refused(self, chat_id: str, error: DeliveryError) -> None:
        """A write to the chat the gateway knows as ``chat_id`` failed with ``error``: one refused as the bot's
        blocked or removed tells the gateway, once (`lost`)."""
        if isinstance(error, Forbidden) and any(words in str(error) for words in GONE_WORDS):
            self.lost(chat_id, str(error).removeprefix("Forbidden: "))
