"""Replies (quotes) in the fake Telegram: a message the bot sends as a reply to another one.

``sendMessage``, ``sendDocument`` and ``sendPhoto`` take ``reply_parameters`` (Bot API 7.0: a JSON
object with ``message_id`` and ``allow_sending_without_reply``) or the older ``reply_to_message_id``
and ``allow_sending_without_reply`` fields, which Telegram still takes. The message replied to must be
in the chat the bot writes to: a user's message the fake served (``said``, until
`delete_user_message`) or one the bot sent (``messages``). When it is not there, Telegram answers
400 "Bad Request: message to be replied not found", unless ``allow_sending_without_reply`` is
true: then the message goes out as a plain one, replying to nothing. The message returned (and
recorded as ``reply_to``) holds the message replied to as ``reply_to_message``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from platforms.fakes._telegram_api import ApiError, flag

NOT_FOUND = "Bad Request: message to be replied not found"


class TelegramReplies:
    """The reply half of `FakeTelegram`, which holds ``said`` and ``messages`` and mixes this in."""

    said: defaultdict[str, dict[int, dict[str, Any]]]
    """Users' messages in each chat, by message id, as the fake served them."""
    messages: defaultdict[str, list[dict[str, Any]]]

    def delete_user_message(self, chat_id: int | str, message_id: int) -> None:
        """A user (or an admin) deletes a user's message: replies to it no longer find it."""
        self.said[str(int(chat_id))].pop(int(message_id), None)

    def _heard(self, update: Mapping[str, Any]) -> None:
        """An update with a user's message is served: the message is in its chat from now on."""
        message = update.get("message")
        if isinstance(message, Mapping) and "message_id" in message and "chat" in message:
            kept = {k: v for k, v in message.items() if k != "reply_to_message"}  # Telegram nests one level only
            self.said[str(message["chat"]["id"])][int(message["message_id"])] = kept

    def _replied(self, params: dict[str, Any], chat_id: int) -> dict[str, Any] | None:
        """The message a send replies to, as ``reply_to_message``; None when it replies to none, or
        to one that is gone and ``allow_sending_without_reply`` is true. Raises as Telegram does."""
        if params.get("reply_parameters"):
            raw = params["reply_parameters"]  # an object in a JSON body, a JSON string in a form
            try:
                reply = raw if isinstance(raw, Mapping) else json.loads(raw)
            except ValueError:
                raise ApiError(400, "Bad Request: can't parse reply parameters JSON object") from None
            wanted, anyway = reply.get("message_id"), bool(reply.get("allow_sending_without_reply"))
        elif params.get("reply_to_message_id"):
            wanted, anyway = params["reply_to_message_id"], flag(params.get("allow_sending_without_reply"))
        else:
            return None
        try:
            message_id = int(wanted)
        except (TypeError, ValueError):
            raise ApiError(400, "Bad Request: invalid message_id specified") from None
        found = self.said[str(chat_id)].get(message_id) or self._bot_reply_target(chat_id, message_id)
        if found is None and not anyway:
            raise ApiError(400, NOT_FOUND)
        return found

    def _bot_reply_target(self, chat_id: int, message_id: int) -> dict[str, Any] | None:
        record = next((m for m in self.messages.get(str(chat_id), ()) if m["message_id"] == message_id), None)
        if record is None:
            return None
        return self._bot_message({"chat_id": chat_id}, record)  # type: ignore[attr-defined]
