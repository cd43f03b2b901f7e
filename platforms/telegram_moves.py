"""Webhook mode: a supergroup's first messages delivered before the service messages of the
upgrade that made it.

When a group becomes a supergroup, Telegram posts two service messages (``migrate_to_chat_id``
in the old chat, ``migrate_from_chat_id`` as the supergroup's first message) that tell the
adapter to hand the supergroup's messages over under the group's id, so the conversation goes
on. Polling serves updates in order, so they come first. A webhook gets updates over several
connections at once, so a message written in the supergroup right after the upgrade may come
before them, and would start a conversation of its own.

`UpgradeWait` holds such a message until the upgrade is known or ``wait`` seconds have passed.
It can only tell a supergroup that may have just been upgraded by its message ids: they start
at 1 in each supergroup, with the ``migrate_from_chat_id`` service message, so only messages
numbered up to ``young`` in a supergroup the adapter knows nothing about are held. Once one was
handed over without an upgrade, that supergroup's messages are no longer held (this process
remembers the latest 10,000 such supergroups). So a brand-new supergroup's first message for the
bot waits ``wait`` seconds, once per process; and a message whose upgrade Telegram delivers
more than ``wait`` seconds later (after a failed delivery, say) is handed over under the
supergroup's own id: it starts a conversation of its own, and the messages after the service
message go on with the group's.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping

from aiogram.types import Message

log = logging.getLogger("platforms.telegram")

WAIT = 5.0
"""Seconds a young supergroup's message waits for its upgrade to be known."""
YOUNG = 100
"""Messages with an id up to this, in a supergroup not known to be upgraded or not, are held."""
_REMEMBERED = 10_000


class UpgradeWait:
    def __init__(self, *, wait: float = WAIT, young: int = YOUNG) -> None:
        self.wait, self.young = wait, young
        self.held = 0
        """Messages waiting now."""
        self._changed = asyncio.Event()
        self._unmoved: OrderedDict[str, None] = OrderedDict()
        """Supergroups a message was handed over from under their own id."""

    def moved(self) -> None:
        """A move was recorded: the messages held look again."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def group_of(self, message: Message, moved_from: Mapping[str, str]) -> str | None:
        """The group whose conversation ``message`` goes on (``moved_from`` maps a supergroup's id
        to it), after waiting for the upgrade when the message may have come before it; None for
        a message of any other chat, and of a supergroup no upgrade was heard of in time."""
        chat = str(message.chat.id)
        if (message.chat.type != "supergroup" or chat in moved_from or chat in self._unmoved
                or message.message_id > self.young):
            return moved_from.get(chat)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.wait
        self.held += 1
        try:
            while chat not in moved_from and (remaining := deadline - loop.time()) > 0:
                try:
                    await asyncio.wait_for(self._changed.wait(), remaining)
                except TimeoutError:
                    pass
        finally:
            self.held -= 1
        if chat in moved_from:
            return moved_from[chat]
        log.info("telegram: no upgrade made the supergroup %s within %g s of its message %d; its messages start a "
                 "conversation of their own", chat, self.wait, message.message_id)
        self._unmoved[chat] = None
        while len(self._unmoved) > _REMEMBERED:
            self._unmoved.popitem(last=False)
        return None
