"""Where a message lands in the fake Telegram: forum topics (open, closed, deleted) and the comment
threads of a channel's discussion group.

As the Bot API server does (``check_message_topic``, ``is_reply_in_same_topic`` in tdlib/telegram-bot-api's
Client.cpp): a send's ``message_thread_id`` counts in a forum, and in a private chat of a bot with topic mode on
(Bot API 9.3: ``has_topics_enabled`` in getMe, `FakeTelegram`'s ``topics_in_private``); it is ignored in any other
chat. A reply with no ``message_thread_id`` lands where the message it replies to is, in a forum's topic as in a
reply chain: in a supergroup that is no forum, every reply is in the thread of its chain, headed by the chain's first
message (the one replying to nothing), whose id it carries as ``message_thread_id`` with no ``is_topic_message``; a
reply to a reply keeps that first message's id. Users' replies and the bot's own (``reply_parameters``) alike, as
TDLib's MessageReplyHeader takes the thread from the server's ``reply_to_top_id``, else from the message replied to.
A linked channel's post copied into its discussion group (``is_automatic_forward``) heads such a thread, the comments
under the post. Not in a basic group, a private chat or a channel; nor in a forum's General topic, whose messages
carry no ``message_thread_id`` since Bot API 9.3 (MessageTopic: General is a forum topic, not a thread; earlier Bot
API servers gave a reply there its chain's head, tdlib/telegram-bot-api#447).

A user's reply written in one forum topic to a message of another (Telegram's "reply in another chat", the same
forum's topic picked) stays in the topic it was written in, and carries the message it replies to as
``external_reply``, as the Bot API shows a reply "from another chat or forum topic", not as ``reply_to_message``.

A topic an admin closed refuses the bot's messages, 400 "Bad Request: TOPIC_CLOSED"; one deleted is gone with
its messages, and a message sent or a "typing" shown in it is refused with 400 "Bad Request: message thread not
found".
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from platforms.fakes._telegram_api import ApiError

CLOSED = "Bad Request: TOPIC_CLOSED"
GONE = "Bad Request: message thread not found"


class TelegramThreads:
    """The thread half of `FakeTelegram`, which holds ``said``, ``messages`` and ``_chats`` and mixes this in."""

    said: defaultdict[str, dict[int, dict[str, Any]]]
    bot_user: dict[str, Any]
    messages: defaultdict[str, list[dict[str, Any]]]
    _chats: dict[str, dict[str, Any]]
    closed_topics: set[tuple[str, int]]
    deleted_topics: set[tuple[str, int]]

    # -- driving it from a test ------------------------------------------------------

    def close_topic(self, chat_id: int | str, thread_id: int) -> None:
        """An admin closes the forum topic: the bot may no longer write there (TOPIC_CLOSED)."""
        self.closed_topics.add((str(int(chat_id)), int(thread_id)))

    def reopen_topic(self, chat_id: int | str, thread_id: int) -> None:
        self.closed_topics.discard((str(int(chat_id)), int(thread_id)))

    def delete_topic(self, chat_id: int | str, thread_id: int) -> None:
        """An admin deletes the forum topic, and every message in it."""
        chat, topic = str(int(chat_id)), int(thread_id)
        self.deleted_topics.add((chat, topic))
        self.messages[chat] = [m for m in self.messages[chat] if m["thread_id"] != topic]
        self.said[chat] = {n: m for n, m in self.said[chat].items() if m.get("message_thread_id") != topic}

    def thread_of_reply(self, chat_id: int, replied: dict[str, Any] | None) -> int | None:
        """The thread a message replying to ``replied`` in the chat ``chat_id`` is in: the replied message's, or the
        reply chain ``replied`` heads (in a supergroup that is no forum; a channel post's comments)."""
        if replied is None:
            return None
        if replied.get("message_thread_id") is not None:
            return int(replied["message_thread_id"])
        return int(replied["message_id"]) if replied.get("is_automatic_forward") or self._has_chains(chat_id) else None

    def replies_across_topics(self, chat_id: int, thread_id: int | None, replied: dict[str, Any]) -> bool:
        """A message written in the forum topic ``thread_id`` replying to ``replied``, of another topic: the Bot API
        shows such a reply as ``external_reply`` ("from another chat or forum topic"), with no
        ``reply_to_message``."""
        return thread_id is not None and self._has_topics(chat_id) and replied.get("message_thread_id") != thread_id

    # -- the Bot API side ------------------------------------------------------------

    def _external_reply(self, chat_id: int, replied: dict[str, Any]) -> dict[str, Any]:
        """``replied`` as an ``external_reply`` (ExternalReplyInfo): who wrote it (its origin), its chat and id (given
        "only if the chat is a supergroup or a channel": not in a private chat's topics)."""
        if "sender_chat" in replied:
            origin = {"type": "chat", "date": replied["date"], "sender_chat": replied["sender_chat"]}
        else:
            origin = {"type": "user", "date": replied["date"], "sender_user": replied["from"]}
        chat = self._chats[str(chat_id)]
        if chat.get("type") not in ("supergroup", "channel"):
            return {"origin": origin}
        return {"origin": origin, "chat": chat, "message_id": replied["message_id"]}

    def _has_topics(self, chat_id: int) -> bool:
        """A forum, or a private chat of a bot with topic mode on: where ``message_thread_id`` names a topic."""
        chat = self._chats.get(str(chat_id), {})
        return bool(chat.get("is_forum") or chat.get("type") == "private" and self.bot_user.get("has_topics_enabled"))

    def _has_chains(self, chat_id: int) -> bool:
        """A supergroup that is no forum: where a reply is in the thread of its reply chain."""
        chat = self._chats.get(str(chat_id), {})
        return chat.get("type") == "supergroup" and not chat.get("is_forum")

    def _landing(self, params: dict[str, Any], chat_id: int, replied: dict[str, Any] | None) -> int | None:
        """The thread the bot's message lands in; raises as Telegram does for a topic closed or deleted."""
        asked = params.get("message_thread_id")
        topics = self._has_topics(chat_id)
        thread = int(asked) if asked is not None and topics else self.thread_of_reply(chat_id, replied)
        if thread is not None and topics:
            self._check_topic(chat_id, thread)
            if (str(chat_id), thread) in self.closed_topics:
                raise ApiError(400, CLOSED)
        return thread

    def _check_topic(self, chat_id: int, thread: int) -> None:
        if (str(chat_id), thread) in self.deleted_topics:
            raise ApiError(400, GONE)

    def _check_action_topic(self, params: dict[str, Any], chat_id: int) -> None:
        """``sendChatAction`` in a deleted topic is refused as a send there is; in a closed one it is shown."""
        asked = params.get("message_thread_id")
        if asked is not None and self._has_topics(chat_id):
            self._check_topic(chat_id, int(asked))

    def _thread_fields(self, chat_id: int, thread: int | None) -> dict[str, Any]:
        """A message's thread as the Bot API shows it: ``is_topic_message`` in a topic only."""
        if thread is None:
            return {}
        return {"message_thread_id": thread, **({"is_topic_message": True} if self._has_topics(chat_id) else {})}
