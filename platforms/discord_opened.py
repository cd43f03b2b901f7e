"""The bot's answers on Discord, by message id: a thread a member opens on one is the bot's
(`discord_inbound.addressed`).

Discord gives a thread opened on a message that message's id. The adapter remembers the ids of its latest answers in
memory (`Answers.noted`), this process's only; a thread opened on an answer sent before a restart is looked up in the
gateway's outbox (`platforms.base.RemembersAnswers`), which keeps every part's message id while its row is kept (a
week). Once per thread, at the first message heard there: a sync read of the state database on the event loop, which
a busy thread's every message would repeat. Its answer is kept (found, among the answers; not, among the threads
asked), so the thread's later messages ask nothing. An answer joins the answers as its post is heard over the gateway
(its ``MESSAGE_CREATE``, by the nonce of an answer's part: `sending`, `posted`), not only once Discord's answer to the
post came: a member may open a thread on it and talk there while the post's answer is on its way, or lost (the part
found by its nonce later, `platforms.discord_sent`), and those messages were heard as any thread's, lost to the bot.
A store that cannot be read is not asked again for `STORE_RETRY_SECONDS` by the messages heard, by any thread: each
message of a thread not asked of yet would read it again. Such a message is `Unsure`: held, in order, until the
store says (`settle`), rather than heard as in a thread of no answer's; a member's edit there alike; for
`HOLD_SECONDS` at most, every chat's events waiting behind it.

Apart from the adapter (`platforms.discord`) because it is one concept: which message ids are the bot's answers.
Logged under ``platforms.discord``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from platforms.base import AnswerLookup
from platforms.discord_errors import described
from platforms.discord_seen import REMEMBERED_CHANNELS
from platforms.discord_twins import REMEMBERED as REMEMBERED_NONCES
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.not_recorded import storage_refusal
from platforms.recent import remember

log = logging.getLogger("platforms.discord")

STORE_RETRY_SECONDS = 10.0
"""How long after the store failed to say whether a thread was opened on an answer it is not asked again (a thread's
messages meanwhile are heard as any): once a message, the read (a sync one, on the event loop) and its warning came
again at every message of every thread not asked of yet, for as long as the store failed."""
SETTLE_FIRST, SETTLE_MAX = 0.5, 5.0
"""How long a message held for the store (`Answers.settle`) waits before it is asked again, doubling: one read a
try, as the gateway's record of an event is tried again (`platforms.discord_handover.until_recorded`)."""
HOLD_SECONDS = 60.0
"""How long, from its turn, a message held for the store (`Answers.settle`) waits for it at most: every chat's events
wait behind it. A lock another process holds (each read waits 5 s for it) or a disk's passing fault is over well
within a minute; past it the failure is one for the operator to mend, and the bot answered no one until then. The
message is then heard as in a thread of no answer's, said as an ERROR, and so are those of threads not asked of yet,
unheld, until the store is read again."""


@dataclass(frozen=True)
class Unsure:
    """A member's message in a thread the store could not say was opened on an answer of the bot's (it failed, or
    is not asked again yet: `STORE_RETRY_SECONDS`): queued as it is, read (`discord_inbound.inbound_of`) once the
    store says (`Answers.settle`); or, ``edit``, the member's edit of it (``MESSAGE_UPDATE``), read so, in its place
    among the events (an edit read before would be dropped as not for the bot, the message it changes perhaps
    handed over once the store reads again)."""

    message: discord.Message
    edit: bool = False

    @property
    def channel_id(self) -> int:
        return self.message.channel.id

    @property
    def message_id(self) -> int:
        return self.message.id


class Answers:
    """The ids of the bot's answers, for ``in`` (`discord_inbound.addressed` asks it of a message's channel)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        """``clock``: the adapter's monotonic one (seconds), which times `STORE_RETRY_SECONDS` and `HOLD_SECONDS`:
        not the host's wall clock, which NTP (or a VM resumed) steps forward, ending a hold at its next try."""
        self._clock = clock
        self._ids: OrderedDict[int, None] = OrderedDict()
        """The latest answers this process sent or found stored, `REMEMBERED_CHANNELS` of them."""
        self._asked: OrderedDict[int, None] = OrderedDict()
        """Threads the store was asked of and named no answer: a thread is opened on a message already sent."""
        self._sent: AnswerLookup | None = None
        self._failed_at: float | None = None
        """When the store last failed to answer (warned of once until it answers again), None while it answers."""
        self._holding = True
        """Whether the store's last failure was for want of storage (`storage_refusal`: a disk, a lock), which
        holds a thread's message (`Unsure`) until it answers; another (a corrupt file) recurs at every try, and
        would hold every chat's events for good: the message is heard as in a thread of no answer's. Not either
        once a message was held `HOLD_SECONDS` (`_gave_up`), until the store answers."""
        self._gave_up = False
        """A message was held `HOLD_SECONDS` since the store last answered: no other is held until it does."""
        self._failure = ""
        """Why the store last failed (`described`), for the ERROR a hold given up on says."""
        self._sending: OrderedDict[str, None] = OrderedDict()
        """Nonces of the answers' parts posted (`sending`), until their post is heard (`posted`)."""

    def bind(self, sent: AnswerLookup) -> None:
        self._sent = sent

    def noted(self, message_id: int) -> None:
        """The bot posted ``message_id``, an answer a thread may be opened on (or the outbox learned it did: a thread
        opened on it meanwhile was asked of as one on no answer's)."""
        self._asked.pop(message_id, None)
        remember(self._ids, message_id, None, REMEMBERED_CHANNELS)

    def sending(self, nonce: str | None) -> None:
        """An answer's part (as `platforms.discord.DiscordAdapter._noted` counts them) is posted with ``nonce``,
        before the request goes: its ``MESSAGE_CREATE`` may come before Discord's answer."""
        if nonce is not None:
            remember(self._sending, nonce, None, REMEMBERED_NONCES)

    def posted(self, message: discord.Message) -> None:
        """The bot's ``message`` heard over the gateway: an answer's part (`sending`) posted in a channel that takes
        threads on its messages (a text or announcement channel discord.py holds) is noted at once."""
        nonce = None if message.nonce is None else str(message.nonce)
        if nonce not in self._sending:
            return
        del self._sending[nonce]
        if isinstance(message.channel, discord.TextChannel):
            self.noted(message.id)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._ids

    def heard(self, message: discord.Message) -> bool:
        """Before ``message`` is read (`discord_inbound.inbound_of`): in a thread (one discord.py does not hold too,
        a channel it does not hold alike) not asked of yet, the store is asked whether the thread was opened on one
        of the bot's answers. Not for the bot's own messages, nor another bot's, which are never heard. A store that
        cannot be read (logged once, until it is read again) is asked again by the messages heard at the first one of
        a thread not asked of yet once `STORE_RETRY_SECONDS` have passed. Whether the thread stays unknown so: the
        message is then `Unsure`."""
        channel = message.channel
        if self._sent is None or message.author.bot \
                or not isinstance(channel, discord.Thread | discord.PartialMessageable) \
                or channel.id in self._ids or channel.id in self._asked:
            return False
        failed_at = self._failed_at
        # A clock stepped back (as a test's may be) counts as time gone.
        if failed_at is not None and 0 <= self._clock() - failed_at < STORE_RETRY_SECONDS:
            return self._holding
        return not self._ask(channel.id, message.id) and self._holding

    async def settle(self, unsure: Unsure, stopping: asyncio.Event) -> bool:
        """Until the store says whether ``unsure``'s thread was opened on an answer (or the thread is known so
        meanwhile), asking it at once, then after `SETTLE_FIRST` seconds, twice as long each time, up to
        `SETTLE_MAX`: the events after it wait, in order, as for an event the gateway could not record; for
        `HOLD_SECONDS` at most from its turn, reads that hang included, then read as in a thread of no answer's.
        False once a stop is asked for: the message is left for the next start."""
        delay, since = SETTLE_FIRST, self._clock()
        while unsure.channel_id not in self._ids and unsure.channel_id not in self._asked:
            if stopping.is_set():
                return False
            if not self._holding and self._failed_at is not None \
                    and 0 <= self._clock() - self._failed_at < STORE_RETRY_SECONDS:
                break  # held no more (given up on, `HOLD_SECONDS`): not asked again before its time, as by `heard`
            if self._ask(unsure.channel_id, unsure.message_id) or not self._holding:
                break
            if self._clock() - since >= HOLD_SECONDS:
                self._give_up(unsure)
                break
            with contextlib.suppress(TimeoutError):  # a stop cuts the wait short
                await asyncio.wait_for(stopping.wait(), delay)
            delay = min(delay * 2, SETTLE_MAX)
        return True

    def _give_up(self, unsure: Unsure) -> None:
        self._gave_up, self._holding = True, False
        log.error("discord: the state database has not said for %g s whether thread %s was opened on an answer of the"
                  " bot's (%s); %s %s is passed over, as in a thread of no answer's, and so are the messages of"
                  " threads not asked of yet that do not mention the bot, unheld, until it is read again",
                  HOLD_SECONDS, unsure.channel_id, self._failure, "the edit of message" if unsure.edit else "message",
                  unsure.message_id)

    def _ask(self, thread_id: int, message_id: int) -> bool:
        """Whether the store said whether thread ``thread_id`` was opened on an answer (kept: `heard`)."""
        assert self._sent is not None
        failed_at = self._failed_at
        try:
            found = self._sent(str(thread_id))
        except Exception as exc:
            self._failed_at = self._clock()
            self._holding = storage_refusal(exc) and not self._gave_up
            self._failure = described(exc)
            if failed_at is None:
                log.warning("discord: could not read the state database for whether thread %s was opened on an answer"
                            " of the bot's (%s); its message %s %s", thread_id, self._failure, message_id,
                            "waits for it, as does every event after it (every chat's), in order" if self._holding
                            else "is heard as any, as are those of threads not asked of yet until it is read again, "
                            f"in {STORE_RETRY_SECONDS:g} s")
            return False
        if failed_at is not None:
            self._failed_at, self._gave_up = None, False
            log.info("discord: the state database says again whether threads were opened on answers of the bot's")
        remember(self._ids if found else self._asked, thread_id, None, REMEMBERED_CHANNELS)
        return True
