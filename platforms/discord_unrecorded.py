"""What a Discord stop leaves unrecorded: messages the next start reads back, slash commands it answers.

Apart from the adapter (`platforms.discord`) because it is the one account of what a stop did not hand
over, kept from the event a stop first leaves until its answers go out, and the one place that decides
what becomes of each: Discord sends an event once and never again.
"""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

from platforms import discord_commands
from platforms.base import Inbound
from platforms.discord_seen import LastSeen

Item = tuple[Inbound | None, int, int]
"""A queued event: what to hand over (None: a message not for the bot), its channel and message id (0: none)."""


class Unrecorded:
    """The events one start's stop left unrecorded, and the channels held back behind them."""

    def __init__(self) -> None:
        self.not_taken: list[Inbound] = []
        """Slash commands a stop left unrecorded: told so through their interaction (`tell_not_taken`)."""
        self.cut_off: list[Inbound] = []
        """Slash commands whose hand-over a stop cancelled midway, which the gateway may have recorded: told they
        may be answered after the restart (`Handing`)."""
        self.held_back: set[int] = set()
        """Channels where a stop left a message unrecorded: what follows there waits for the next start
        too, behind it. Recorded, a later message would move the channel's last seen past it, losing it."""

    def left(self, item: Item, last_seen: LastSeen, *, cut_off: bool = False) -> None:
        """A stop leaves ``item`` unrecorded. A command is answered to be sent again: Discord never sends an
        interaction again, nor keeps it in a history. One ``cut_off`` (the stop cancelled the sink's call) may
        be recorded, and then answered after the next start: told so instead, or its user would be told no and
        then answered. A message is read back by the next start's catch-up (the inbox drops it if it was
        recorded), which reads only channels with a last message seen: one that has none yet (a first DM, a
        first mention) gets one just before the message, or the message would be lost."""
        inbound, channel_id, message_id = item
        if inbound is not None and inbound.is_command:
            (self.cut_off if cut_off else self.not_taken).append(inbound)
        if message_id and channel_id not in last_seen.last_seen:
            last_seen.seen(channel_id, message_id - 1)

    async def tell_not_taken(self, session: aiohttp.ClientSession | None, seconds: float,
                             settling: Callable[[str], float],
                             replied: Callable[[str], bool] = lambda _token: False) -> None:
        """Answer the commands left so far (`discord_commands.tell_not_taken`), within ``seconds``, but those cut
        off that the gateway answered already (``replied``); those left later are told at a later call."""
        commands, cut_off, self.not_taken, self.cut_off = self.not_taken, self.cut_off, [], []
        await discord_commands.tell_not_taken(commands, session, seconds, settling, cut_off, replied)
