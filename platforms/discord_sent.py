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

Apart from the adapter (`platforms.discord`) because it is one concept, the lookup and what it remembers.
"""

from __future__ import annotations

from collections import OrderedDict

from platforms.base import Outbound
from platforms.discord_twins import nonce_of
from platforms.recent import remember

REMEMBERED = 10_000
"""Nonces of posts heard: far more than the parts whose answer can be lost at once."""


class Posted:
    """The bot's posts this process heard over the gateway (their MESSAGE_CREATE), by nonce."""

    def __init__(self) -> None:
        self._ids: OrderedDict[str, int] = OrderedDict()

    def heard(self, nonce: int | str | None, message_id: int) -> None:
        if nonce is not None:
            remember(self._ids, str(nonce), message_id, REMEMBERED)

    def get(self, nonce: str | None) -> int | None:
        return None if nonce is None else self._ids.get(nonce)


def findable(message: Outbound) -> bool:
    """Whether `find_sent` can find ``message``: not an answer to a slash command, which goes through
    its interaction (`platforms.discord_interactions`): its first part replaces the "thinking…" response,
    which sending again changes nothing, and a follow-up is a webhook's message, not looked for."""
    return not message.reply_token


def find_sent(posted: Posted, message: Outbound) -> str | None:
    """The id of the bot's message posted for ``message`` that this process heard, or None."""
    if not findable(message):
        return None
    known = posted.get(nonce_of(message.idempotency_key))
    return None if known is None else str(known)
