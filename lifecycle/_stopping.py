"""Stops: of children (a parent's `interrupt`, a plugin's `cancel`, each kept in the journal first) and of
the service itself (`close`, and the waits it ends once closed).

Apart from the `Supervisor` (a base of it) because no child pays for it on its way from launch to result:
only a child asked to stop, and the process as it stops.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Iterable

from lifecycle._contract import STATES, SubagentLifecycleError
from lifecycle._job import PROCESS_EXIT, ChildOutcome
from lifecycle._journal import JournalError
from lifecycle._record import Record

log = logging.getLogger("lifecycle.service")

S = STATES
CLOSED = "The lifecycle service is closed."


class Stopping:
    """The `Supervisor`'s stops: its records, engine and journal are the `Supervisor`'s own (``_live``,
    ``engine``, ``journal``, ...), set by its ``__init__``. Use from its event loop only."""

    async def interrupt(self, records: Iterable[Record], reason: str, *, closing: bool = False) -> int:
        """Stop children because their parent (or the process, with ``closing``) stops: each
        ends INTERRUPTED (not CANCELLED) with the partial output it had, a queued one before
        this returns. Returns how many it reached: finished and finishing ones are skipped. Once the
        journal is closed (`sealed`) it reaches none: the engine is closed, and a stop, or the end of a
        withdrawn child, could not be journaled; children that outlive the process run on, and the next
        start follows them."""
        withdrawn, reached = self._stop(records, reason, closing)
        if withdrawn:
            await self._withdrawn(withdrawn, reason)
        return reached

    def _stop(self, records: Iterable[Record], reason: str, closing: bool = False) -> tuple[list[Record], int]:
        """`interrupt` up to the end of the children it withdrew: each is asked to stop, or taken back from the
        engine, before this returns. Returns those withdrawn, for `_withdrawn`, and how many it reached."""
        if self.sealed:
            return [], 0
        withdrawn, reached = [], 0
        for record in records:
            if not record.live:
                continue
            reached += 1
            # A stop asked first (its parent's, `/stop`, a cancel) is why it ends, also when the process stops while
            # it winds down: ended as interrupted by process exit, it would be taken for lost, and run again.
            record.closing = record.closing or (closing and record.stop_request is None)
            sid = record.handle.subagent_id
            taken = self._withdraw(record)
            # Withdrawn: its terminal row says why it ends, but is held while the service starts, and is published
            # even when its commit failed: kept apart too, for `stops_committed` to wait for. Else, for a child
            # CANCEL_REQUESTED, the cancel's reason is the stop journaled.
            if taken or (record.interrupt_reason is None and record.state is not S.CANCEL_REQUESTED):
                self._journal_stop(record, stop_reason=reason)
            if record.interrupt_reason is None:
                # A withdrawn one too, live until its end is reported: a close or cancel meanwhile finds it stopping.
                record.interrupt_reason = reason
            if taken:
                withdrawn.append(record)
            else:
                self.engine.interrupt(sid, reason)
        return withdrawn, reached

    def _withdraw(self, record: Record) -> bool:
        """`Engine.withdraw`, keeping the context the job was submitted in, the launching turn's, when the engine
        hands it back (`InProcessEngine.withdraw_in`): the service ends the child there (`_complete_now`), not in
        its stopper's context (the host's ``/agents stop``, in no turn; a cancel made in a later turn)."""
        sid = record.handle.subagent_id
        withdraw_in = getattr(self.engine, "withdraw_in", None)  # not part of `Engine`: an engine may lack it
        if withdraw_in is None:
            return self.engine.withdraw(sid)
        context = withdraw_in(sid)
        if context is None:
            return False
        record.context = context
        return True

    async def _withdrawn(self, withdrawn: list[Record], reason: str) -> None:
        """End the children `_stop` took back from the engine, together: their terminal rows share one commit."""
        await self._complete_now(withdrawn, lambda r: ChildOutcome("interrupted", "interrupted", None, reason))

    async def cancel(self, record: Record, reason: str) -> None:
        """Request cancellation: CANCEL_REQUESTED now, CANCELLED once the child has stopped
        (or the state it reached first). Idempotent; a finished child is never changed, nor a finishing one:
        its end came first (one held while the service starts stays so until `release`, plugins loading).
        Once the journal is closed (`sealed`), raises `SubagentLifecycleError` (``CLOSED``), changing
        nothing: the stop could not be journaled, and the engine is closed.

        Returns once the stop is committed (a second cancel too, until it is): told "accepted" while the
        stop was only queued, a caller whose process then crashed saw the child end INTERRUPTED, as lost, at
        the next start. If the commit fails, raises `JournalError` (``JOURNAL_WRITE_FAILED``): the child is
        being stopped all the same, and the journal keeps the stop and writes it once it can."""
        if record.state.terminal or record.completing:
            return
        if record.state is S.CANCEL_REQUESTED:
            if not self.sealed:  # else the close committed it, or raised that it could not
                await self._stop_committed(record)
            return
        if self.sealed:
            raise SubagentLifecycleError(CLOSED, code="CLOSED")
        now, reason = self.host.clock.time(), reason[:500]
        sid = record.handle.subagent_id
        if self._withdraw(record):
            # Journaled first, as for a running child: its end alone is published even when its commit failed,
            # and is only held while the service starts; answered "accepted" then, a crash left it PENDING.
            self._journal_stop(record, state=S.CANCEL_REQUESTED._value_, updated_at=now, stop_reason=reason)
            record.set_state(S.CANCEL_REQUESTED, now)
            record.cancel_reason = reason
            await self._complete_now([record],
                                     lambda r: ChildOutcome("interrupted", "interrupted", None, _before_start(r)))
            if not self.sealed:  # else the close, which waited for its end, committed it or said it could not
                await self._stop_committed(record)
        else:
            self._journal_stop(record, state=S.CANCEL_REQUESTED._value_, updated_at=now, stop_reason=reason)
            record.set_state(S.CANCEL_REQUESTED, now)
            record.cancel_reason = reason
            self.engine.interrupt(sid, record.stop_request)  # asked now: a commit later would only delay it
            await self._stop_committed(record)

    async def _stop_committed(self, record: Record) -> None:
        """Wait for the commit of a cancel's stop row (`cancel`). A plain `Journal.sync` also hears the refusals
        of records no launch owns (a finished child's result): not this cancel's failure, logged as the
        publisher logs them. Its own row's refusal, or a failed commit, raises."""
        sid = record.handle.subagent_id
        try:
            await self.journal.sync()
        except JournalError as exc:
            if exc.subagent_ids and sid not in exc.subagent_ids:
                log.error("the journal refused %s (%s), heard while cancelling %s", ", ".join(exc.subagent_ids),
                          exc.code, sid)
                return
            if exc.code != "JOURNAL_WRITE_FAILED":
                raise
            failure = JournalError(
                f"The cancel of {sid} was asked, but the journal could not record it yet ({exc}): the child is being"
                " stopped, and the journal writes the stop once it can; until then a crash would leave the child"
                " INTERRUPTED, not CANCELLED. Cancel again to hear when it is recorded.", code="JOURNAL_WRITE_FAILED")
            raise failure from exc

    async def stops_committed(self) -> bool:
        """Wait for the commit that carries every stop asked so far (`interrupt`'s rows, a cancel's), the same
        group commit a `cancel` waits for: True once it has committed, False when it could not (a failed write, a
        database another connection holds past its busy timeout, a journal closed meanwhile). For a host that
        tells a person "stopped" (`HostView.stops_committed`): told so while the rows were only queued, a process
        killed right then left the children running in the journal, for the next start to end INTERRUPTED by
        process exit, as lost ones, which ``lifecycle.on_restart: resume`` runs again.

        Not part of `interrupt`: its other callers (a parent's interrupt, the close, a host tidying after a failure
        of its own) tell nobody, and a stop that reaches children whose launch is still being journaled must not
        wait for that commit (their launch and stop rows commit together, or neither does). A failure is logged,
        not raised: the children are being stopped all the same, and the journal keeps the rows and writes them
        once it can; a later call answers True once it has."""
        if self.sealed:  # the journal is closed: the close wrote what it could, and said so if it could not
            return False
        try:
            await self.journal.sync()
        except JournalError as exc:
            live = self._live
            if exc.subagent_ids and not any((r := live.get(sid)) is not None and r.stop_request is not None
                                            for sid in exc.subagent_ids):
                # Another record's refusal (a finished child's result), heard by this plain sync: logged as the
                # publisher logs them; the stops were committed with the rest.
                log.error("the journal refused %s (%s), heard while committing stops", ", ".join(exc.subagent_ids),
                          exc.code)
                return True
            log.error("stops were asked, but the journal could not record them yet (%s): the children are being"
                      " stopped, and the journal writes the stops once it can; until then a crash would leave them"
                      " INTERRUPTED by process exit", exc)
            return False
        return True

    def _journal_stop(self, record: Record, **stop: object) -> None:
        """Keep a stop asked of a child: the next start asks its engine again if it outlives this process,
        as the request may not have reached it (its service down until this process stopped); a child that
        dies with the process (or is lost) ends with the stop's reason, stopped on purpose, never taken for
        one the process exit interrupted (which a host may run again). Not the close's own stop of an
        engine's children that die with the process: the next start ends those so anyway.
        ``stop``: the row's fields the stop changes, journaled before the record takes them, so that a
        stop the journal refuses leaves the child as it was. Not for a child whose launch the journal has just
        refused, its caller not told yet (`Journal.launch_dropped`): its row would bring back a child that never
        existed, which `submit` forgets once told. Asked here, on the stop's path, not on the launch's."""
        if self.engine.survives_restart or not record.closing:
            if record.state is S.PENDING and self.journal.launch_dropped(record.handle.subagent_id):
                return
            self.journal.put(dataclasses.replace(record.journal_row(), **stop))

    async def close(self, *, grace: float | None = None) -> None:
        """Refuse launches from now on (`check_open`), stop every child this process would lose
        (all of them unless the engine's children survive a restart), wait for the launches being
        journaled to end, and the children the service is finishing itself (for callers that gave up,
        too), then for the engine to wind down, giving it ``grace`` for what it still sends (`Engine.close`), and
        journals the children that ended meanwhile whose hooks outlast it (`_journal_ends_in_hooks`).
        The journal stays open: the caller closes it once this returns, when nothing is left to write to it.
        Ends held while the service started are finished first (`release`)."""
        self.closing = True
        loop, give_up = asyncio.get_running_loop(), None
        if grace is not None and grace != math.inf and not self.engine.survives_restart:
            # The grace counts from here for the children the service ends itself (stopped before they ran, the
            # ends held while it started), as for those the engine runs: past it, their hooks are given up on.
            deadline = loop.time() + max(grace, 0.0)
            give_up = loop.call_at(deadline, self._give_up_hooks)
        try:
            await self.release()
            if not self.engine.survives_restart:
                # Children whose launch is being journaled too: once committed they are never
                # queued (`submit`), and end like the others; abandoned ones end as such (`_abandon`).
                await self.interrupt(list(self._live.values()), PROCESS_EXIT, closing=True)
            if self._launching:
                self._drained = loop.create_future()
                await self._drained
            await self.engine.close(grace=grace if give_up is None else max(deadline - loop.time(), 0.0))
        finally:
            if give_up is not None:
                give_up.cancel()
        if not self.engine.survives_restart:
            self._journal_ends_in_hooks()
        if self._publisher is not None:
            await self._publisher

    def _journal_ends_in_hooks(self) -> None:
        """Journal the results of children that had ended, but whose memory notification or `subagent_stop` hooks
        still run once the engine's grace is over: hooks observe, they never gate, and left unjournaled such a
        result would be lost, the child ended INTERRUPTED by process exit at the next start. Not for an engine
        whose children survive a restart: it cancelled their ends, which the next start hears again, hooks and all."""
        for record in list(self._live.values()):
            outcome = record.outcome
            if record.completing and outcome is not None and record.completed_at is None:
                log.warning("child %s had ended, but its memory notification or subagent_stop hooks were still running"
                            " when the close's grace ran out: its result is journaled without waiting for them",
                            record.handle.subagent_id)
                self._end(record, outcome)

    def _give_up_hooks(self) -> None:
        """The close's grace is over (an engine whose children die with the process): the children the service
        ends itself (`_complete_now`) whose memory notification or `subagent_stop` hooks still run are journaled
        without waiting for them, as `_journal_ends_in_hooks` does for the engine's, and their ends no longer hold
        the close up. A batch one of which has not reached its hooks yet is settled once it has (`_finish`)."""
        self._hooks_given_up = True
        if self.sealed:
            return
        live = self._live
        for settled, (ending, records) in list(self._endings.items()):
            if settled.done() or any(r.outcome is None and r.completed_at is None
                                     and live.get(r.handle.subagent_id) is r for r in records):
                continue
            for record in records:
                if record.completing and record.outcome is not None and record.completed_at is None:
                    log.warning("child %s had ended, but its memory notification or subagent_stop hooks were still"
                                " running when the close's grace ran out: its result is journaled without waiting for"
                                " them", record.handle.subagent_id)
                    self._end(record, record.outcome)
            del self._endings[settled]
            self._hooks_left.add(ending)
            settled.set_result(None)

    def end_waits(self) -> None:
        """Once closed (`sealed`): wake whoever still waits for a child held unfinished (left running where it
        runs, or behind by the close's grace): nothing will tell this process how it ends. Each waiter finds the
        record without a result and says so (`HostView`, delegate_task, the service's `wait`)."""
        for record in self._live.values():
            record.wake()


def _before_start(record: Record) -> str:
    return f"cancelled before start: {record.cancel_reason or ''}".rstrip(": ")

