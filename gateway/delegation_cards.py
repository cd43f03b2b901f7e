"""A progress card for each background delegation, where the chat shows cards: its subagents
as they work, finalised when their results have been delivered (or stopped, or reported).

The card is the same kind of message as a turn's (`gateway.progress_card`), keyed by the
delegation, so one a crash left behind is still finalised after the restart. Its final edit is
owed from the commit that settles its delegation until the commit that journals that edit
(`DelegationTable.finishing_card`): one the store refused until the process stopped, or died,
is journaled by the next start (`DelegationCards.finish_owed`), once, with the text it would have had.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable

from agent import Clock, new_id
from gateway import child_states
from gateway.display import TurnDisplay
from gateway.notices import final_text
from gateway.outbox import Outbox
from gateway.progress_card import DELEGATE, ProgressCard
from gateway.progress_message import ProgressMessage, covered_by
from gateway.replies import SILENCE
from gateway.sender import BACKOFF_FIRST, BACKOFF_MAX
from gateway.sessions import GatewaySession
from gateway.store import DelegationRow, DelegationTable, split_session_key
from lifecycle import HostView

log = logging.getLogger("gateway.delegation_cards")


def outcome(row: DelegationRow) -> str:
    """How a settled delegation's card ends (`final_text`'s outcome), by how it was settled."""
    if row.reason == "replayed":  # its turn runs again after a restart, and delegates anew
        return "shutdown"
    if row.reason == SILENCE:  # its subagents finished and the model read their results: done, not stopped
        return "done"
    return {"delivered": "done", "reported": "shutdown"}.get(row.status, "stopped")


def _replying(session: GatewaySession, turn_id: str) -> bool:
    """Whether ``turn_id`` runs in ``session`` with its reply decided, not journaled yet (`RunningTurn.replying`)."""
    running = session.running
    return running is not None and running.turn_id == turn_id and running.replying


class DelegationCards:
    def __init__(self, outbox: Outbox, children: HostView, table: DelegationTable, *,
                 display: Callable[[str], TurnDisplay], clock: Clock) -> None:
        self._outbox = outbox
        self._table = table
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
        self._looking: dict[str, asyncio.Task[None]] = {}
        """Cards taken up again after a restart, looking up the subagents that had finished before it."""

    def start(self, row: DelegationRow, session: GatewaySession, *, resumed: bool = False) -> None:
        """Show the delegation's card once it has run `display.progress_delay` seconds. ``resumed``:
        the delegation was dispatched by an earlier process, and its children run again now (relaunched), or
        ran on across the restart (an engine whose children outlive the process). Either way the card that
        process left is edited again, its headline's time and its done line's counted from one start, the
        dispatch's: counted from this start, the headline read as the work having begun anew (and back to `3 s`
        from the minutes it read before the restart) while the done line gave the time since the dispatch.
        Across the restart only the wall clock spans the dispatch (never less than 0 s); from this start on,
        the monotonic clock."""
        ran = max(0.0, self._clock.time() - row.dispatched_at) if resumed else 0.0
        self._began.setdefault(row.delegation_id, self._clock.monotonic() - ran)
        display = self._display(session.platform)
        if display.progress != "card" or row.delegation_id in self._cards:
            return
        ids = {t.subagent_id for t in row.tasks}
        # Its subagents that finished before the restart, from the journal: this process never ran them, so
        # neither its live children nor its recent ones hold them, and the card read `1 of 2 done` over the
        # line of the relaunched one alone, no longer saying which had finished, or how.
        earlier: list = []
        if resumed:
            self._looking[row.delegation_id] = asyncio.ensure_future(self._finished_before(row, earlier))

        def children() -> list:
            sid = session.session_id
            here = [c for c in (*self._children.recent(sid), *self._children.children(sid)) if c.subagent_id in ids]
            shown = {c.subagent_id for c in here}
            return [*(c for c in earlier if c.subagent_id not in shown), *here]

        def counts() -> tuple[int, int]:
            live = sum(1 for c in self._children.children(session.session_id) if c.subagent_id in ids)
            return len(ids) - live, len(ids)

        message = self._message(row)
        turn = row.completion_turn_id
        covered = covered_by(message, ProgressMessage(self._outbox, split_session_key(row.session_key),
                                                      f"{turn}:notice", turn_id=turn, run_id=self._run_id))

        shown = 0

        def publish(text: str, n: int) -> None:
            nonlocal shown
            # Not while the turn that dispatched it readies its reply (a typing request on the wire answered first,
            # a long text split): the card went first, and the chat read of the work before the answer that began
            # it. Held, it shows at a later look (every `CHILD_TICK_SECONDS`).
            if not shown and _replying(session, row.origin_turn_id):
                return
            if not covered():  # the turn delivering its results showed a card first
                message.publish(text, shown)
                shown += 1

        card = ProgressCard(delay=display.progress_delay, heartbeat=display.notify_interval,
                            mode=display.long_running_notifications, clock=self._clock,
                            publish=publish, children=children, counts=counts, ran=ran)
        card.tool_started(DELEGATE)  # its headline counts the subagents done
        card.start()
        self._cards[row.delegation_id] = card

    def finish(self, row: DelegationRow, how: str, endings: str = "") -> None:
        """Finalise the card (``how``: done, stopped, failed or shutdown), also one a crash
        left behind before this process started. ``endings``: how those of its subagents that did not
        succeed ended, for a done card (`gateway.child_states.endings`). A final edit the store refuses
        (a full disk) is not raised: the delegation it describes is settled all the same (a turn's card is
        no part of its end either), and the edit is tried again, backing off, until it is journaled (by the
        next start, should this process stop or die first: `finish_owed`)."""
        card = self._cards.pop(row.delegation_id, None)
        if card is not None:
            card.disarm()
        if (looking := self._looking.pop(row.delegation_id, None)) is not None:
            looking.cancel()
        self._journal_final(row, final_text(how, self._elapsed(row), subagents=len(row.tasks), endings=endings))

    async def finish_owed(self) -> int:
        """At start: finalise the cards of the delegations an earlier process settled but could not journal
        the final edit of (the store refused it until that process stopped, or died), with the line `finish`
        gave them, their time the delegation's up to its settle. Journaled like any card's final edit, and
        only now: nothing finalises such a card twice. Returns how many; one of a platform no longer
        configured, or that fails otherwise (its subagents cannot be looked up), is logged and stays owed,
        for a later start."""
        owed = [row for row in self._table.cards_owed() if row.delegation_id not in self._finishing]
        if owed:
            log.info("finishing the cards of %d delegation(s) settled before the restart without their final edit",
                     len(owed))
        for row in owed:
            try:
                how = outcome(row)
                endings = ""
                if how == "done":  # from the journal, as the results were handed on after a restart
                    found = await self._children.lookup([t.subagent_id for t in row.tasks])
                    endings = child_states.endings(found.get(t.subagent_id) for t in row.tasks)
                elapsed = max(0.0, (row.settled_at or row.dispatched_at) - row.dispatched_at)
                self._journal_final(row, final_text(how, elapsed, subagents=len(row.tasks), endings=endings))
            except Exception as exc:
                platform = split_session_key(row.session_key)[0]
                if isinstance(exc, KeyError) and exc.args == (platform,):  # the outbox's word for no adapter
                    log.warning("the card of delegation %s stays as it is until %s is configured again",
                                row.delegation_id, platform)
                else:
                    log.exception("finishing the card of delegation %s failed", row.delegation_id)
        return len(owed)

    async def _finished_before(self, row: DelegationRow, into: list) -> None:
        """Fill ``into`` with the delegation's subagents that had finished, in the order they finished, as the
        card listed them before the restart (by its tasks' order, two that finished out of it swapped places).
        One the journal cannot give (a full disk, a closing service) is left off the card, as it was before: the
        card must never break over it, and its headline still counts it."""
        try:
            found = await self._children.lookup([t.subagent_id for t in row.tasks])
        except Exception as exc:
            log.warning("the card of delegation %s lists only the subagents running now: those that finished "
                        "before the restart could not be read (%s: %s)", row.delegation_id, type(exc).__name__, exc)
            return
        finally:
            if self._looking.get(row.delegation_id) is asyncio.current_task():
                del self._looking[row.delegation_id]
        done = [child for t in row.tasks if (child := found.get(t.subagent_id)) and child.completed_at is not None]
        into.extend(sorted(done, key=lambda child: child.completed_at))

    def _journal_final(self, row: DelegationRow, final: str) -> None:
        """Journal the card's final state, in the commit that records it no longer owed; a refusal is said
        once, and the edit tried again, backing off, until it is journaled."""
        platform, chat_id, _ = split_session_key(row.session_key)
        delete = self._display(platform).progress_final == "delete"
        try:
            self._finish_message(row, final, delete)
        except sqlite3.Error as exc:
            log.warning("could not record the final edit of the card of delegation %s in %s chat %s (%s: %s):"
                        " it reads as running until it is recorded, tried again as the gateway goes on",
                        row.delegation_id, platform, chat_id, type(exc).__name__, exc)
            task = asyncio.ensure_future(self._finish_later(row, final, delete))
            self._finishing[row.delegation_id] = task
            task.add_done_callback(lambda _: self._finishing.pop(row.delegation_id, None))

    def _finish_message(self, row: DelegationRow, final: str, delete: bool) -> None:
        with self._table.finishing_card(row.delegation_id):
            self._message(row).finish(final, delete=delete)

    async def _finish_later(self, row: DelegationRow, final: str, delete: bool) -> None:
        """The final edit the store refused, until it takes it: the text it had then (its time is the
        delegation's, not the wait's). Said once, by `_journal_final`: a full disk is named by the database too."""
        delay = BACKOFF_FIRST
        while True:
            await self._clock.sleep(delay)
            try:
                self._finish_message(row, final, delete)
                return
            except sqlite3.Error as exc:
                log.debug("the final edit of the card of delegation %s is still refused: %s", row.delegation_id, exc)
            delay = min(delay * 2, BACKOFF_MAX)

    def close(self) -> None:
        for card in self._cards.values():
            card.disarm()
        for task in self._finishing.values():  # still refused: recorded owed, the next start finishes it
            task.cancel()
        for task in self._looking.values():
            task.cancel()
        self._looking.clear()
        self._cards.clear()
        self._began.clear()

    def _elapsed(self, row: DelegationRow) -> float:
        # The monotonic clock from the start `start` gave its card: an NTP step while this process runs changes
        # nothing. Not started here (settled as the next start finds it): only the wall clock spans the two
        # ends; stepped back meanwhile, it reads as no time, not less.
        began = self._began.pop(row.delegation_id, None)
        if began is not None:
            return self._clock.monotonic() - began
        return max(0.0, self._clock.time() - row.dispatched_at)

    def _message(self, row: DelegationRow) -> ProgressMessage:
        return ProgressMessage(self._outbox, split_session_key(row.session_key), f"{row.completion_turn_id}:card",
                               turn_id=row.completion_turn_id, run_id=self._run_id)
