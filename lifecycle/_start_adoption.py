"""The start of a service: what its engine reports while it re-attaches to the children a previous process
left, the adoption of their records read back from the journal, and the release of the starts and ends held
until the host's hooks are in place.

Apart from the `Supervisor` (a base of it) because it runs once a process, at start-up, never on a child's
way from launch to result; `StartHold` is what it holds meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence

from lifecycle._contract import STATES
from lifecycle._job import ChildJob, ChildOutcome
from lifecycle._record import Record
from lifecycle._start_hold import StartHold

log = logging.getLogger("lifecycle.service")

S = STATES


class StartAdoption:
    """The `Supervisor`'s start-up: its records, engine and hold are the `Supervisor`'s own (``_live``,
    ``_start_hold``, ...), set by its ``__init__``. Use from its event loop only."""

    def adopting(self) -> None:
        """The service starts, and its engine is about to re-attach to the children a previous process left
        (`Engine.start`): its reports (`placed`, `starting`, `running`, `finished`) come before their records
        are adopted, and are kept for `adopt`; every child's start hooks and end are held until `release`
        (`StartHold`)."""
        self._start_hold = StartHold()

    def adopted(self) -> None:
        """Every record the engine re-attached is adopted: a report of an unknown child is ignored again, and
        the starts and ends reported meanwhile wait for `release` as held ones (left unheard, such a child
        would stay live for good, its waiters waiting)."""
        hold = self._start_hold
        if hold is None:  # released already: a close came while the service started
            return
        hold.adopting = False
        hold.placed.clear()
        hold.running.clear()
        hold.started = {sid: None for sid in hold.started if sid in self._live}
        for subagent_id in list(hold.ended):
            record = self._live.get(subagent_id)
            if record is None:
                del hold.ended[subagent_id]
                log.warning("engine reported the end of unknown or finished child %s; ignored", subagent_id)
            else:
                self._completing(record, hold.ended[subagent_id])

    async def release(self) -> None:
        """The host's hooks are in place: the `subagent_start` hooks of the children whose starts were held
        while the service started (`adopting`) run now, in the order they started, then the children whose
        ends were held are finished, through the completion pipeline, and nothing is held any more. Returns
        once their results are published. Idempotent; `close` calls it too, so a start cut short before
        the host's hooks were in place still ends every child it held (with the hooks there are)."""
        hold = self._start_hold
        if hold is None:
            return
        if hold.releasing is None:
            hold.releasing = asyncio.ensure_future(self._release(hold))
        # Shielded: a caller cancelled meanwhile leaves the release to go on, which `close` waits for.
        await asyncio.shield(hold.releasing)

    async def _release(self, hold: StartHold) -> None:
        # Every start before any end, each child's `subagent_start` before its `subagent_stop`: ends stay
        # held while those hooks run, and starts reported meanwhile are held, and run, too.
        while hold.started:
            started, hold.started = hold.started, {}
            for subagent_id in started:
                record = self._live.get(subagent_id)
                if record is not None:  # else reported while re-attaching, never adopted: the start was cut short
                    await self._start_hooks(subagent_id, record.job)
        self._start_hold = None
        if not hold.ended:
            return
        records = []
        for subagent_id in hold.ended:
            record = self._live.get(subagent_id)
            if record is None:  # reported while re-attaching, never adopted: the start was cut short
                log.warning("engine reported the end of unknown or finished child %s; ignored", subagent_id)
                continue
            records.append(record)  # still marked completing, out of every stop's reach: finished as it is
        if records:
            await self._complete_now(records, lambda r: hold.ended[r.handle.subagent_id], held=True)

    def adopt(self, record: Record, job: ChildJob) -> None:
        """Hold a live record read back after a restart, whose engine runs ``job``: still, or from now
        on (its job was kept in the journal, and the engine had never got it)."""
        self._hold(record, job)
        sid = record.handle.subagent_id
        if self._start_hold is not None and sid in self._start_hold.placed:
            # Found where it runs, though its row kept the job (the process stopped before that row
            # was committed): forgotten now, or a later start that does not find it would run it again.
            self._forget_job(record)
        if self._start_hold is not None and sid in self._start_hold.started and record.state is S.PENDING:
            record.set_state(S.STARTING, self.host.clock.time())  # its hooks run at `release`
        if self._start_hold is not None and sid in self._start_hold.running:
            self.running(sid, self._start_hold.running[sid])
        if record.stop_request is not None:
            # Asked before the restart, perhaps never sent (the engine's service did not answer before
            # the process stopped): asked again, or the child runs on to its end.
            self.engine.interrupt(sid, record.stop_request)
        if record.steers is not None:
            # Asked before the restart and not sent (the engine's service did not answer before the
            # process stopped): sent now, in order, under the ids they had, so none is read twice.
            self.engine.steer_again(sid, json.loads(record.steers))

    async def end_unstarted(self, stopped: Sequence[tuple[Record, ChildJob]]) -> None:
        """End children read back after a restart that were asked to stop before their engine had their
        jobs, and that it does not have (the journal kept the job and the stop; `Engine.start` was not
        handed the job): never started, each ends as a stopped child that never ran does here, CANCELLED
        (``cancelled before start: …``) or INTERRUPTED with the stop's reason, through the completion
        pipeline. Returns once their results are published, or, while the service starts, held (`release`)."""
        for record, job in stopped:
            self._hold(record, job)
        await self._complete_now([record for record, _ in stopped],
                                 lambda r: ChildOutcome("interrupted", "interrupted", None, r.interrupt_reason))

    def _hold(self, record: Record, job: ChildJob) -> None:
        """Index a live record read back after a restart, with its job."""
        record.job, record.turn_id = job, job.parent_turn_id
        record.keep_result = True  # its handle may be out: a plugin can reconnect to it
        sid = record.handle.subagent_id
        self._live[sid] = record
        self._by_parent.setdefault(record.handle.parent_session_id or "", {})[sid] = record
        if record.handle.correlation_id:
            self._correlations[(record.handle.parent_session_id, record.handle.correlation_id)] = sid
