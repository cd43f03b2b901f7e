"""Looking for a part the bot may have posted already, before the outbox sends it again
(`platforms.base.FindsSent`).

Every post carries a nonce with ``enforce_nonce`` (`platforms.discord_twins.nonce_of`), but Discord
checks a nonce only against the bot's posts of "the past few minutes": a part sent again later — after
a restart, its post in flight when the process died, or after an outage that lost the post's answer and
outlasted those minutes — would be posted twice. So the outbox asks first. Discord keeps no nonce with a
message: only the post's answer and its MESSAGE_CREATE carry it, ``GET /channels/{id}/messages`` returns
none. The part is found by its nonce among the bot's messages this process heard over the gateway
(`Posted`), else by what it says: the bot's message in the part's channel or thread, posted since the
part was journaled (`CLOCK_SKEW` earlier, for the clocks), with the part's rendered content and, if the
part quotes a message, no other quoted. At most `LOOKUP_MESSAGES` are read, oldest first, a page of a
hundred a request, which discord.py paces by the channel's bucket as it does every read; the outbox
spaces the lookups of all chats (`LOOKUP_INTERVAL`).

Not told apart after a restart: another part of the same content posted in the same place since this one
was journaled (two identical answers queued together), which is then taken for it, and this part is not
posted. This process's own posts are known by nonce and never taken for another's.

Apart from the adapter (`platforms.discord`) because it is one concept, the lookup and what it remembers.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from datetime import datetime, timezone

from platforms.base import Outbound
from platforms.discord_errors import translate
from platforms.discord_twins import nonce_of
from platforms.discord_urls import discord  # discord.py, imported there without its audioop warning
from platforms.recent import remember

LOOKUP_MESSAGES = 500
"""Messages read at most, since the part was journaled: five pages of Discord's history."""
CLOCK_SKEW = 60.0
"""Seconds before the part was journaled that the read begins: Discord's clock and ours may differ."""
LOOKUP_INTERVAL = 0.2
"""Seconds between two lookups in all chats (`platforms.pacing.Pacing.account_lookup_interval`): after an
outage every chat whose post lost its answer looks at once, and Discord allows a bot 50 requests a second
in all; five lookups a second of at most five pages each leave half of them to the rest."""
REMEMBERED = 10_000
"""Nonces of posts heard: far more than the parts whose answer can be lost at once."""
HISTORY = "GET /channels/{channel_id}/messages"


class Posted:
    """The bot's posts this process heard over the gateway (their MESSAGE_CREATE), by nonce."""

    def __init__(self) -> None:
        self._ids: OrderedDict[str, int] = OrderedDict()

    def heard(self, nonce: int | str | None, message_id: int) -> None:
        if nonce is not None:
            remember(self._ids, str(nonce), message_id, REMEMBERED)

    def get(self, nonce: str | None) -> int | None:
        return None if nonce is None else self._ids.get(nonce)

    def others(self, nonce: str | None) -> set[int]:
        """The messages known to be other parts'."""
        return {message_id for known, message_id in self._ids.items() if known != nonce}


def findable(message: Outbound) -> bool:
    """Whether `find_sent` can find ``message``: not an answer to a slash command, which goes through
    its interaction (`platforms.discord_interactions`): its first part replaces the "thinking…" response,
    which sending again changes nothing, and a follow-up is a webhook's message, not looked for."""
    return not message.reply_token


async def find_sent(client: discord.Client, posted: Posted, message: Outbound, content: str,
                    since: float) -> str | None:
    """The id of the bot's message posted for ``message`` (``content``: its text as `send` renders it)
    at or after the epoch time ``since``, or None (nothing read for one not `findable`). Raises a
    `DeliveryError` when Discord cannot be read (no permission to read the history: `Forbidden`)."""
    if not findable(message):
        return None
    nonce = nonce_of(message.idempotency_key)
    if (known := posted.get(nonce)) is not None:
        return str(known)
    target = message.thread_id or message.chat_id
    others = posted.others(nonce)
    after = datetime.fromtimestamp(max(since - CLOCK_SKEW, 0.0), timezone.utc)
    history = client.get_partial_messageable(int(target)).history(limit=LOOKUP_MESSAGES, after=after,
                                                                   oldest_first=True)
    try:
        async with contextlib.aclosing(history) as found:
            async for candidate in found:
                if candidate.author == client.user and candidate.id not in others \
                        and candidate.content.strip() == content.strip() and _quotes(candidate, message):
                    return str(candidate.id)
    except Exception as exc:
        raise translate(exc, route=HISTORY, chat_id=target) from exc
    return None


def _quotes(candidate: discord.Message, message: Outbound) -> bool:
    """Whether ``candidate`` may be the post of ``message`` by what it quotes: the message the part
    replies to, or none (the part quotes none, or its quoted message was deleted before it was posted)."""
    quoted = candidate.reference.message_id if candidate.reference is not None else None
    return quoted is None or (message.reply_to is not None and quoted == int(message.reply_to))
