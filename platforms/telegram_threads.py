"""Comment threads of a channel's discussion group: every message of an answer goes under the post.

Comments under a channel's post are messages in the channel's discussion group (a supergroup, no forum), in the
thread the post's copy there heads (``is_automatic_forward``): they carry its id as ``message_thread_id``, with no
``is_topic_message``. The Bot API takes ``message_thread_id`` of a forum only, and ignores it in any other chat: a
message goes into a comment thread only by replying to one of its messages (it lands where the message it replies
to is). An answer's first message quotes the question, so it lands there; its further parts, notices, files and
notes quote nothing, and went to the group's own chat, not under the post. So `CommentThreads` remembers the
questions asked in a comment thread, and for each turn that answers one (from its hand-over, `handed`), the
thread: a message of that turn that quotes nothing replies to the post's copy instead, as a comment written under
the post does (Telegram's apps show no quote of it there).

Telegram makes a thread of any reply chain in a supergroup too (a message replying to another carries its
``message_thread_id``), but only a channel post's has a view of its own: those are left as they are, their
answers' further parts unquoted. A comment thread is known from a message that replies to the post itself, the
usual comment; a reply to another comment or to the bot's answer is in a thread known from an earlier one.
In memory only, the latest `REMEMBERED` of each: a turn begun before a restart sends the rest to the group's own
chat, as before.

Apart from the adapter (`platforms.telegram`) because it is a state of its own that sends consult.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

from aiogram.types import Message

from platforms.base import Accepted, Inbound, Outbound

REMEMBERED = 10_000

K = TypeVar("K")
V = TypeVar("V")


class _Latest(Generic[K, V]):
    """The latest `REMEMBERED` entries put."""

    def __init__(self) -> None:
        self._items: OrderedDict[K, V] = OrderedDict()

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > REMEMBERED:
            self._items.popitem(last=False)

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def __contains__(self, key: K) -> bool:
        return key in self._items


class CommentThreads:
    def __init__(self) -> None:
        self._threads: _Latest[tuple[str, int], None] = _Latest()
        """Comment threads seen: (chat, the id of the post's copy that heads it)."""
        self._asked: _Latest[tuple[str, str], int] = _Latest()
        """Questions asked in one: (the gateway's chat id, `Inbound.message_id`) -> the thread."""
        self._turns: _Latest[str, int] = _Latest()
        """Turns answering one: turn id -> the thread."""
        self._named: _Latest[str, None] = _Latest()
        """Turn ids hand-overs named (`handed`): a later one naming the same turn did not open it."""

    def heard(self, message: Message, inbound: Inbound | None) -> None:
        """Note ``message`` (handed over as ``inbound``, or not for the bot) if it was written in a comment
        thread."""
        thread, replied = message.message_thread_id, message.reply_to_message
        if thread is None or message.is_topic_message or message.chat.type != "supergroup":
            return
        here = (str(message.chat.id), thread)
        if replied is not None and replied.is_automatic_forward and replied.message_id == thread:
            self._threads.put(here, None)
        if inbound is not None and inbound.message_id is not None and here in self._threads:
            self._asked.put((inbound.chat_id, inbound.message_id), thread)

    def handed(self, inbound: Inbound, accepted: Accepted | None) -> None:
        """``inbound`` was handed over, to be answered by ``accepted``'s turn: a question asked in a comment thread
        ties that turn to it at once, so what the turn sends before a message quoting the question (a progress
        card, a ``send_message`` that took the quote) lands under the post too. Only the turn it opens: one it was
        steered into, or answered a question of, is another message's, whose answer stays where that was asked."""
        if accepted is None or accepted.turn_id is None or accepted.turn_id in self._named \
                or inbound.message_id is None:
            return
        self._named.put(accepted.turn_id, None)
        thread = self._asked.get((inbound.chat_id, inbound.message_id))
        if thread is not None:
            self._turns.put(accepted.turn_id, thread)

    def post_of(self, message: Outbound) -> int | None:
        """The post's copy heading the comment thread whose comment ``message`` quotes, where it should land were
        that comment gone; None for a message quoting none, or a message asked elsewhere."""
        return None if message.reply_to is None else self._asked.get((message.chat_id, message.reply_to))

    def reply_to(self, message: Outbound) -> int | None:
        """The post's copy ``message`` replies to so that it lands under the post: for a message of a turn that
        answers a comment and quotes nothing. A message quoting the comment lands there by itself."""
        if message.turn_id is None:
            return None
        if message.reply_to is not None:
            thread = self._asked.get((message.chat_id, message.reply_to))
            if thread is not None:
                self._turns.put(message.turn_id, thread)
            return None
        return self._turns.get(message.turn_id)
