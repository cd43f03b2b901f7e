"""A member's deletion of their Discord message, told to the gateway (`platforms.base.HearsDeletions`).

Apart from the adapter (`platforms.discord`) because it is the one reading of ``MESSAGE_DELETE`` and
``MESSAGE_DELETE_BULK`` (a moderator's purge) into deletions, and of where each goes. The adapter queues them
among the messages and edits, so that a deletion comes after its message, and hands them over in that order.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from platforms import discord_inbound
from platforms.base import Inbound, MessageDeleted
from platforms.discord_handover import until_recorded
from platforms.discord_inbound import ThreadChat
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning


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
                    thread_chat: ThreadChat, stopping: asyncio.Event) -> None:
    """Tell the gateway of ``deletion`` in the conversation its message was handed over in, until it has recorded
    it (`until_recorded`: Discord never sends it again). The thread is the one discord.py holds, or the gateway
    knows (`discord_inbound.chat_of`), with no call to Discord: a message of a thread handed over made it known
    (`discord_membership.Membership.handed_over`), and a deletion comes after its message."""
    channel = client.get_channel(deletion.channel_id) if client is not None else None
    chat_id, thread_id = discord_inbound.chat_of(channel, deletion.channel_id, thread_chat)
    message_id = str(deletion.message_id)

    async def tell(_: Inbound) -> None:
        await deleted("discord", chat_id, thread_id, message_id)

    # `until_recorded` names the event by its id alone: the message's, as an edit's is.
    named = Inbound(platform="discord", chat_id=chat_id, thread_id=thread_id, user_id="", user_name=None, text="",
                    event_id=message_id, message_id=message_id)
    await until_recorded(tell, named, stopping)
