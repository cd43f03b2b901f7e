"""The newest message handed over from each Discord channel: what the catch-up at the next start reads
after (`platforms.discord_catch_up`), kept in the gateway's store.

Apart from the adapter (`platforms.discord`) because it is one concept, the last-seen bookkeeping.
Logged under ``platforms.discord``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from platforms.base import SeenRecorder
from platforms.recent import remember

log = logging.getLogger("platforms.discord")

REMEMBERED_CHANNELS = 10_000  # channels and threads posted in, most recent kept (as many as the gateway hands over)


class LastSeen:
    def __init__(self) -> None:
        self.last_seen: OrderedDict[int, int] = OrderedDict()
        """Channel -> the newest message handed over from it (see `seen`), least recently recorded first:
        the latest `REMEMBERED_CHANNELS`, ten times the channels a catch-up reads (its `MAX_CHANNELS`,
        the most recently active). One dropped is only recorded without the check that its message is
        newer than the one recorded before."""
        self._record_seen: SeenRecorder | None = None
        self.behind: set[int] = set()
        """Channels the last catch-up could not read or gave up on at its deadline: what was said there
        while the gateway was down is not handed over yet, so the last message seen stays put until a
        catch-up reads them (`caught_up`; the inbox drops what was answered live meanwhile)."""
        self._meanwhile: dict[int, int] = {}
        """Channels behind -> the newest message handed over there since: recorded once caught up."""

    def not_caught_up(self, channels: Iterable[int]) -> None:
        """A catch-up did not catch up on ``channels`` (none: one is about to begin, reading each channel
        from its last message seen)."""
        self.behind = set(channels)
        self._meanwhile = {c: m for c, m in self._meanwhile.items() if c in self.behind}

    def caught_up(self, channel_id: int) -> None:
        """What was said in the channel while the gateway was down is handed over at last: the newest
        message handed over there, by the catch-up or live meanwhile, is recorded."""
        self.behind.discard(channel_id)
        if (newest := self._meanwhile.pop(channel_id, None)) is not None:
            self.seen(channel_id, newest)

    def bind(self, last_seen: Mapping[str, str], seen: SeenRecorder) -> None:
        """The channels seen by earlier processes, caught up on at start (`platforms.discord_catch_up`)."""
        channels = sorted(((int(channel), int(message)) for channel, message in last_seen.items()),
                          key=lambda item: item[1])
        self.last_seen = OrderedDict(channels[-REMEMBERED_CHANNELS:])
        self._record_seen = seen

    def seen(self, channel_id: int, message_id: int) -> None:
        """Everything up to ``message_id`` in the channel is handed over (events go in order), so a
        catch-up starts after it."""
        if message_id <= self.last_seen.get(channel_id, 0):
            return
        if channel_id in self.behind:
            self._meanwhile[channel_id] = max(message_id, self._meanwhile.get(channel_id, 0))
            return
        remember(self.last_seen, channel_id, message_id, REMEMBERED_CHANNELS)
        # Written at every message, chatter not for the bot too, and not coalesced: one upsert in the
        # store's group commit (WAL, no fsync) costs ~50 µs of the loop (measured: 43-49 µs a message
        # on this project's 2-core machine), 0.5 ms a second for a channel of ten messages a second;
        # and so the cursor is as durable as the inbox at any stop, a SIGKILL too.
        if self._record_seen is not None:
            try:
                self._record_seen(str(channel_id), str(message_id))
            except Exception:  # at worst the next start asks for messages the inbox then drops
                log.exception("discord: could not record the last message seen in channel %s", channel_id)
