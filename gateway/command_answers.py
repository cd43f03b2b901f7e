"""Answering a chat command (or a refusal): journaling the answer, and settling the event it answers.

A command's answer goes to the chat and thread the command came from, keyed by the event so that
one answered before a restart is not answered again, and its event is settled only once the answer
is journaled. A plugin's command runs beside intake (its handler may take its time), counted so a
stop waits for it. Kept apart from `gateway.app`'s intake, which only decides that an event is a
command and hands it here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from gateway.commands import Command, Commands
from gateway.dead_letters import DeadLetterPolicy
from gateway.outbox import Outbox
from gateway.sessions import GatewaySession, quote_of
from gateway.store import Inbox
from gateway.turn_runner import TRACKS_TURN_IDS
from platforms.base import Inbound

log = logging.getLogger("gateway.app")  # intake's lines, wherever they are written from


def answer_key(inbound: Inbound) -> str:
    return f"cmd-{inbound.platform}-{inbound.event_id}"


class CommandAnswers:
    def __init__(self, outbox: Outbox, inbox: Inbox, commands: Commands, dead_letters: DeadLetterPolicy, *,
                 accepting: Callable[[], bool]) -> None:
        """``accepting()``: the gateway takes events (a plugin's answer failing while it stops is not counted)."""
        self._outbox, self._inbox, self._commands, self._dead_letters = outbox, inbox, commands, dead_letters
        self._accepting = accepting
        self.aside: set[asyncio.Task] = set()
        """Plugin commands being answered (`answer_aside`)."""

    def answer_aside(self, session: GatewaySession, inbound: Inbound, command: Command,
                     turn_id: str | None = None) -> None:
        """Run a plugin's command beside intake: its handler may take its time (another service to
        ask), and no other chat's message waits for it. Its event is settled once it is answered,
        so a stop before then runs it again after the next start."""
        async def answer() -> None:
            try:
                self.answer(inbound, await self._commands.run(session, command, inbound), turn_id)
            except Exception as exc:
                if self._accepting():
                    self._dead_letters.failed(inbound, turn_id, exc)
                else:  # stopping: the event stays unsettled, and is handled again after the next start
                    log.warning("answering %s event %s failed while stopping: %s", inbound.platform,
                                inbound.event_id, type(exc).__name__)

        task = asyncio.ensure_future(answer())
        self.aside.add(task)
        task.add_done_callback(self.aside.discard)

    def answer(self, inbound: Inbound, text: str, turn_id: str | None = None) -> None:
        """Answer a command (or a refusal): the event is handled once the answer is journaled."""
        self.send(inbound, text, turn_id)
        self._inbox.settle(inbound.platform, inbound.event_id)

    def send(self, inbound: Inbound, text: str, turn_id: str | None = None) -> None:
        """To the chat (and thread) the event came from, as its session's messages go. In a group it
        quotes the event: several members' commands and their answers interleave there. ``turn_id``:
        the id the event's caller reads it by, kept only where a caller follows turn ids (webhooks)."""
        self._outbox.enqueue(inbound.platform, inbound.chat_id, inbound.thread_id, text, kind="command",
                             key=answer_key(inbound), reply_token=inbound.reply_token, reply_to=quote_of(inbound),
                             turn_id=turn_id if inbound.platform in TRACKS_TURN_IDS else None)
