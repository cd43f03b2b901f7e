"""Seeing another process logged in with this bot's token.

Discord sends every session of a bot each event, so two gateways on one token (the state
lock only guards one state directory) both answer every message, and nothing refuses the
second login. Each does hear the other's replies, though: messages by this bot carrying a
nonce it never sent. Every send of ours carries one (`nonce_of`), noted
here before the request goes out, since its MESSAGE_CREATE may arrive before the answer.
Messages without a nonce (interaction answers, other programs' posts) say nothing either way.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict

log = logging.getLogger("platforms.discord")

REMEMBERED = 10_000
"""Nonces kept: far more than the sends whose echo can still be on its way."""

TWIN = ("discord: message %s in channel %s was posted as this bot by another process: another gateway"
        " (or program) is logged in with the same bot token, Discord sends each message to both, and"
        " each is answered twice; stop one of them or give it a bot of its own (logged once per start)")


def nonce_of(idempotency_key: str | None) -> str | None:
    # Discord nonces are at most 25 characters; a digest keeps any key stable and short.
    if idempotency_key is None:
        return None
    return hashlib.blake2b(idempotency_key.encode(), digest_size=12).hexdigest()


class Twins:
    def __init__(self) -> None:
        self._sent: OrderedDict[str, None] = OrderedDict()
        self._told = False

    def sending(self, nonce: str | None) -> None:
        if nonce is not None:
            self._sent[nonce] = None
            self._sent.move_to_end(nonce)
            while len(self._sent) > REMEMBERED:
                self._sent.popitem(last=False)

    def heard(self, message_id: int, channel_id: int, nonce: int | str | None) -> None:
        """A message by this bot arrived over the gateway."""
        if nonce is None or str(nonce) in self._sent or self._told:
            return
        self._told = True
        log.error(TWIN, message_id, channel_id)
