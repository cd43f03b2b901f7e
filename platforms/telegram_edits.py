"""The order of a user's edits of their Telegram message, so that an older edit delivered after a newer one is
passed over.

Apart from the adapter (`platforms.telegram`) because both its modes use it and it is pure bookkeeping. A webhook's
updates come in no promised order (`platforms.telegram_webhook`): two edits of a message waiting for its turn,
delivered newest first, had the gateway change the message to the newer text, then back to the older one, and the
turn answered what the user had already corrected. Polling hands updates over in order, and passes over nothing.

An edit is placed by its ``edit_date`` (unix seconds), edits made in the same second by their update ids (Telegram
numbers a bot's updates in the order it makes them). Not by update ids alone: after a week without updates Telegram
numbers the next one at random.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

from aiogram.types import Message

from platforms.recent import remember

KEPT_FOR = 15 * 60.0
"""Seconds `LatestEdits` keeps a message's latest edit after hearing it: an update answered 500 comes again after
those that followed it, within minutes while the gateway is up. An older edit coming later still is passed over
only by the order recorded in the store (`platforms.telegram_webhook.EarlyEdits`)."""
MOST_KEPT = 10_000
"""Messages' latest edits `LatestEdits` keeps at most, however recent: only memory is bounded by it."""

EditOrder = tuple[int, int]
"""An edit's place among its message's edits: its ``edit_date``, then its update id."""


def order_of(message: Message, update_id: int) -> EditOrder:
    """The place of the edit ``message``, of update ``update_id``."""
    return message.edit_date or 0, update_id


class LatestEdits:
    """The `EditOrder` of the latest edit heard of each message edited lately, by any key of the message's, for
    `KEPT_FOR` seconds of ``monotonic`` after it was heard, and of `MOST_KEPT` messages at most."""

    def __init__(self, *, kept_for: float = KEPT_FOR, most: int = MOST_KEPT,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._latest: OrderedDict[Hashable, tuple[EditOrder, float]] = OrderedDict()
        """The latest edit's place and when it was heard; least recently heard first."""
        self._kept_for, self._most, self._monotonic = kept_for, most, monotonic

    def latest(self, message: Hashable) -> EditOrder | None:
        """The place of the latest edit of ``message`` heard, if it is still kept."""
        self._forget()
        kept = self._latest.get(message)
        return None if kept is None else kept[0]

    def heard(self, message: Hashable, order: EditOrder) -> None:
        """An edit of ``message`` placed at ``order`` has come: an earlier one is outdated from now on, also while
        this one is still being handed over (one the gateway refuses comes again, no older than itself)."""
        latest = self.latest(message)
        if latest is None or latest < order:
            remember(self._latest, message, (order, self._monotonic()), self._most)

    def _forget(self) -> None:
        now = self._monotonic()
        while self._latest and now - next(iter(self._latest.values()))[1] >= self._kept_for:
            self._latest.popitem(last=False)
