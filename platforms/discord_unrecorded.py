"""What a Discord stop leaves unrecorded: messages the next start reads back, slash commands it answers.

Apart from the adapter (`platforms.discord`) because it is the one account of what a stop did not hand
over, kept from the event a stop first leaves until its answers go out, and the one place that decides
what becomes of each: Discord sends an event once and never again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp

from platforms import discord_commands
from platforms.base import Inbound, Outbound, Sent
from platforms.discord_deletions import Deletion
from platforms.discord_membership import Access
from platforms.discord_opened import Unsure
from platforms.discord_seen import LastSeen

Item = tuple[Inbound | None, int, int]
"""A queued event: what to hand over (None: a message not for the bot), its channel and message id (0: none)."""


@dataclass(frozen=True)
class Edit:
    """A queued user's edit of their message (``MESSAGE_UPDATE``), read as the message is (`discord_inbound`): its
    chat, thread, message id and text as the gateway knows them (`platforms.base.MessageEdited`)."""

    message: Inbound


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
        self.telling: set[asyncio.Task[None]] = set()
        """Answers under way to commands the gateway failed on (`not_handled`): the stop waits for them, within its
        time for its own answers, as the session they go by closes after it."""

    def not_handled(self, command: Inbound, answer: Callable[[Outbound], Awaitable[Sent]]) -> None:
        """The gateway failed on ``command`` (a bug: dropped, `discord_handover.until_recorded`): told so through
        ``answer`` (the adapter's `send`), apart from the events after it, which do not wait for the answer (one
        whose acknowledgement is unsure waits for Discord's window to end, `discord_commands.tell_not_handled`)."""
        task = asyncio.ensure_future(discord_commands.tell_not_handled(command, answer))
        self.telling.add(task)
        task.add_done_callback(self.telling.discard)

    def left(self, item: Item | Edit | Deletion | Access | Unsure, last_seen: LastSeen, *,
             cut_off: bool = False) -> None:
        """A stop leaves ``item`` unrecorded. A command is answered to be sent again: Discord never sends an
        interaction again, nor keeps it in a history. One ``cut_off`` (the stop cancelled the sink's call) may
        be recorded, and then answered after the next start: told so instead, or its user would be told no and
        then answered. A message is read back by the next start's catch-up (the inbox drops it if it was
        recorded), which reads only channels with a last message seen: one that has none yet (a first DM, a
        first mention) gets one just before the message, or the message would be lost. An edit is dropped:
        Discord never sends it again, and a message still waiting for its turn is answered as the gateway has it.
        So is a deletion (that message answered after the restart all the same), and a change of the bot's access
        to chats: the gateway stops, and the chats' next refusals tell it. A message held for the store
        (`discord_opened.Unsure`) is read back so too; an edit held so is dropped."""
        if isinstance(item, Edit | Deletion | Access) or isinstance(item, Unsure) and item.edit:
            return
        if isinstance(item, Unsure):
            item = (None, item.channel_id, item.message_id)
        inbound, channel_id, message_id = item
        if inbound is not None and inbound.is_command:
            (self.cut_off if cut_off else self.not_taken).append(inbound)
        if message_id and channel_id not in last_seen.last_seen:
            last_seen.seen(channel_id, message_id - 1)

    async def tell_not_taken(self, session: aiohttp.ClientSession | None, seconds: float,
                             settling: Callable[[str], float],
                             replied: Callable[[str], bool] = lambda _token: False,
                             acknowledged: Callable[[str], bool] = lambda _token: True) -> None:
        """Answer the commands left so far (`discord_commands.tell_not_taken`), within ``seconds``, but those cut
        off that the gateway answered already (``replied``), nor through an interaction Discord did not
        acknowledge (``acknowledged``); those left later are told at a later call. The
        answers to commands the gateway failed on (`not_handled`) get the same ``seconds``, and are given up after."""
        loop = asyncio.get_running_loop()
        ends = loop.time() + seconds
        commands, cut_off, self.not_taken, self.cut_off = self.not_taken, self.cut_off, [], []
        await discord_commands.tell_not_taken(commands, session, seconds, settling, cut_off, replied, acknowledged)
        if telling := set(self.telling):
            await asyncio.wait(telling, timeout=max(ends - loop.time(), 0))
            for task in telling:
                task.cancel()
            await asyncio.gather(*telling, return_exceptions=True)
