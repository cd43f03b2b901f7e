"""A member's deletion of their Discord message, told to the gateway (`platforms.base.HearsDeletions`).

Apart from the adapter (`platforms.discord`) because it is the one reading of ``MESSAGE_DELETE`` and
``MESSAGE_DELETE_BULK`` (a moderator's purge) into deletions, and of where each goes. The adapter queues them
among the messages and edits, so that a deletion comes after its message, and hands them over in that order.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from platforms import discord_inbound
from platforms.base import Inbound, MessageDeleted
from platforms.discord_handover import by_either_key, until_recorded
from platforms.discord_inbound import ThreadChat
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning

REMEMBERED_DELETIONS = 1000
"""How many deletions that dropped nothing the adapter keeps, newest last: a message handed over after its own
deletion (`platforms.discord_catch_up.reread` reads a channel while live events flow) is then not handed over."""


@dataclass(frozen=True)
class Deletion:
    """A queued deletion of message ``message_id`` in channel (or thread, or DM) ``channel_id``."""

    channel_id: int
    message_id: int


def deletions(payload: discord.RawMessageDeleteEvent | discord.RawBulkMessageDeleteEvent) -> list[Deletion]:
    """The deletions a raw event tells, one per message (a bulk one's in the order they were sent), but of those
    discord.py holds as a bot's (the bot's own among them), which the gateway never took. One it does not hold
    goes all the same: the gateway finds nothing of it waiting."""
    if isinstance(payload, discord.RawBulkMessageDeleteEvent):
        ids, cached = sorted(payload.message_ids), payload.cached_messages
    else:
        ids, cached = [payload.message_id], [m for m in (payload.cached_message,) if m is not None]
    bots = {m.id for m in cached if m.author.bot}
    return [Deletion(payload.channel_id, i) for i in ids if i not in bots]


async def hand_over(deleted: MessageDeleted, deletion: Deletion, client: discord.Client | None,
                    thread_chat: ThreadChat, stopping: asyncio.Event) -> Literal["dropped", "missed", "left"]:
    """Tell the gateway of ``deletion`` in the conversation its message was handed over in, until it has recorded
    it (`until_recorded`: Discord never sends it again). The thread is the one discord.py holds, or the gateway
    knows (`discord_inbound.chat_of`), with no call to Discord: a message of a thread handed over made it known
    (`discord_membership.Membership.handed_over`), and a deletion comes after its message, but for one a channel's
    read again after the catch-up hands over: ``"missed"`` says the gateway dropped nothing (`REMEMBERED_DELETIONS`),
    ``"dropped"`` that it did, or the hand-over failed; ``"left"``, a stop left it unrecorded. A message of a thread
    Discord did not name in time (`platforms.discord.DiscordAdapter._in_thread`) was handed over as the channel's own,
    (thread, no thread): looked for there too, as the thread may be known by its deletion (`by_either_key`)."""
    channel = client.get_channel(deletion.channel_id) if client is not None else None
    chat_id, thread_id = discord_inbound.chat_of(channel, deletion.channel_id, thread_chat)
    message_id = str(deletion.message_id)

    found: list[bool] = []

    async def tell(_: Inbound) -> None:
        found.append(await by_either_key(lambda chat, thread: deleted("discord", chat, thread, message_id), chat_id,
                                         thread_id))

    # `until_recorded` names the event by its id alone: the message's, as an edit's is.
    named = Inbound(platform="discord", chat_id=chat_id, thread_id=thread_id, user_id="", user_name=None, text="",
                    event_id=message_id, message_id=message_id)
    if await until_recorded(tell, named, stopping) == "left":
        return "left"
    return "missed" if found and not found[-1] else "dropped"
