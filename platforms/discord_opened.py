"""The bot's answers on Discord, by message id: a thread a member opens on one is the bot's
(`discord_inbound.addressed`).

Discord gives a thread opened on a message that message's id. The adapter remembers the ids of its latest answers in
memory (`Answers.noted`), this process's only; a thread opened on an answer sent before a restart is looked up in the
gateway's outbox (`platforms.base.RemembersAnswers`), which keeps every part's message id while its row is kept (a
week). Once per thread, at the first message heard there: a sync read of the state database on the event loop, which
a busy thread's every message would repeat. Its answer is kept (found, among the answers; not, among the threads
asked), so the thread's later messages ask nothing. An answer whose id the outbox learned after its post (the post's
answer lost, the part found by its nonce, `platforms.discord_sent`) joins the answers then: a thread opened on it
meanwhile, asked of while the store knew no such id, is the bot's from then on. A store that cannot be read is not
asked again for `STORE_RETRY_SECONDS`, by any thread: each message of a thread not asked of yet would read it again.

Apart from the adapter (`platforms.discord`) because it is one concept: which message ids are the bot's answers.
Logged under ``platforms.discord``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable

from platforms.base import AnswerLookup
from platforms.discord_errors import described
from platforms.discord_seen import REMEMBERED_CHANNELS
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.recent import remember

log = logging.getLogger("platforms.discord")

STORE_RETRY_SECONDS = 10.0
"""How long after the store failed to say whether a thread was opened on an answer it is not asked again (a thread's
messages meanwhile are heard as any): once a message, the read (a sync one, on the event loop) and its warning came
again at every message of every thread not asked of yet, for as long as the store failed."""


class Answers:
    """The ids of the bot's answers, for ``in`` (`discord_inbound.addressed` asks it of a message's channel)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        """``clock``: the adapter's (epoch seconds), which times `STORE_RETRY_SECONDS`."""
        self._clock = clock
        self._ids: OrderedDict[int, None] = OrderedDict()
        """The latest answers this process sent or found stored, `REMEMBERED_CHANNELS` of them."""
        self._asked: OrderedDict[int, None] = OrderedDict()
        """Threads the store was asked of and named no answer: a thread is opened on a message already sent."""
        self._sent: AnswerLookup | None = None
        self._failed_at: float | None = None
        """When the store last failed to answer (warned of once until it answers again), None while it answers."""

    def bind(self, sent: AnswerLookup) -> None:
        self._sent = sent

    def noted(self, message_id: int) -> None:
        """The bot posted ``message_id``, an answer a thread may be opened on (or the outbox learned it did: a thread
        opened on it meanwhile was asked of as one on no answer's)."""
        self._asked.pop(message_id, None)
        remember(self._ids, message_id, None, REMEMBERED_CHANNELS)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def heard(self, message: discord.Message) -> None:
        """Before ``message`` is read (`discord_inbound.inbound_of`): in a thread (one discord.py does not hold too,
        a channel it does not hold alike) not asked of yet, the store is asked whether the thread was opened on one
        of the bot's answers. Not for the bot's own messages, nor another bot's, which are never heard. A store that
        cannot be read (logged once, until it is read again) is asked again at the first message of a thread not
        asked of yet once `STORE_RETRY_SECONDS` have passed: the messages until then are heard as in a thread of no
        answer's."""
        channel = message.channel
        if self._sent is None or message.author.bot \
                or not isinstance(channel, discord.Thread | discord.PartialMessageable) \
                or channel.id in self._ids or channel.id in self._asked:
            return
        failed_at = self._failed_at
        # A clock stepped back counts as time gone.
        if failed_at is not None and 0 <= self._clock() - failed_at < STORE_RETRY_SECONDS:
            return
        try:
            found = self._sent(str(channel.id))
        except Exception as exc:
            self._failed_at = self._clock()
            if failed_at is None:
                log.warning("discord: could not read the state database for whether thread %s was opened on an answer"
                            " of the bot's (%s); its message %s is heard as any, as are those of threads not asked of"
                            " yet until it is read again, in %g s", channel.id, described(exc), message.id,
                            STORE_RETRY_SECONDS)
            return
        if failed_at is not None:
            self._failed_at = None
            log.info("discord: the state database says again whether threads were opened on answers of the bot's")
        remember(self._ids if found else self._asked, channel.id, None, REMEMBERED_CHANNELS)
