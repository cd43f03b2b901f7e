"""The bot's answers on Discord, by message id: a thread a member opens on one is the bot's
(`discord_inbound.addressed`).

Discord gives a thread opened on a message that message's id. The adapter remembers the ids of its latest answers in
memory (`Answers.noted`), this process's only; a thread opened on an answer sent before a restart is looked up in the
gateway's outbox (`platforms.base.RemembersAnswers`), which keeps every part's message id while its row is kept (a
week). Once per thread, at the first message heard there: a sync read of the state database on the event loop, which
a busy thread's every message would repeat. Its answer is kept (found, among the answers; not, among the threads
asked), so the thread's later messages ask nothing.

Apart from the adapter (`platforms.discord`) because it is one concept: which message ids are the bot's answers.
Logged under ``platforms.discord``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from platforms.base import AnswerLookup
from platforms.discord_errors import described
from platforms.discord_seen import REMEMBERED_CHANNELS
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.recent import remember

log = logging.getLogger("platforms.discord")


class Answers:
    """The ids of the bot's answers, for ``in`` (`discord_inbound.addressed` asks it of a message's channel)."""

    def __init__(self) -> None:
        self._ids: OrderedDict[int, None] = OrderedDict()
        """The latest answers this process sent or found stored, `REMEMBERED_CHANNELS` of them."""
        self._asked: OrderedDict[int, None] = OrderedDict()
        """Threads the store was asked of and named no answer: a thread is opened on a message already sent."""
        self._sent: AnswerLookup | None = None

    def bind(self, sent: AnswerLookup) -> None:
        self._sent = sent

    def noted(self, message_id: int) -> None:
        """The bot posted ``message_id``, an answer a thread may be opened on."""
        remember(self._ids, message_id, None, REMEMBERED_CHANNELS)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def heard(self, message: discord.Message) -> None:
        """Before ``message`` is read (`discord_inbound.inbound_of`): in a thread (one discord.py does not hold too,
        a channel it does not hold alike) not asked of yet, the store is asked whether the thread was opened on one
        of the bot's answers. Not for the bot's own messages, nor another bot's, which are never heard. A store that
        cannot be read is asked again at the thread's next message (logged): the message is heard as one in a thread
        of no answer's."""
        channel = message.channel
        if self._sent is None or message.author.bot \
                or not isinstance(channel, discord.Thread | discord.PartialMessageable) \
                or channel.id in self._ids or channel.id in self._asked:
            return
        try:
            found = self._sent(str(channel.id))
        except Exception as exc:
            log.warning("discord: could not read the state database for whether thread %s was opened on an answer of"
                        " the bot's (%s); its message %s is heard as any", channel.id, described(exc), message.id)
            return
        remember(self._ids if found else self._asked, channel.id, None, REMEMBERED_CHANNELS)
