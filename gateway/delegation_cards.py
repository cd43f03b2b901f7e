"""A progress card for each background delegation, where the chat shows cards: its subagents
as they work, finalised when their results have been delivered (or stopped, or reported).

The card is the same kind of message as a turn's (`gateway.progress_card`), keyed by the
delegation, so one a crash left behind is still finalised after the restart.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable

from agent import Clock, new_id
from gateway.display import TurnDisplay
from gateway.notices import final_text
from gateway.outbox import Outbox
from gateway.progress_card import DELEGATE, ProgressCard
from gateway.progress_message import ProgressMessage
from gateway.sender import BACKOFF_FIRST, BACKOFF_MAX
from gateway.sessions import GatewaySession
from gateway.store import DelegationRow, split_session_key
from lifecycle import HostView

log = logging.getLogger("gateway.delegation_cards")


class DelegationCards:
    def __init__(self, outbox: Outbox, children: HostView, *, display: Callable[[str], TurnDisplay],
                 clock: Clock) -> None:
        self._outbox = outbox
        self._children = children
        self._display = display
        self._clock = clock
        self._cards: dict[str, ProgressCard] = {}
        self._began: dict[str, float] = {}
        """When each delegation dispatched by this process began, on the monotonic clock."""
        self._run_id = new_id("r-")
        """This process's, for its cards' edits: a card taken up again after a restart numbers its edits
        from the start, and under the earlier process's keys they would be taken for edits journaled
        already, and dropped, the card frozen until it is finalised."""
        self._finishing: dict[str, asyncio.Task[None]] = {}
        """Cards whose final edit the store refused (a full disk), each tried again until it is journaled."""

    def start(self, row: DelegationRow, session: GatewaySession, *, resumed: bool = False) -> None:
        """Show the delegation's card once it has run `display.progress_delay` seconds. ``resumed``:
        the delegation was dispatched by an earlier process, and its children run again now."""
        if not resumed:
            self._began.setdefault(row.delegation_id, self._clock.monotonic())
        display = self._display(session.platform)
        if display.progress != "card" or row.delegation_id in self._cards:
            return
        ids = {t.subagent_id for t in row.tasks}

        def children() -> list:
            sid = session.session_id
            return [c for c in (*self._children.recent(sid), *self._children.children(sid)) if c.subagent_id in ids]

        def counts() -> tuple[int, int]:
            live = sum(1 for c in self._children.children(session.session_id) if c.subagent_id in ids)
            return len(ids) - live, len(ids)

        card = ProgressCard(delay=display.progress_delay, heartbeat=display.notify_interval,
                            mode=display.long_running_notifications, clock=self._clock,
                            publish=self._message(row).publish, children=children, counts=counts)
        card.tool_started(DELEGATE)  # its headline counts the subagents done
        card.start()
        self._cards[row.delegation_id] = card

    def finish(self, row: DelegationRow, how: str, endings: str = "") -> None:
        """Finalise the card (``how``: done, stopped, failed or shutdown), also one a crash
        left behind before this process started. ``endings``: how those of its subagents that did not
        succeed ended, for a done card (`gateway.child_states.endings`). A final edit the store refuses
        (a full disk) is not raised: the delegation it describes is settled all the same (a turn's card is
        no part of its end either), and the edit is tried again, backing off, until it is journaled."""
        card = self._cards.pop(row.delegation_id, None)
        if card is not None:
            card.disarm()
        platform, chat_id, _ = split_session_key(row.session_key)
        delete = self._display(platform).progress_final == "delete"
        final = final_text(how, self._elapsed(row), subagents=len(row.tasks), endings=endings)
        try:
            self._message(row).finish(final, delete=delete)
        except sqlite3.Error as exc:
            log.warning("could not record the final edit of the card of delegation %s in %s chat %s (%s: %s):"
                        " it reads as running until it is recorded, tried again as the gateway goes on",
                        row.delegation_id, platform, chat_id, type(exc).__name__, exc)
            task = asyncio.ensure_future(self._finish_later(row, final, delete))
            self._finishing[row.delegation_id] = task
            task.add_done_callback(lambda _: self._finishing.pop(row.delegation_id, None))

    async def _finish_later(self, row: DelegationRow, final: str, delete: bool) -> None:
        """The final edit the store refused, until it takes it: the text it had then (its time is the
        delegation's, not the wait's). Said once, by `finish`: a full disk is named by the database too."""
        delay = BACKOFF_FIRST
        while True:
            await self._clock.sleep(delay)
            try:
                self._message(row).finish(final, delete=delete)
                return
            except sqlite3.Error as exc:
                log.debug("the final edit of the card of delegation %s is still refused: %s", row.delegation_id, exc)
            delay = min(delay * 2, BACKOFF_MAX)

    def close(self) -> None:
        for card in self._cards.values():
            card.disarm()
        for task in self._finishing.values():  # still refused: the card stays as it is (nothing records it owed)
            task.cancel()
        self._cards.clear()
        self._began.clear()

    def _elapsed(self, row: DelegationRow) -> float:
        # The monotonic clock where this process saw both ends: an NTP step changes nothing. Across a
        # restart only the wall clock spans them; stepped back meanwhile, it reads as no time, not less.
        began = self._began.pop(row.delegation_id, None)
        if began is not None:
            return self._clock.monotonic() - began
        return max(0.0, self._clock.time() - row.dispatched_at)

    def _message(self, row: DelegationRow) -> ProgressMessage:
        return ProgressMessage(self._outbox, split_session_key(row.session_key), f"{row.completion_turn_id}:card",
                               turn_id=row.completion_turn_id, run_id=self._run_id)
