"""Editing and deleting a message the bot sent on Discord, or a command's answer through its interaction.

Apart from the adapter (`platforms.discord`) because both choose the same way between the channel's
route and the interaction's webhook (a message id the interactions know the token of,
`platforms.discord_interactions.Interactions.token_of`), and translate errors under the route taken
(`platforms.discord_errors`), the outbox's to log.
"""

from __future__ import annotations

from collections.abc import Callable

from platforms.base import NotFound, scalar_text
from platforms.discord_errors import answered, translate
from platforms.discord_interactions import MENTIONS, Interactions
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.formatting import discord_markdown

Channel = Callable[[str], discord.PartialMessageable]
"""The channel or thread of an id (the adapter's; `NetworkError` when it is not connected)."""


async def edit(interactions: Interactions, channel: Channel, chat_id: str, thread_id: str | None, message_id: str,
               text: str) -> None:
    """Replace a message's text; command answers are edited through their interaction."""
    text = scalar_text(text)
    target = thread_id or chat_id
    text = discord_markdown.render(text)
    reply_token = interactions.token_of(message_id)
    route = "PATCH /channels/{channel_id}/messages/{message_id}"
    # A 2xx discord.py cannot read is a NetworkError, not a refusal sent anew beside the message it changed.
    with answered() as answer:
        try:
            if reply_token is not None:
                route = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
                await interactions.webhook(reply_token).edit_message(int(message_id), content=text,
                                                                     allowed_mentions=MENTIONS)
            else:
                partial = channel(target).get_partial_message(int(message_id))
                await partial.edit(content=text, allowed_mentions=MENTIONS)
        except Exception as exc:
            raise translate(exc, route=route, chat_id=target, caller_logs=True, answer=answer) from exc


async def delete(interactions: Interactions, channel: Channel, chat_id: str, thread_id: str | None,
                 message_id: str) -> None:
    """Delete one of the bot's messages (a command answer through its interaction); one that is
    already gone counts as deleted."""
    target = thread_id or chat_id
    reply_token = interactions.token_of(message_id)
    route = "DELETE /channels/{channel_id}/messages/{message_id}"
    try:
        if reply_token is not None:
            route = "DELETE /webhooks/{application_id}/{token}/messages/{message_id}"
            await interactions.webhook(reply_token).delete_message(int(message_id))
        else:
            await channel(target).get_partial_message(int(message_id)).delete()
    except Exception as exc:
        error = translate(exc, route=route, chat_id=target, caller_logs=True)  # the outbox's to log
        if not isinstance(error, NotFound):
            raise error from exc
