"""Which Discord chats the bot can no longer write to, for `platforms.base.LosesChats`.

Discord says so on the gateway: ``GUILD_DELETE`` without ``unavailable`` when the bot was removed from a server
(kicked, banned, or the server deleted; with ``unavailable: true`` it is an outage, which stops nothing), and
``CHANNEL_DELETE`` when a channel was deleted. A write Discord refuses as such says the same when the event was
missed (sent while the gateway was down, or while its session was invalid): 403 Missing Access (50001: the bot
removed from the server, or the channel hidden from it), 404 Unknown Channel (10003), and in a DM 403 Cannot send
messages to this user (50007: the user blocked the bot, closed their direct messages, or shares no server with it
any more, each until they change it). The gateway is told once per chat, until the bot may write there again
(added back to the server, or a message of the chat handed over), so the refusals of the parts still queued there
are not each one more stop.

A session is keyed by its channel, a thread's by its parent channel and the thread (`platforms.discord_inbound`):
the chat of each thread the gateway knows is kept here too (`Membership.thread_chat`), for a message in a thread
discord.py does not hold, which names no parent.
A thread lost alone is told with its thread (``lost(chat, why, thread_id=thread)``), which stops that thread's work
and no other: deleted (``THREAD_DELETE``), a private one the bot was removed from (``THREAD_MEMBERS_UPDATE``; from a
public one it may still write, and from a private one too while it manages threads in its channel: `kept_out`), or a
write there refused 50001 or 10003. Told of its channel, the loss would stop the work of the channel and of every
other thread of it. A server's chats are its channels (and threads) the
gateway has talked in, as far as the adapter knows (`knows`): telling each of a server's hundreds of channels would
be as many lines in the log.

Apart from the adapter (`platforms.discord`) because it is one concept, the bot's access to each chat. The changes
are queued with the adapter's other events (`Access`), so that one is told in the order of the chat's events: a
message sent before the bot's removal, handed over after it, does not make the chat writable again.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from platforms.base import ChatLost, DeliveryError
from platforms.discord_seen import REMEMBERED_CHANNELS
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.recent import remember

log = logging.getLogger("platforms.discord")

REMOVED = "the bot was removed from the server"
DELETED = "the channel was deleted"
REFUSED = {
    50001: "the bot has no access to the channel",
    10003: DELETED,
    50007: "the user takes no direct messages from the bot",
}
"""Discord's codes for a write refused because the chat itself is closed to the bot, and what each says."""
THREAD_DELETED = "the thread was deleted"
THREAD_LEFT = "the bot was removed from the private thread"
REFUSED_IN_THREAD = {50001: "the bot has no access to the thread", 10003: THREAD_DELETED}
"""The same refused in a thread: that thread alone is lost (its channel's other threads may be written to)."""


def kept_out(thread: discord.Thread) -> bool:
    """Whether the bot, removed from the private ``thread``, can no longer read or write there: not if it manages
    threads in the thread's channel (Manage Threads there, or Administrator), which lets it into every private
    thread, member or not. Nor when that cannot be known (discord.py holds not the thread's channel, or not the
    bot's member): the work goes on, and its first write Discord refuses tells the loss (`Membership.writing`), where
    stopping it would lose work the bot may still finish."""
    me = thread.guild.me
    if me is None:
        return False
    try:
        return not thread.permissions_for(me).manage_threads
    except discord.ClientException:  # the thread's channel is not held
        return False


@dataclass(frozen=True)
class Access:
    """A queued change of the bot's access to ``chats`` (as the gateway knows them): ``lost`` says why it can no
    longer write there; None, it may again. With ``thread``, the loss is that thread's alone, of the one chat."""

    chats: tuple[str, ...]
    lost: str | None
    thread: str | None = None


class Membership:
    """The chats the gateway knows and those it was told the bot can no longer write to, for one adapter whose
    events queue takes the changes (``queue``)."""

    def __init__(self, queue: Callable[[Access], None]) -> None:
        self._queue = queue
        self._lost: ChatLost | None = None
        self._known: OrderedDict[str, None] = OrderedDict()
        self._threads: OrderedDict[str, str] = OrderedDict()
        """The chat of each thread the gateway knows, by the thread's id (`discord_inbound.chat_of`)."""
        self._gone: OrderedDict[str, None] = OrderedDict()
        """Chats and threads (by the thread's own id) told lost."""
        self._pending: set[str] = set()
        """Chats and threads whose loss is queued, not told yet: their refusals meanwhile queue nothing more."""

    def bind(self, lost: ChatLost) -> None:
        self._lost = lost

    def knows(self, chat_id: str) -> None:
        """The gateway has a session in the chat or thread (its message handed over, its answer written, its
        thread stored)."""
        remember(self._known, chat_id, None, REMEMBERED_CHANNELS)

    def knows_thread(self, chat_id: str, thread_id: str) -> None:
        """The gateway has a session in thread ``thread_id`` of ``chat_id``: both are known, and the thread's chat
        (`thread_chat`)."""
        self.knows(chat_id)
        self.knows(thread_id)
        remember(self._threads, thread_id, chat_id, REMEMBERED_CHANNELS)

    def thread_chat(self, thread_id: int) -> str | None:
        """The chat of thread ``thread_id``, if the gateway knows it (`knows_thread`); None for any other channel."""
        return self._threads.get(str(thread_id))

    def removed(self, guild: discord.Guild) -> None:
        """The bot was removed from ``guild``: each of its channels the gateway knows is lost."""
        self._losing([str(c.id) for c in guild.channels if str(c.id) in self._known], REMOVED)

    def deleted(self, channel: discord.abc.GuildChannel) -> None:
        if str(channel.id) in self._known:
            self._losing([str(channel.id)], DELETED)

    def thread_lost(self, chat_id: str, thread_id: str, why: str) -> None:
        """The bot can no longer write in thread ``thread_id`` of ``chat_id`` (deleted, or the bot removed from
        it): its work alone is lost, if the gateway knows it."""
        if thread_id in self._known:
            self._losing_thread(chat_id, thread_id, why)

    def back(self, guild: discord.Guild) -> None:
        """The bot was added to ``guild`` (back): a later loss is told. Not when an outage of it ends: a channel
        hidden from the bot stays so (its next message handed over says when it is not)."""
        if chats := tuple(str(c.id) for c in guild.channels if str(c.id) in self._known):
            self._queue(Access(chats, None))

    def queue_dropped(self) -> None:
        """The adapter's events queue was dropped (a new start): the losses it held are no longer pending."""
        self._pending.clear()

    @contextlib.contextmanager
    def writing(self, chat_id: str, thread_id: str | None) -> Iterator[None]:
        """Around a write to the chat (in ``thread_id``, if any): the chat is known, and a write Discord refuses as
        the chat closed to the bot (`REFUSED`) queues its loss, unless told or queued already; in a thread, the
        thread's alone (`REFUSED_IN_THREAD`), unless its chat was told lost, which stopped its threads too."""
        self.knows(chat_id)
        if thread_id is not None:
            self.knows_thread(chat_id, thread_id)
        try:
            yield
        except DeliveryError as error:
            cause = error.__cause__
            code = cause.code if isinstance(cause, discord.HTTPException) else None
            if chat_id in self._gone:
                raise
            if thread_id is None and (why := REFUSED.get(code)) is not None:
                self._losing([chat_id], why)
            elif thread_id is not None and (why := REFUSED_IN_THREAD.get(code)) is not None:
                self._losing_thread(chat_id, thread_id, why)
            raise

    def handed_over(self, chat_id: str, thread_id: str | None = None) -> bool:
        """A message of the chat (in ``thread_id``, if any) was handed over, in the order of the events: someone
        writes there, the bot may too. Whether the chat was told lost."""
        self.knows(chat_id)
        if thread_id is not None:
            self.knows_thread(chat_id, thread_id)
            self._gone.pop(thread_id, None)  # a private thread the bot was added back to
        if chat_id not in self._gone:
            return False
        del self._gone[chat_id]
        return True

    async def tell(self, access: Access) -> None:
        """Tell the gateway of ``access``, in the order of the events; a chat lost already is not told again. What
        the gateway fails on (its store refused the stop) is logged, and the chat is told at its next refusal."""
        if access.lost is None:
            if again := [chat for chat in access.chats if self.handed_over(chat)]:
                log.info("discord: the bot may write to chat(s) %s again", ", ".join(again))
            return
        for chat in access.chats:
            gone = chat if access.thread is None else access.thread
            self._pending.discard(gone)
            if self._lost is None or gone in self._gone or chat in self._gone:
                continue
            try:
                await self._lost(chat, access.lost, thread_id=access.thread)
            except Exception:
                where = chat if access.thread is None else f"{chat} thread {access.thread}"
                log.warning("discord: could not stop the work of chat %s, which the bot can no longer write to (%s)",
                            where, access.lost, exc_info=True)
                continue
            remember(self._gone, gone, None, REMEMBERED_CHANNELS)

    def _losing(self, chats: Iterable[str], why: str) -> None:
        if lost := tuple(c for c in chats if c not in self._pending):
            self._pending.update(lost)
            self._queue(Access(lost, why))

    def _losing_thread(self, chat_id: str, thread_id: str, why: str) -> None:
        if thread_id not in self._pending and thread_id not in self._gone:
            self._pending.add(thread_id)
            self._queue(Access((chat_id,), why, thread_id))
