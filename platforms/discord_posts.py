"""Posting a part or a file in a Discord channel or thread, with the part's nonce.

Apart from the adapter (`platforms.discord`) because it is the one way a message of the bot's reaches a
channel (an answer through a command's interaction goes by `platforms.discord_interactions`): the nonce
noted first (`platforms.discord_twins`), the Markdown rendered, the reply quoted, the channel remembered
as one the bot posted in (`joins`). Every SDK error is translated (`platforms.discord_errors`), the outbox's to log; a
2xx answer discord.py cannot read is a post made when it names the message's id, else a `NetworkError`
(`discord_errors.answered`).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from platforms.base import Outbound, OutboundFile, Sent, scalar_text
from platforms.discord_errors import answered, made_all_the_same, translate
from platforms.discord_interactions import MENTIONS
from platforms.discord_seen import REMEMBERED_CHANNELS
from platforms.discord_twins import Twins, nonce_of
from platforms.discord_unquoted import RefusedReplies
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.formatting import blank, discord_markdown
from platforms.recent import remember

ROUTE = "POST /channels/{channel_id}/messages"
CLOSED_TO_THE_BOT = frozenset({50001, 50007})
"""403 codes refusing the channel itself, not a reply in it: Missing Access (the bot removed from the server, or the
channel hidden from it), Cannot send messages to this user (a DM's). A post unquoted is refused all the same."""
THREAD_LOCKED = frozenset({50083, 160005})
"""403 codes of a post a locked thread refuses (``Thread is archived``, ``Thread is locked``:
`platforms.discord_locked`), unquoted too."""

Channel = Callable[[str], discord.PartialMessageable]
"""The channel or thread of an id (the adapter's; `NetworkError` when it is not connected)."""


async def post(channel: Channel, twins: Twins, posted_in: OrderedDict[int, None], refused: RefusedReplies,
               message: Outbound) -> Sent:
    """Post one part in the message's channel or thread, its text already made encodable."""
    target = message.thread_id or message.chat_id
    nonce = nonce_of(message.idempotency_key)
    twins.sending(nonce)
    content = discord_markdown.render(message.text)

    async def send(reference: discord.MessageReference | None) -> discord.Message:
        return await channel(target).send(content, silent=message.silent, nonce=nonce, allowed_mentions=MENTIONS,
                                          reference=reference)  # type: ignore[arg-type]

    with answered() as answer:
        try:
            sent = await _replying(send, message, target, refused)
        except Exception as exc:
            if (sent := made_all_the_same(exc, answer, route=ROUTE, chat_id=target)) is None:
                raise translate(exc, route=ROUTE, chat_id=target, caller_logs=True, answer=answer) from exc
    if joins(message):
        remember(posted_in, int(target), None, REMEMBERED_CHANNELS)
    return Sent(str(sent))


async def post_file(channel: Channel, twins: Twins, posted_in: OrderedDict[int, None], refused: RefusedReplies,
                    message: Outbound, file: OutboundFile) -> Sent:
    """Post the file in the message's channel or thread, the caption rendered as a part's
    content is, with the part's nonce: Discord drops a repeated upload of it within a few minutes.
    A reply, as `post`'s, when the part quotes a message (``reply_to``)."""
    target = message.thread_id or message.chat_id
    nonce = nonce_of(message.idempotency_key)
    twins.sending(nonce)
    caption = discord_markdown.render(blank.caption(scalar_text(message.text))) or None

    async def send(reference: discord.MessageReference | None) -> discord.Message:
        upload = await asyncio.to_thread(discord.File, file.path, filename=file.name)  # closed by each send
        try:
            return await channel(target).send(caption, file=upload, silent=message.silent, nonce=nonce,
                                              allowed_mentions=MENTIONS, reference=reference)  # type: ignore[arg-type]
        finally:
            upload.close()

    with answered() as answer:
        try:
            sent = await _replying(send, message, target, refused)
        except Exception as exc:
            if (sent := made_all_the_same(exc, answer, route=ROUTE, chat_id=target)) is None:
                raise translate(exc, route=ROUTE, chat_id=target, caller_logs=True, answer=answer) from exc
    if joins(message):
        remember(posted_in, int(target), None, REMEMBERED_CHANNELS)
    return Sent(str(sent))


def joins(message: Outbound) -> bool:
    """Whether posting ``message`` makes its channel or thread one the bot posted in, whose messages are for it
    unaddressed. Not the answer to a command in a thread, as on Slack, nor a refusal (sent as one): a stranger's
    refused mention in people's thread had the bot answer the next member's reply there, unaddressed, with a
    model call. A channel's does: there it only lets bare ``!commands`` in."""
    return message.kind != "command" or message.thread_id is None


async def _replying(send: Callable[[discord.MessageReference | None], Awaitable[discord.Message]],
                    message: Outbound, target: str, refused: RefusedReplies) -> int:
    """The id of the message ``send`` posted: a reply when ``message`` quotes one (`_quote`). Discord refuses a
    reply (403, code 160002) where the bot lacks Read Message History, though it takes the bot's posts: the
    answer was lost, and with it every later part the quote passed on to. Posted unquoted then, and at once while
    the channel is remembered so (`platforms.discord_unquoted`); where the post is refused too (no Send Messages),
    that refusal is the one raised, as is one of the channel itself (`CLOSED_TO_THE_BOT`) or of a locked thread
    (`THREAD_LOCKED`): posting each quoted part (and file) twice doubled the refused calls Discord counts toward
    barring the bot."""
    reference = None if refused.refused(target) else _quote(message, target)
    try:
        return (await send(reference)).id
    except discord.Forbidden as exc:
        if reference is None or exc.code in CLOSED_TO_THE_BOT or exc.code in THREAD_LOCKED:
            raise
    sent = (await send(None)).id
    refused.learnt(target)
    return sent


def _quote(message: Outbound, target: str) -> discord.MessageReference | None:
    """A reply to the message ``message`` answers, without pinging its author (`MENTIONS`); posted
    all the same, as a plain message, if that message was deleted meanwhile."""
    return None if message.reply_to is None else discord.MessageReference(
        message_id=int(message.reply_to), channel_id=int(target), fail_if_not_exists=False)
