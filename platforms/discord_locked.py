"""An answer Discord refuses in a thread a moderator locked, posted in the thread's channel instead.

A locked thread takes posts from those who manage threads there alone: Discord refuses the bot's post, its edit
and its "typing" there with 403, code 50083 ``Thread is archived``, whether the thread is archived or not (the
post cannot reopen it, as it reopens an archived thread that is not locked; discord/discord-api-docs#6884, #7707),
and documents 160005 ``Thread is locked`` for it too. Locked while a turn ran, the thread lost the turn's answer: the
part failed, with a line in the log. An answer (`MOVED`: a turn's reply, the results of background work) is posted
in the thread's parent channel instead, headed by a line that names the thread (``<#thread>``, which Discord shows
as a link to it) and, on the part that quotes the message it answers, that message's author, the asker, pinged
(read from the thread, which a locked thread still lets the bot do; without it, the head names the thread alone).
The rest of what a turn posts (progress notices, cards, command answers) is not moved: it would be noise in the
channel, and the thread has the card it showed. Nor is the answer of a private thread, which would show the channel
what its members alone may read, or of a forum's post, whose forum takes no message (`to_its_channel`).

The part keeps its nonce, so a post the parent took whose answer was lost is not posted again (Discord answers a
repeated nonce with the first message, and `find_sent` finds it by its nonce), as for any part. A part whose text and
head are over Discord's 2,000 characters is refused here as too long, so the outbox cuts it in two and journals the
halves (`gateway.resplit`), each moved in its turn; a file's caption goes without the head instead (a file is never
halved).

Once a thread refused an answer so, the thread is known locked (`LockedThreads`): the rest of the turn's answers, and
those that come later, go to the channel at once. Each refused post counts toward Discord's limit on invalid requests
(10,000 in 10 minutes bar the bot's address), and a long answer's every part, file and agent's message tried the thread
first. What goes nowhere else is refused without a call (`unposted`), final as Discord's refusal is: the answers of a
private thread or a forum's post, once one was refused there, and whatever is not an answer (a new progress card, a
notice, a command's answer). Known until Discord says the thread unlocked (``THREAD_UPDATE``, or discord.py's copy of
the thread: that update may come after the next part), a new gateway session begins (whose missed updates are not sent
again), the thread is deleted, or `RECHECK_SECONDS` pass: then a part tries the thread again, and one the thread takes
(the bot given *Manage Threads* meanwhile) ends it too.

A thread known locked also takes no "typing" (refreshed every few seconds of a turn, each refresh refused there) and
no edit of the bot's messages there (a progress card shown before the lock, edited at each step): the edit is refused
without a call (`unedited`), final as Discord's refusal is, so the card reads as it did. What matters, the answer,
is in the channel. A "typing", an edit or a notice refused as locked makes the thread known so too (`writing`); its
answers are then tried there still, once, to learn whether they may go to the channel (a private thread's never do).

A post refused as locked as the thread was unlocked (Discord's word of the unlock heard while the post was on its way,
`LockedThreads.unlocks`; or the thread, asked of Discord after the refusal, reads unlocked: `UNLOCKED`) is tried in
the thread once more: a private thread's answer failed so, a public one's went to the channel under a "locked" head.
discord.py's copy of a thread it holds does not count: it may not have heard the lock yet, and the try would be one
more refusal.

Apart from the adapter (`platforms.discord`) because it is one concept: where an answer goes when its thread closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Literal

from platforms.base import DeliveryError, Forbidden, MessageTooLong, Outbound, OutboundFile, Sent, scalar_text
from platforms.discord_errors import answered, described, made_all_the_same, translate
from platforms.discord_posts import ROUTE, THREAD_LOCKED, Channel
from platforms.discord_twins import Twins, nonce_of
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.formatting import blank, discord_markdown
from platforms.recent import remember

log = logging.getLogger("platforms.discord")

MOVED = frozenset({"reply", "interim", "completion"})
"""The kinds of part that are answers, moved to the thread's channel when the thread is locked: a turn's reply, what
the agent sends on its way (its messages, its files, which take the question's quote), the results of background
work."""
TEXT_LIMIT = 2000
RECHECK_SECONDS = 600.0
"""How long a thread that refused an answer as locked takes the answers' way to its channel unasked, unless told it
unlocked: at most one refused post a thread per that time, should Discord's word of the unlock be missed."""
EDIT_ROUTE = "PATCH /channels/{channel_id}/messages/{message_id}"
REMEMBERED_LOCKED = 1000
"""Locked threads known at once, the most recently refused kept: one dropped costs one refused post again."""
Unlocked = Literal["unlocked"]
UNLOCKED: Unlocked = "unlocked"
"""`to_its_channel`: the thread, asked of Discord after it refused the post, reads unlocked."""


class LockedThreads:
    """The threads that refused a write of the bot's as locked: by when (on the adapter's clock, epoch seconds), and
    whether their answers go to the thread's channel (True: one refused there was moved, `to_its_channel`), go
    nowhere (False: a private thread's, a forum post's) or are not known to yet (None: no answer was refused there)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._refused: OrderedDict[int, tuple[float, bool | None]] = OrderedDict()
        self._updates: OrderedDict[int, tuple[bool, int]] = OrderedDict()
        """Of the `REMEMBERED_LOCKED` threads updated last (``THREAD_UPDATE``): whether the last update said locked,
        and how many said unlocked after one that said locked."""

    def at_once(self, message: Outbound, client: discord.Client | None) -> bool:
        """Whether ``message`` is an answer (as `moves` counts them) for a thread known locked whose answers go to its
        channel, without trying the thread."""
        if message.thread_id is None or message.kind not in MOVED or message.reply_token:
            return False
        return self.shut(message.thread_id, client) and self._refused[int(message.thread_id)][1] is True

    def refuses(self, message: Outbound, client: discord.Client | None) -> bool:
        """Whether ``message``, for a thread known locked, goes nowhere (`unposted`) rather than try the thread: it
        is no answer, which the thread's channel never takes in its place (a new progress card, a notice, a command's
        answer), or an answer of a thread whose answers may not go there (a private thread's, a forum post's)."""
        if message.thread_id is None or not self.shut(message.thread_id, client):
            return False
        return message.kind not in MOVED or bool(message.reply_token) \
            or self._refused[int(message.thread_id)][1] is False

    def shut(self, thread_id: str | None, client: discord.Client | None) -> bool:
        """Whether thread ``thread_id`` is known locked: its "typing" and the edits of the bot's messages there are
        not sent, each would be refused (`writing`). Not when discord.py's copy of the thread (``client``'s) says it
        is unlocked: the raw update that says so may be on its way still."""
        if thread_id is None:
            return False
        thread = int(thread_id)
        known = self._refused.get(thread)
        if known is None:
            return False
        if not 0 <= self._clock() - known[0] < RECHECK_SECONDS:  # a clock stepped back counts as time gone too
            del self._refused[thread]
            return False
        held = client.get_channel(thread) if client is not None else None
        return not (isinstance(held, discord.Thread) and not held.locked)

    def refused(self, thread_id: str, moves: bool | None) -> None:
        """The thread refused an answer as locked, which goes to its channel or nowhere (``moves``, from
        `to_its_channel`; None, not known: its next answer tries the thread again). Only while the refusal is still
        known (`writing` noted it): Discord may have said the thread unlocked (or a new session began) while the move
        was decided, whose fetch of the thread is an await; its later answers try it again."""
        known = self._refused.get(int(thread_id))
        if known is not None and moves is not None:
            remember(self._refused, int(thread_id), (known[0], moves), REMEMBERED_LOCKED)

    @contextlib.contextmanager
    def writing(self, thread_id: str | None) -> Iterator[None]:
        """Around a write in thread ``thread_id`` (a post, "typing", an edit): one refused as the thread locked
        (`locked_out`) makes it known so (`shut`). Its answers go to its channel only once one was refused and moved
        (`refused`): a private thread's would show its channel what its members alone may read."""
        try:
            yield
        except DeliveryError as error:
            if thread_id is not None and locked_out(error):
                moves = self._refused.get(int(thread_id), (0.0, None))[1]
                remember(self._refused, int(thread_id), (self._clock(), moves), REMEMBERED_LOCKED)
            raise

    def drop(self, thread_id: str | int) -> None:
        """The thread is tried again: Discord said it is unlocked, took a post there, or deleted it (whose answers
        are not the channel's: the thread is lost, `platforms.discord_membership`)."""
        self._refused.pop(int(thread_id), None)

    def updated(self, event: discord.RawThreadUpdateEvent) -> None:
        """``THREAD_UPDATE``, raw: of a thread discord.py does not hold (archived) too."""
        locked = bool((event.data.get("thread_metadata") or {}).get("locked", False))
        if not locked:
            self.drop(event.thread_id)
        # Only an update after one that said locked unlocks: another said unlocked (archived, renamed) may come late.
        was_locked, unlocks = self._updates.get(event.thread_id, (False, 0))
        remember(self._updates, event.thread_id, (locked, unlocks + (was_locked and not locked)), REMEMBERED_LOCKED)

    def unlocks(self, thread_id: str | int | None) -> int:
        """How many times Discord said thread ``thread_id`` unlocked: one more after a post there than before it
        says that the post's refusal as locked crossed the unlock on its way (the post is tried again)."""
        return 0 if thread_id is None else self._updates.get(int(thread_id), (False, 0))[1]

    def unlocked_since(self, thread_id: str | int, unlocks: int) -> bool:
        """Whether Discord said thread ``thread_id`` unlocked since `unlocks` read ``unlocks``, and its last word is
        unlocked still: locked again meanwhile, a post tried there again would be one more refusal. Not once the
        thread's updates were forgotten (`REMEMBERED_LOCKED`): its count read 0 then."""
        locked, now = self._updates.get(int(thread_id), (False, 0))
        return now > unlocks and not locked

    def forget(self) -> None:
        """A new gateway session: an unlock while the last one was down is never sent."""
        self._refused.clear()


def locked_out(exc: BaseException) -> bool:
    """Whether ``exc`` (a `DeliveryError` from a write in a thread) is Discord's refusal of a locked thread's."""
    cause = exc.__cause__
    return isinstance(cause, discord.Forbidden) and cause.code in THREAD_LOCKED


def moves(message: Outbound, exc: BaseException) -> bool:
    """Whether ``message``, refused with ``exc`` (a `DeliveryError` from the post), is an answer that goes to its
    thread's channel: refused in a thread as the thread locked."""
    return message.thread_id is not None and message.kind in MOVED and not message.reply_token and locked_out(exc)


def unposted(thread_id: str) -> Forbidden:
    """The refusal of a post in thread ``thread_id``, known locked, that goes nowhere else (`LockedThreads.refuses`),
    made without asking Discord, which would refuse it (403), one more refusal toward barring the bot: final, as
    Discord's, so nothing tries it again; a progress card refused so is not updated (`gateway.progress_message`)."""
    return Forbidden(f"thread {thread_id} is locked: the bot's message is not posted there", method=ROUTE,
                     chat_id=thread_id, platform="discord")


def unedited(thread_id: str) -> Forbidden:
    """The refusal of an edit of the bot's message in thread ``thread_id``, known locked, made without asking
    Discord, which would refuse it (403), one more refusal toward barring the bot: final, as Discord's, so nothing
    tries it again, and the outbox logs it once a chat, the progress message it edits no longer updated
    (`gateway.progress_message`). A card there reads as it did when the thread locked; the thread's answers are in
    its channel."""
    return Forbidden(f"thread {thread_id} is locked: the bot's message there is left as it is", method=EDIT_ROUTE,
                     chat_id=thread_id, platform="discord")


async def to_its_channel(client: discord.Client | None, thread_id: str, timeout: float) -> bool | None | Unlocked:
    """Whether the answers of the locked thread ``thread_id`` may go to its channel: a public thread of a channel that
    takes messages. Not a private thread, whose channel's members may not read it: the answer would show them what
    was said there; nor a post of a forum or media channel, which takes no message but in its posts. Asked of Discord
    (within ``timeout``) when discord.py does not hold the thread (archived); not moved when that fails (None: not
    known, the thread's next answer asks again). Read unlocked so (its ``THREAD_UPDATE`` missed, or heard before the
    refusal's answer), `UNLOCKED`: the answer is tried there again (`platforms.discord.DiscordAdapter`), and its
    cards, notices and answers are not refused without a call for `RECHECK_SECONDS`. discord.py's own copy of the
    thread is not so trusted: it may not have heard the lock yet (`LockedThreads.unlocks` says when it heard an
    unlock)."""
    if client is None:
        return None
    thread = client.get_channel(int(thread_id))
    if thread is None:
        try:
            thread = await asyncio.wait_for(client.fetch_channel(int(thread_id)), timeout)
        except Exception as exc:
            log.debug("discord: could not read locked thread %s to move its answer: %s", thread_id, described(exc))
            return None
        if isinstance(thread, discord.Thread) and not thread.locked:
            return UNLOCKED
    return isinstance(thread, discord.Thread) and not thread.is_private() \
        and not isinstance(thread.parent, discord.ForumChannel)


async def post(channel: Channel, twins: Twins, message: Outbound, file: OutboundFile | None = None) -> Sent:
    """Post ``message`` (with ``file``), refused in its locked thread, in the thread's parent channel, headed
    (`head`), with the part's nonce; not as a reply: Discord quotes no message of another channel."""
    assert message.thread_id is not None
    nonce = nonce_of(message.idempotency_key)
    twins.sending(nonce)
    top, mentions = await head(channel(message.thread_id), message)
    text = discord_markdown.render(message.text if file is None else blank.caption(scalar_text(message.text)))
    # A file is never halved (the outbox fails a file's part too long): its caption goes without the head rather.
    content = text if file is not None and len(top + text) > TEXT_LIMIT else fitting(top + text, message)
    target = channel(message.chat_id)
    with answered() as answer:
        try:
            if file is None:
                sent = await target.send(content, silent=message.silent, nonce=nonce, allowed_mentions=mentions)
            else:
                upload = await asyncio.to_thread(discord.File, file.path, filename=file.name)
                try:
                    sent = await target.send(content, file=upload, silent=message.silent, nonce=nonce,
                                             allowed_mentions=mentions)
                finally:
                    upload.close()
            made = sent.id
        except Exception as exc:
            if (made := made_all_the_same(exc, answer, route=ROUTE, chat_id=message.chat_id)) is None:
                raise translate(exc, route=ROUTE, chat_id=message.chat_id, caller_logs=True, answer=answer) from exc
    log.info("discord: thread %s is locked; its answer (part %s) was posted in channel %s instead",
             message.thread_id, made, message.chat_id)
    return Sent(str(made))


async def head(thread: discord.PartialMessageable, message: Outbound) -> tuple[str, discord.AllowedMentions]:
    """The line heading ``message`` in its thread's channel, and whom it pings: the asker, on the part that quotes
    their message (read from the ``thread``); no one when it cannot be read (deleted, no Read Message History, a
    failed call), nor on the parts that follow."""
    asker = await _asker(thread, message)
    where = f"<#{message.thread_id}>"
    if asker is None:
        return f"**↪ From {where}** (the thread is locked):\n", discord.AllowedMentions.none()
    return (f"**↪ For <@{asker}>, from {where}** (the thread is locked):\n",
            discord.AllowedMentions(everyone=False, roles=False, replied_user=False, users=[discord.Object(asker)]))


def fitting(content: str, message: Outbound) -> str:
    """``content`` (the head and the part), or `MessageTooLong` past Discord's limit, so that the outbox halves the
    part: the gateway's measure does not count the head, and the head posted apart would be a message of its own,
    sent again or lost apart from its part."""
    if len(content) > TEXT_LIMIT:
        raise MessageTooLong(f"{len(content)} characters with the head naming the locked thread",
                             method=ROUTE, chat_id=message.chat_id, platform="discord")
    return content


async def _asker(thread: discord.PartialMessageable, message: Outbound) -> int | None:
    if message.reply_to is None:
        return None
    try:
        asked = await thread.fetch_message(int(message.reply_to))
    except Exception as exc:  # only the head's mention is at stake: the answer goes all the same
        log.debug("discord: could not read message %s in locked thread %s to name its author: %s",
                  message.reply_to, message.thread_id, described(exc))
        return None
    return asked.author.id
