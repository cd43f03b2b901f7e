"""Completion turns that fail, and giving up on them; turns whose handling failed (`Ledger`'s part).

A completion turn that fails in the gateway (`completion_failed`), or in a process that died while it
ran (`cut_short`), is tried again after a pause, as a message's turn is (`gateway.dead_letters`); after
``inbox.max_attempts`` failures the results are sent to the chat as they are, once, and the row settled
(`DELIVERY_FAILED`): never replayed into every start, never lost. A turn whose handling failed has its
delegations dropped and their children stopped (`abandon`): it runs again and delegates anew, or was set
aside for the chat to ask again; either way results of the failed run would come twice.

Apart from `gateway.ledger` because it is the ledger's answer to failure, not its normal course: the
`Ledger` inherits it, and the state (the table, the held and aside sets) is the ledger's, set up there.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence

from gateway.dead_letters import CUT_SHORT, FIRST_PAUSE_SECONDS, MAX_PAUSE_SECONDS
from gateway.graphemes import is_boundary
from gateway.logging import redacted_bounded, redacted_cut
from gateway.outbox import Outbox
from gateway.replies import child_failure_reason
from gateway.sessions import GatewaySession
from gateway.store import DelegationRow, split_session_key
from gateway.store.delegations import DELIVERY_FAILED, DelegationTable
from gateway.turn_runner import TurnRunner
from lifecycle import HostView

log = logging.getLogger("gateway.ledger")


class CompletionFailures:
    """The `Ledger`'s methods for completion turns that fail and turns whose handling failed. Its attributes,
    and `_settle`, `_watch` and `_asked`, are the ledger's."""

    _table: DelegationTable
    _outbox: Outbox
    _runner: TurnRunner
    _children: HostView
    _delivery_attempts: int
    _held: set[str]
    _aside: set[asyncio.Task[None]]

    def completion_begun(self, delegation_id: str) -> None:
        """The turn runner's word that the delegation's completion turn begins (made durable by the runner):
        a process that dies from now on is charged an attempt of it at the next start (`cut_short`)."""
        self._table.begin_delivery(delegation_id)

    def completion_waits(self, delegation_id: str, waiting: bool) -> None:
        """The questions' word that the delegation's completion turn waits for the chat's answer (idle: a death
        then is no fault of it, as for a message's turn) or goes on (charged again); made durable by them."""
        if waiting:
            self._table.delivery_waits(delegation_id)
        else:
            self._table.mark_delivery(delegation_id, True)

    def completion_over(self, delegation_id: str) -> None:
        """The delegation's completion turn is over, but the store refused to record its outcome (its end is
        owed, `gateway.owed_ends`): no longer marked begun, as the messages of a turn answered with its end owed
        are not (`OwedEnds.pay`). A death before the outcome is recorded is no fault of the turn; charged to it,
        its results would be sent as they are (`cut_short`) after its answer went out: twice. Should the store
        refuse this too, the mark stays, and such a death is charged."""
        try:
            self._table.mark_delivery(delegation_id, False)
        except sqlite3.Error as exc:
            log.warning("delegation %s: could not record that its completion turn is over (%s: %s); a death before"
                        " its outcome is recorded counts as a failed attempt of it", delegation_id,
                        type(exc).__name__, exc)

    def completion_failed(self, delegation_id: str, exc: BaseException) -> None:
        """The turn runner's word that the delegation's completion turn failed in the gateway: tried again
        after a pause that doubles, or, after ``delivery_attempts`` failures, its results are sent as they are.
        Should the store refuse to count it, the results are delivered after the next start, as before."""
        row = self._table.get(delegation_id)
        if row is None or row.status != "running":
            return
        # Masked before it is kept (`gateway_delivery_attempts`): the state database and its backups outlive the log.
        error = redacted_bounded(f"{type(exc).__name__}: {exc}")
        try:
            attempts = self._table.delivery_failed(delegation_id, error)
        except sqlite3.Error as refused:
            log.error("delegation %s: its completion turn failed (%s), and so did counting that (%s: %s); its "
                      "results are delivered after the next start", delegation_id, error, type(refused).__name__,
                      refused)
            return
        if attempts < self._delivery_attempts:
            pause = min(MAX_PAUSE_SECONDS, FIRST_PAUSE_SECONDS * 2 ** (attempts - 1))
            log.warning("delegation %s: handing its results to the model failed (attempt %d of %d), trying again "
                        "in %.1fs: %s", delegation_id, attempts, self._delivery_attempts, pause, error)
            self._runner.replaying({row.completion_turn_id})
            self._watch(row, pause)
            return
        self._run_aside(self._give_up_logged(row, attempts, error))

    async def _give_up_logged(self, row: DelegationRow, attempts: int, error: str) -> None:
        try:
            await self._give_up(row, attempts, error)
        except Exception:  # unsettled, it is delivered (or given up on) after the next start
            log.exception("delegation %s: sending its results as they are failed; they are delivered after the "
                          "next start", row.delegation_id)

    def _run_aside(self, work) -> None:
        task = asyncio.ensure_future(work)
        self._aside.add(task)
        task.add_done_callback(self._aside.discard)

    async def cut_short(self, row: DelegationRow) -> bool:
        """At a start after a death: the delegation's completion turn was running when the process died,
        which counts as a failed attempt. True if it may be delivered again; False once its results were sent
        as they are, or when the store refuses to count it (then it waits, unsettled, for the next start).
        Counted, it keeps its place ahead of its chat's messages, and is charged no other death until it begins
        again: a start that dies before then did not die of it.

        Never raises but on cancellation: called for each such row in the start, whose failure (a bug meeting
        an odd row, an engine that cannot look its children up) would stop the gateway for every chat. Such a
        row is logged with its id and kept, unsettled, for the next start, as when the store refuses it: sent
        as they are, its results would be lost to a failure before they were; delivered, it might bring down
        the process again uncounted. Its results sent already go out once (the outbox journals a key once)."""
        try:
            return await self._cut_short(row)
        except Exception:
            self._held.add(row.delegation_id)
            log.exception("delegation %s: charging its completion turn the gateway's death failed; it is not "
                          "delivered now and is kept for the next start", row.delegation_id)
            return False

    async def _cut_short(self, row: DelegationRow) -> bool:
        try:
            attempts = self._table.delivery_failed(row.delegation_id, CUT_SHORT, keeps_place=True)
        except sqlite3.Error as exc:
            self._held.add(row.delegation_id)
            log.error("delegation %s: the state database refused to record that the gateway died in its completion"
                      " turn (%s: %s); it is not delivered now and is kept for the next start", row.delegation_id,
                      type(exc).__name__, exc)
            return False
        if attempts < self._delivery_attempts:
            log.warning("delegation %s: its completion turn was running when the gateway died (attempt %d of %d); "
                        "delivering it again", row.delegation_id, attempts, self._delivery_attempts)
            return True
        try:
            await self._give_up(row, attempts, CUT_SHORT)
        except sqlite3.Error as exc:
            self._held.add(row.delegation_id)
            log.error("delegation %s: the state database refused to record giving up its delivery (%s: %s); it "
                      "is kept for the next start", row.delegation_id, type(exc).__name__, exc)
        return False

    async def _give_up(self, row: DelegationRow, attempts: int, error: str) -> None:
        """Send the results to the chat as they are, once (keyed by the completion turn), and settle the row.
        Split in a worker thread (`Outbox.enqueue_long`): ten results of ``RESULT_CHARS`` heavy with formatting
        held every chat a second or more on the loop. Nothing is sent when /stop or /new settled the row
        meanwhile, asked again right before they are journaled; cancelled before that (the gateway stops), nothing
        is journaled and the row stays unsettled, for the next start. Said in the log once they are journaled:
        should the store refuse them, the caller says they were not sent, and a line before would have claimed
        they were."""
        lines = await self._result_lines(row)
        if self._settled_meanwhile(row):
            return
        platform, chat_id, thread_id = split_session_key(row.session_key)
        text = "\n".join([UNDELIVERABLE, *lines])

        def unless_settled() -> None:
            if self._settled_meanwhile(row):
                raise _SettledMeanwhile

        try:
            await self._outbox.enqueue_long(platform, chat_id, thread_id, text, kind="completion",
                                            key=f"{row.completion_turn_id}:undelivered",
                                            turn_id=row.completion_turn_id, reply_to=self._asked(platform, row),
                                            first=unless_settled)
        except _SettledMeanwhile:
            return
        log.error("delegation %s: handing its results to the model failed %d times; they are sent to the chat as "
                  "they are (`/agents`: results sent as they were): %s", row.delegation_id, attempts, error)
        self._settle(row, "delivered", DELIVERY_FAILED)

    def _settled_meanwhile(self, row: DelegationRow) -> bool:
        """Whether /stop or /new settled ``row`` since it was read."""
        current = self._table.get(row.delegation_id)
        return current is None or current.status != "running"

    async def _result_lines(self, row: DelegationRow) -> list[str]:
        found = await self._children.lookup([t.subagent_id for t in row.tasks])
        lines = []
        for task in row.tasks:
            child = found.get(task.subagent_id)
            if child is None:
                lines.append(f"• {_short(task.goal, 80)} — its result is no longer available")
                continue
            said = child.summary or child_failure_reason(child.error or "") or "no output"
            lines.append(f"• {child.state.value.lower().capitalize()}: {_short(task.goal, 80)} — "
                         f"{_short(said, RESULT_CHARS)}")
        return lines

    def abandon(self, session: GatewaySession, turn_id: str) -> None:
        """The handling of turn ``turn_id`` failed (`TurnRunner._broke`): the delegations it dispatched deliver
        nothing and its children still at work are stopped. The turn runs again and delegates anew, or was set
        aside and the chat asked to send it again: their results would come twice, or to a question the chat
        was told was not handled. Settled at once, before the turn can run again; the children stop later."""
        dropped = set()
        for row in self._table.of_turn(turn_id):
            if row.status == "running" and row.agent_session_id == session.session_id:
                self._settle(row, "suppressed", FAILED_TURN)
                dropped.add(row.delegation_id)
        # A delegation whose children finished already may have its completion turn queued behind the failed one.
        kept = [item for item in session.queue if item.delegation_id is None or item.delegation_id not in dropped]
        if len(kept) != len(session.queue):
            session.queue.clear()
            session.queue.extend(kept)
        stops = [c.subagent_id for c in self._children.children(session.session_id) if c.parent_turn_id == turn_id]
        if stops:
            log.info("%d subagent(s) of turn %s, whose handling failed, are being stopped", len(stops), turn_id)
            self._run_aside(self._stop_children(session.session_id, stops))

    async def _stop_children(self, session_id: str, ids: Sequence[str]) -> None:
        for sid in ids:
            try:
                await self._children.interrupt_child(sid, FAILED_TURN_STOP, parent_session_id=session_id)
            except Exception:
                log.exception("stopping subagent %s of a failed turn failed", sid)


UNDELIVERABLE = ("⚠️ Your background results could not be handed to me to answer (it failed repeatedly), so here "
                 "they are as the subagents left them:")
RESULT_CHARS = 4000
"""Of each child's result in that message (split to the platform's limit like any): a summary is within its
budget already; this keeps a message of many bounded."""
FAILED_TURN = "its turn failed"
"""Why a delegation of a turn whose handling failed delivers nothing (`Ledger.abandon`), as `/agents` shows it."""
FAILED_TURN_STOP = "stopped: the turn that launched it failed in the gateway"


class _SettledMeanwhile(Exception):
    """Raised from `Outbox.enqueue_long`'s ``first``: the row was settled while its results were split."""


def _short(text: str | None, limit: int) -> str:
    """``text`` on one line, cut to ``limit``, with secrets masked first (`gateway.logging.redacted_cut`), as
    ``/agents`` shows it: every ledger message shows goals the model wrote and summaries and errors that
    may quote what a tool echoed (a key in a URL, a token). All of it is masked: these messages are few."""
    return redacted_cut(text, limit, _cut)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = limit - 1
    while cut > 0 and not is_boundary(text, cut):  # half a flag showed as a letter, a family as one of its people
        cut -= 1
    return text[:cut] + "…"

