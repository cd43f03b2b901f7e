"""Looking for a part the bot may have posted already, before the outbox sends it again
(`platforms.base.FindsSent`).

Every post carries a nonce with ``enforce_nonce`` (`platforms.discord_twins.nonce_of`), but Discord
checks a nonce only against the bot's posts of "the past few minutes": a part whose post lost its
answer and is sent again later, after an outage that outlasted those minutes, would be posted twice.
So the outbox asks first, and the part is found by its nonce among the bot's posts this process heard
over the gateway (their MESSAGE_CREATE). Discord keeps no nonce with a message (``GET
/channels/{id}/messages`` returns none), and a post's text does not tell it from another part of the
same words (the same short answer twice in a chat), which such a lookup would take for it and so never
post: a part the last process had in flight is not looked up after a restart, and one sent again later
than those minutes may show twice.

A follow-up answer to a slash command (``POST /webhooks/{application id}/{token}``) carries no nonce
at all: one Discord stored but answered with a 5xx (which discord.py no longer posts again itself,
`platforms.discord_answers`) is looked for in its channel's history (`find_answer`): a message of the
application's webhook, a follow-up of this interaction (``interaction_metadata.original_response_message_id``
is its first answer's id), in the part's words, posted after that first answer and at most
`CLOCK_SKEW` before the part was queued, and not one this process posted or found for another part (one
found is the part's from then on: another part in the same words, whose post Discord did not store, is
then posted). Two follow-ups of one answer in the same words, the first posted by a process that died,
may still be taken one for the other. Where the bot cannot read the channel (no View Channel or Read
Message History, an app installed by a user where the bot is no member) the lookup cannot tell
(`Forbidden`) and the part is sent, as it was before. The first part of an answer replaces the
"thinking…" response, which sending again changes nothing: it is not looked for while this process knows
the interaction still shows "thinking…". Posted by a process that died before it heard the answer, it is
looked for after the restart, and found as the interaction's first answer when that is in the part's
words and no follow-up came after it (sent again, it went as a follow-up: the answer showed twice). Here
too a part in the same words as the first answer, the first one a new process sends for the interaction,
may be taken for it.

Apart from the adapter (`platforms.discord`) because it is one concept, the lookup and what it remembers.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timezone

from platforms.base import Outbound
from platforms.discord_errors import translate
from platforms.discord_interactions import Interactions
from platforms.discord_twins import nonce_of
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.formatting import discord_markdown
from platforms.recent import remember

REMEMBERED = 10_000
"""Nonces of posts heard: far more than the parts whose answer can be lost at once."""
CLOCK_SKEW = 60.0
"""Seconds before the part was queued that a follow-up is still looked for: Discord's clock and ours may differ."""
LOOKUP_MESSAGES = 500
"""Messages of the channel read at most for one follow-up (five pages): past that it is sent."""


class Posted:
    """The bot's posts this process heard over the gateway (their MESSAGE_CREATE), by nonce: each one's id and the id
    of the channel it was posted in (a locked thread's answer, in the thread's channel: `platforms.discord_locked`)."""

    def __init__(self) -> None:
        self._ids: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def heard(self, nonce: int | str | None, message_id: int, channel_id: int) -> None:
        if nonce is not None:
            remember(self._ids, str(nonce), (message_id, channel_id), REMEMBERED)

    def get(self, nonce: str | None) -> tuple[int, int] | None:
        return None if nonce is None else self._ids.get(nonce)


def findable(interactions: Interactions, message: Outbound) -> bool:
    """Whether `find_sent` or `find_answer` can find ``message``: not the next part of an answer to a
    slash command whose interaction this process knows shows "thinking…", which replaces it (sending it
    again changes nothing)."""
    return not (message.reply_token and interactions.unanswered(message.reply_token))


def find_sent(posted: Posted, message: Outbound) -> tuple[str, str] | None:
    """The id of the bot's message posted for ``message`` that this process heard, and of the channel it is in; or
    None."""
    known = posted.get(nonce_of(message.idempotency_key))
    return None if known is None else (str(known[0]), str(known[1]))


async def find_answer(interactions: Interactions, channel: discord.abc.Messageable, message: Outbound,
                      since: float) -> str | None:
    """The id of the follow-up posted for ``message``, an answer to a slash command, in ``channel`` (the
    interaction's), or None. Raises `NotFound` when the interaction's token is gone (its part then went
    to the channel, as `DiscordAdapter.send` does), `Forbidden` when the bot cannot read the channel, and
    the other `DeliveryError`s of the calls."""
    assert message.reply_token is not None
    route = "GET /webhooks/{application_id}/{token}/messages/@original"
    try:
        first = await interactions.first_answer(message.reply_token)
        if first is None:  # still "thinking…": nothing of the answer was posted
            return None
        route = "GET /channels/{channel_id}/messages"
        application = int(message.reply_token.split(":", 1)[0])
        content = discord_markdown.render(message.text).strip()  # Discord trims a message's content
        after = discord.Object(max(first, _snowflake(since - CLOCK_SKEW)))
        followed = False  # a follow-up of this interaction: its first answer was settled before
        async for found in channel.history(limit=LOOKUP_MESSAGES, after=after, oldest_first=True):
            metadata = found.interaction_metadata
            if found.webhook_id != application or metadata is None or metadata.original_response_message_id != first:
                continue
            followed = True
            if found.content.strip() == content \
                    and interactions.posted_for(found.id) in (None, message.idempotency_key):
                interactions.claim(found.id, message.idempotency_key)
                return str(found.id)
    except Exception as exc:
        raise translate(exc, route=route, chat_id=message.thread_id or message.chat_id) from exc
    if not followed and interactions.claim_first(message.reply_token, content):
        return str(first)
    return None


def _snowflake(epoch: float) -> int:
    return discord.utils.time_snowflake(datetime.fromtimestamp(max(epoch, discord.utils.DISCORD_EPOCH / 1000),
                                                               timezone.utc))
