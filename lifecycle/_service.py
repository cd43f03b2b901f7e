"""`AsyncSubagentLifecycle`: the plugin API, and the service's life from start to close.

Plugins see launch/status/wait/cancel/result/reconnect and key rotation; the
host gets `host_view()`; delegate_task is built with `lifecycle.delegate_tool`.
After a restart, finished children are read back from the journal, and children
that were running when the process died are INTERRUPTED, never re-run (unless
the engine still runs them: then the service re-attaches, and stops those an
inline delegate_task of the dead process waited for).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Mapping
from threading import get_ident
from types import MappingProxyType
from typing import Any

from agent import active_turn
from lifecycle._capability import _TABLE as KEY_TABLE
from lifecycle._capability import KeyRing, verify
from lifecycle._children import ChildHost, ChildSpec, check_toolsets
from lifecycle._contract import (
    CONTRACT_VERSION,
    MAX_GOAL_CHARS,
    NOT_READY,
    RECONNECT_UNAVAILABLE,
    UNKNOWN_HANDLE,
    SubagentCancelResult,
    SubagentHandle,
    SubagentLaunchRequest,
    SubagentLifecycleError,
    SubagentReconnectResult,
    SubagentResult,
    SubagentState,
    SubagentStatus,
    SubagentTerminalState,
    grace_seconds,
    plain_metadata,
    validate_request,
)
from lifecycle._engine import Engine
from lifecycle._host_view import HostView
from lifecycle._inprocess import InProcessEngine
from lifecycle._job import PROCESS_EXIT
from lifecycle._journal import Journal
from lifecycle._key_rotation import KeyRotation
from lifecycle._left_unfinished import _interrupted_result, _kept_job, _readable
from lifecycle._record import Record
from lifecycle._supervisor import CLOSED, Supervisor
from lifecycle.settings import LifecycleSettings

log = logging.getLogger("lifecycle.service")

S = SubagentState
NO_PARENT = "No active parent session is available."
_NO_METADATA: Mapping[str, Any] = MappingProxyType({})
CANCEL_REASON = "cancelled by the parent"
"""`cancel`'s reason when none is given."""
WAIT_CLOSED = "CLOSED"
"""`SubagentTerminalState.diagnostic` of a wait that ended unfinished because the service closed."""
_ASK_JOURNAL = object()
"""`_issued` cannot answer without verifying the handle and perhaps reading the journal."""
DISPATCH_MARGIN_SECONDS = 24 * 3600.0
"""How long before the dispatch of the oldest delegation whose results the host still needs a finished child's
record is kept too (`AsyncSubagentLifecycle.sweep`): a clock set back while the gateway was stopped (NTP correcting
one that ran fast) dates the ends of the children interrupted at the start before their dispatch, and no process saw
the step."""
ON_OTHER_LOOP = (
    "The asyncio subagent lifecycle API was called on an event loop that is not the service's; "
    "from a thread running an event loop of its own, use the synchronous facade (ctx.subagent_lifecycle)."
)


class AsyncSubagentLifecycle(KeyRotation):
    """The asyncio twin of `SubagentLifecycle`: same operations, awaitable.

    The parent is the agent turn active in the caller's context. A handle works
    only inside the session that launched it; anything that does not verify is
    reported as UNKNOWN and never reaches a child. Key rotation is its base's
    (`lifecycle._key_rotation`).
    """

    def __init__(
        self,
        host: ChildHost,
        journal: Journal,
        *,
        settings: LifecycleSettings = LifecycleSettings(),
        engine: Engine | None = None,
    ) -> None:
        self.journal = journal
        self.settings = settings
        self.engine = engine or InProcessEngine(settings.max_running)
        self._supervisor = Supervisor(host, journal, self.engine)
        self._view = HostView(self._supervisor)
        self._sweeper: asyncio.Task | None = None
        self._closed = False
        self._closing: asyncio.Future[None] | None = None
        """The close under way, or done: every `close` call waits for it."""
        self._starting: asyncio.Future[None] | None = None
        """Done once the `start` under way has returned or raised: a close meanwhile waits for it."""
        self._opened = False
        """The journal was opened (by a start, perhaps one that failed before its key ring): `close` closes it."""
        self._waits: set[asyncio.Future[None]] = set()
        """The futures `wait` calls are waiting on, for `close` to end them."""
        self._ring_change = asyncio.Lock()
        """Held by `rotate_key` and `retire_key` from the copy of the ring they change to its commit: two made
        from one ring, the later would drop the earlier's change from memory (`_commit_ring`)."""
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        """The thread `loop` runs in: the plugin API's calls are made there (`_off_loop`)."""
        self._clocks_read: tuple[float, float] | None = None
        """The wall and monotonic clocks at the last sweep (at first, the sweeper's start): see `_set_back_since`."""
        self._set_back = 0.0
        """Seconds this process saw the wall clock go back while results were needed (`_set_back_since`)."""

    @property
    def host(self) -> ChildHost:
        """What the host provides (tools, hooks, settings); replacing it affects new children."""
        return self._supervisor.host

    @host.setter
    def host(self, host: ChildHost) -> None:
        self._supervisor.host = host

    @property
    def clock(self):
        return self._supervisor.host.clock

    @property
    def keyring(self) -> KeyRing | None:
        return self._supervisor.keyring

    def host_view(self) -> HostView:
        """The host's read-mostly view of children: frozen snapshots, and stopping a session's children."""
        return self._view

    # -- process lifetime ---------------------------------------------------------------

    async def start(self, *, hold_ends: bool = False) -> None:
        """Open the journal, load the key ring, start the engine and settle the children a
        previous process left unfinished: re-attached when the engine still runs them (and stopped,
        to end INTERRUPTED by process exit, or with the reason of a stop asked of them first, if an
        inline delegate_task of that process waited for them), started when the engine never got
        their jobs (the journal kept them), unless a stop was asked of them first (then they end as
        stopped before they ran), INTERRUPTED otherwise: by process exit, or with the reason of a stop
        asked of them first (journaled), stopped on purpose and never to be taken for lost. After `close`,
        raises `SubagentLifecycleError` (code ``CLOSED``): a closed service stays closed, as its children
        and engine were stopped for good.

        Children that start or end meanwhile get their `subagent_start` hooks and go through the completion
        pipeline before this returns, their results published; with ``hold_ends``, not until `release_ends`:
        for a host that registers hooks once the service has started (its plugins may use it then), which
        would otherwise not hear of them.

        A `close` that begins while this runs refuses launches at once, waits for this start to end,
        then closes what it opened; this then raises `SubagentLifecycleError` (code ``CLOSED``), as the
        service it started is closed.

        A start that fails (a key table this version cannot read, an engine that cannot connect) closes
        what it opened before it raises its error, as `close` would: its journal (and the database a
        journal of its own opened), its engine, the children that engine re-attached to. Left open, they
        would outlive a service its host gives up on, which need not call `close` (that returns at once
        now, however often called). The service is closed for good: build a new one to try again."""
        if self._closed:
            raise SubagentLifecycleError(CLOSED, code="CLOSED")
        self.loop, self._loop_thread = asyncio.get_running_loop(), get_ident()
        starting = self._starting = self.loop.create_future()
        failed = True
        try:
            await self._start(hold_ends)
            failed = False
        finally:
            self._starting = None
            starting.set_result(None)
            if failed:
                await self._close_failed_start()
        if self._closed:
            raise SubagentLifecycleError(CLOSED, code="CLOSED")

    async def _close_failed_start(self) -> None:
        try:
            await self.close()
        except Exception:  # the start's own error, raised next, says why it failed
            log.exception("closing what a failed start opened failed")

    async def _start(self, hold_ends: bool) -> None:
        await self.journal.open()
        self._opened = True
        rows = await self.journal.load_keys()
        # A journal of an older protocol, without `holds_records`, goes unchecked (it starts as before).
        holds_records = getattr(self.journal, "holds_records", None)
        if not rows and holds_records is not None and await holds_records():
            # Nothing deletes keys: only damage (a partial restore, a hand edit) empties the table beside records.
            raise ValueError(f"{KEY_TABLE} is empty, but the journal holds children whose handles were signed with"
                             " its keys: restore the table from the same backup as the journal's records, then start"
                             " again; a fresh key would leave every one of those handles unknown, its result unread")
        self._supervisor.keyring = KeyRing(rows, clock=self.clock.time)
        await self._save_keys()
        unfinished = _readable(await self.journal.unfinished()) if self.engine.survives_restart else []
        kept_jobs = {row.subagent_id: _kept_job(row) for row in unfinished}
        # A child asked to stop before its engine had its job is looked for (its start may have got
        # there), never started: the engine is not handed its job.
        stopped = {row.subagent_id for row in unfinished if row.stop_reason is not None}
        self._supervisor.adopting()
        jobs = await self.engine.start(self._supervisor, {
            sid: None if sid in stopped else job for sid, job in kept_jobs.items()})
        rows_by_id = {row.subagent_id: row for row in unfinished}
        orphans = []
        for job in jobs:
            record = Record.from_journal(rows_by_id[job.subagent_id])
            self._supervisor.adopt(record, job)
            if record.inline:
                orphans.append(record)
        self._supervisor.adopted()
        if orphans:
            # Inline children the engine still runs: the turn waiting for them died with the previous
            # process, and the gateway runs it again, delegating anew. Followed on, they would run to
            # their end for no one, their work done twice: stopped as a graceful stop stops them (the
            # stop journaled, so a process killed again before they end asks again). One asked to stop
            # before (`/stop`, a cancel) was asked again as it was adopted: that stop came first, and
            # its reason stands, as it would have had the child ended before the process.
            await self._supervisor.interrupt([r for r in orphans if r.stop_request is None], PROCESS_EXIT,
                                             closing=True)
            log.info("%d inline child(ren) whose turn ended with the previous process are being stopped",
                     len(orphans))
        kept = frozenset(job.subagent_id for job in jobs)
        unstarted = [(Record.from_journal(row), kept_jobs[row.subagent_id]) for row in unfinished
                     if row.subagent_id in stopped and row.subagent_id not in kept
                     and kept_jobs[row.subagent_id] is not None]
        if unstarted:
            await self._supervisor.end_unstarted(unstarted)
            log.info("%d child(ren) asked to stop before they started ended without starting", len(unstarted))
            # Their ends are held until `release_ends`, their rows not terminal yet.
            kept = kept.union(record.handle.subagent_id for record, _ in unstarted)
        now = self.clock.time()
        stale = await self.journal.interrupt_unfinished(now, lambda rec: _interrupted_result(rec, now), keep=kept)
        if stale:
            log.warning("%d child(ren) were running when the process stopped; marked INTERRUPTED (CANCELLED where "
                        "a cancel was asked)", len(stale))
        if jobs:
            log.info("re-attached to %d child(ren) still running", len(jobs))
        if not self._closed:  # else a close began meanwhile: no sweeper would outlive it
            self._sweeper = asyncio.create_task(self._sweep_forever(), name="lifecycle-sweeper")
        if not hold_ends:
            await self._supervisor.release()

    async def release_ends(self) -> None:
        """After ``start(hold_ends=True)``, once the host's hooks are in place: the `subagent_start` hooks of
        the children the engine reported starting since the start began run now (a job it never got, started
        at the restart), then the children that ended meanwhile (stopped before their engine had them, or
        reported ended by the engine) go through the completion pipeline, `subagent_stop` hooks included;
        later starts and ends, at once. Returns once their results are published. Idempotent; `close` does
        it first if no one did."""
        await self._supervisor.release()

    async def close(self, *, grace: float | None = None) -> None:
        """Interrupt every running child (unless the engine's children outlive this process),
        journal each as INTERRUPTED, and flush. Launches are refused from the moment it begins
        (``CLOSING``, then ``CLOSED``); one being journaled then is waited for, and its children
        end like the others. ``grace``: how long the engine may wait for the requests it still
        sends (on Temporal: stops, steers, the workflow starts of children launched just before;
        past it the next start sends them); None for the engine's own default (10 s on Temporal).
        Idempotent: a second call while the first runs returns when it does (its grace unused).
        Before `start`, it only marks the service closed, for good; during `start`, it waits for
        that start, then closes what it opened. A ``grace`` that is no number of seconds (a string, a bool,
        NaN) raises `SubagentLifecycleError` and closes nothing; one beyond any float waits for ever."""
        grace = grace_seconds(grace)
        if self._closing is None:
            self._closed = True
            self._supervisor.closing = True  # launches are refused from now, not from the close task's first step
            if self.loop is None:  # never started: the sync facade then reaches the loop, and hears CLOSED
                self.loop, self._loop_thread = asyncio.get_running_loop(), get_ident()
            if self._sweeper is not None:
                self._sweeper.cancel()
                self._sweeper = None
            self._closing = asyncio.ensure_future(self._close(grace))
        # Shielded: a caller cancelled meanwhile (a shutdown timing out) must not stop the close
        # another caller waits for, halfway between the children and the journal.
        await asyncio.shield(self._closing)

    async def _close(self, grace: float | None) -> None:
        supervisor = self._supervisor
        try:
            if self._starting is not None:
                # Its engine and journal are opened meanwhile: closed once it has, never left open.
                await asyncio.wait([self._starting])
            if self.keyring is None:  # never started, or its start failed before its keys: no child ran
                if self._opened:  # its journal was, and its connection (a database of its own) must not outlive it
                    supervisor.sealed = True
                    await self.journal.close()
                return
            await supervisor.close(grace=grace)
            supervisor.sealed = True  # from here on nothing may reach the journal: it is being closed
            await self.journal.close()
        finally:
            supervisor.sealed = supervisor.closed = True
            self._end_waits()

    def _end_waits(self) -> None:
        """Closed: the waits for children it still holds unfinished return, as timed out (`wait`), and the host
        view's and inline delegate_task's waits raise ``CLOSED`` (`Supervisor.end_waits`). A host that closes the
        service before it stops the turns and deliveries waiting on it would otherwise keep them for ever."""
        waits, self._waits = self._waits, set()
        for waiter in waits:
            _time_out(waiter)
        self._supervisor.end_waits()

    # -- operations -----------------------------------------------------------------------

    async def launch(self, request: SubagentLaunchRequest) -> SubagentHandle:
        """Validate, journal as PENDING (durably) and queue the child; returns at once with its handle.

        Raises `SubagentLifecycleError` for every rejection, naming the problem.
        """
        turn = active_turn()  # a plugin has no other way to name its parent
        # Not live: a task the plugin started in a turn that has ended. Being stopped (`/stop`, `/new`, a subagent's
        # own stop: its interrupt asked, its end to come): a blocking tool's thread runs on after the stop, and a
        # child it launched then, after the stop had ended the session's children, ran on out of its reach.
        if turn is None or not turn.live or turn.stopping:
            raise SubagentLifecycleError(NO_PARENT, code="NO_PARENT")
        supervisor = self._supervisor
        if supervisor.keyring is None or supervisor.closing:
            # Before the request is read: a closing service's invalid launch raised its validation error,
            # not CLOSING, so a plugin retrying after fixing the request was refused once more.
            supervisor.check_open()
        if get_ident() != self._loop_thread:
            self._off_loop()
        validate_request(request)
        if request.model is not None:
            raise SubagentLifecycleError("Per-launch model override is not supported; configure delegation.model.")
        session = turn.session
        limit = self.host.delegation.max_spawn_depth
        if session.depth >= limit:
            # A plugin's tool is inherited by the children it launches: unchecked, each level launched the next.
            levels = "level" if limit == 1 else "levels"
            raise SubagentLifecycleError(
                f"Subagents nest at most {limit} {levels} deep (delegation.max_spawn_depth): this session is a"
                f" subagent at depth {session.depth}, and may not launch one.", code="DEPTH_LIMIT")
        allowed = tuple(request.allowed_toolsets) if request.allowed_toolsets else None
        if allowed:
            check_toolsets(self.host, session, allowed)
        if request.parent_session_id is not None and request.parent_session_id != session.session_id:
            raise SubagentLifecycleError("parent_session_id does not match the active session.")
        metadata = request.metadata
        spec = ChildSpec._build(request.goal, request.context, request.role, allowed,
                                plain_metadata(metadata) if metadata else _NO_METADATA)
        (record,) = await supervisor.submit(
            session, turn.turn_id, [spec], correlation_id=request.correlation_id, handles_out=True
        )
        return record.handle

    async def status(self, handle: Any) -> SubagentStatus:
        if get_ident() != self._loop_thread:
            self._off_loop()
        found = self._issued(handle)
        if found is _ASK_JOURNAL:
            found = await self._lookup(handle)
        if found is None:
            return SubagentStatus(_shown(handle), S.UNKNOWN, self.clock.time(), UNKNOWN_HANDLE)
        if type(found) is SubagentResult:
            return SubagentStatus(found.handle, found.state, found.completed_at or 0.0)
        return SubagentStatus(found.handle, found.state, found.updated_at)

    async def wait(self, handle: Any, timeout_seconds: float | None = None) -> SubagentTerminalState:
        """Wait until the child is terminal or ``timeout_seconds`` pass; the child keeps
        running after a timed-out wait, and cancelling the wait leaves it running too. A timeout of
        zero or less does not wait; one beyond any float (infinity, ``10**400``) waits as None does; one
        that is no number (a string, a bool, NaN) raises `SubagentLifecycleError`.

        After `close`, a child the service still holds unfinished (left running where it runs, on an engine
        whose children outlive the process; left behind by the in-process close's grace) can end unheard by
        this process: waiting for it, with no timeout, would never return. Such a wait does not wait, and
        one under way as the close ends returns then: as a timed-out wait does (``completed`` False,
        ``timed_out`` True, the state it last had), with ``diagnostic`` ``CLOSED``. The next start follows
        the child again, and its handle reads it there."""
        if timeout_seconds is not None and (
            not isinstance(timeout_seconds, int | float) or isinstance(timeout_seconds, bool)
            or timeout_seconds != timeout_seconds  # NaN
        ):
            raise SubagentLifecycleError("timeout_seconds must be a number of seconds or None.")
        if timeout_seconds is not None and timeout_seconds > sys.float_info.max:  # the loop's clock is a float
            timeout_seconds = None
        if get_ident() != self._loop_thread:
            self._off_loop()
        found = self._issued(handle)
        if found is _ASK_JOURNAL:
            found = await self._lookup(handle)
        if found is None:
            return SubagentTerminalState(_shown(handle), S.UNKNOWN, completed=True, diagnostic=UNKNOWN_HANDLE)
        if type(found) is Record and found.result is None:
            supervisor = self._supervisor
            if supervisor.sealed:  # closed: nothing will tell this process how it ends, and waiting would never end
                return SubagentTerminalState(found.handle, found.state, completed=False, timed_out=True,
                                             diagnostic=WAIT_CLOSED)
            waiter = found.waiter(self.loop)
            waits = self._waits
            waits.add(waiter)  # for the close to end it (`_end_waits`)
            timer = None if timeout_seconds is None else self.loop.call_later(max(0.0, timeout_seconds), _time_out, waiter)
            try:
                await waiter
            finally:
                waits.discard(waiter)
                if timer is not None:
                    timer.cancel()
                if found.result is None:  # it gave up (timed out, cancelled, closed); `wake` dropped a woken one
                    found.forget(waiter)
            if found.result is None:
                return SubagentTerminalState(found.handle, found.state, completed=False, timed_out=True,
                                             diagnostic=WAIT_CLOSED if supervisor.sealed else None)
        return SubagentTerminalState._build(found.handle, found.state, True)

    async def cancel(self, handle: Any, reason: str | None = CANCEL_REASON) -> SubagentCancelResult:
        """Ask the child to stop at its next safe boundary. Never reports completion:
        `wait`/`result` show CANCELLED (or what it reached first) once it has stopped. A child
        finished, or finishing (its end known, its result not yet published), is not changed: the
        answer says it already finished, in the state it ends in. Nor is a child the host is stopping
        already (`HostView.interrupt_child`, ``/stop``, the close): it ends as that stop ends it, and the
        answer says it is stopping, in the state it has now. After `close`, a child still live (on an
        engine whose children outlive the process) raises `SubagentLifecycleError` (``CLOSED``), changing
        nothing: the stop could not be journaled for the next start to ask again.

        Answers once the stop is committed (`Supervisor.cancel`): "accepted" must survive a crash, and end the
        child CANCELLED at the next start, not INTERRUPTED. If the commit fails, raises `JournalError`
        (``JOURNAL_WRITE_FAILED``): the child is stopped all the same, and the journal writes the stop once it can.

        ``reason`` is kept to its first 500 characters (`Supervisor.cancel`: the journal keeps it, and the
        child's error says ``cancellation requested: <reason>``); None gives the default. Anything else raises
        `SubagentLifecycleError` before the handle is looked at: made text with ``str()``, a plugin's
        mistake (an exception object, a dict) would become the child's error, and ``None`` the word "None"."""
        if reason is None:
            reason = CANCEL_REASON
        elif not isinstance(reason, str):
            raise SubagentLifecycleError("reason must be a string or None.")
        if get_ident() != self._loop_thread:
            self._off_loop()
        found = self._issued(handle)
        if found is _ASK_JOURNAL:
            found = await self._lookup(handle)
        if found is None:
            return SubagentCancelResult(False, S.UNKNOWN, unknown_handle=True, message="Unknown subagent handle.")
        ended = found.state if type(found) is SubagentResult or found.state.terminal else found.ending
        if ended is not None:
            return SubagentCancelResult(
                False, ended, already_terminal=True, message=f"The subagent already finished ({ended.value})."
            )
        if found.interrupt_reason is not None and found.state is not S.CANCEL_REQUESTED:
            # Cancelled now, it would end CANCELLED, with the interrupt's reason, which was asked first.
            return SubagentCancelResult(False, found.state, message="The subagent is already stopping.")
        await self._supervisor.cancel(found, reason)
        return SubagentCancelResult(True, S.CANCEL_REQUESTED, message="Cancellation requested.")

    async def steer(self, handle: Any, text: str) -> bool:
        """Hand ``text`` to the running child, which reads it at its next step. False, queueing nothing,
        when the child is not running (waiting for a slot, starting, stopping, finishing, finished) or the handle is
        unknown, and after `close`; a child that ends before that step does not read it."""
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_GOAL_CHARS:
            raise SubagentLifecycleError(f"text must be a non-empty string of at most {MAX_GOAL_CHARS} characters.")
        if get_ident() != self._loop_thread:
            self._off_loop()
        found = self._issued(handle)
        if found is _ASK_JOURNAL:
            found = await self._lookup(handle)
        if type(found) is not Record or found.result is not None or found.state is not S.RUNNING:
            return False
        if found.completing:  # its end is known, its state RUNNING until its result is published: it reads no more
            return False
        if found.interrupt_reason is not None:  # an interrupt asked of it: stopping, RUNNING until it ends
            return False
        if self._supervisor.sealed:  # closed: its engine no longer sends anything, nor may its journal keep it
            return False
        return self._supervisor.engine.steer(found.handle.subagent_id, text)

    async def result(self, handle: Any) -> SubagentResult:
        """The final result once the child is terminal (equal on every read, also after a
        restart); ``NOT_READY`` before, ``UNKNOWN_HANDLE`` for a handle that does not verify."""
        if get_ident() != self._loop_thread:
            self._off_loop()
        found = self._issued(handle)
        if found is _ASK_JOURNAL:
            found = await self._lookup(handle)
        if found is None:
            return SubagentResult(_shown(handle), S.UNKNOWN, False, error_classification=UNKNOWN_HANDLE)
        if type(found) is SubagentResult:
            return found
        if found.result is None:
            return SubagentResult(found.handle, found.state, False, error_classification=NOT_READY)
        return found.result

    async def reconnect(self, handle: Any) -> SubagentReconnectResult:
        """A pure lookup, also after a restart; it never starts a replacement child."""
        if get_ident() != self._loop_thread:
            self._off_loop()
        found = self._issued(handle)
        if found is _ASK_JOURNAL:
            found = await self._lookup(handle)
        if found is None:
            return SubagentReconnectResult(False, S.UNKNOWN, RECONNECT_UNAVAILABLE)
        return SubagentReconnectResult(True, found.state)

    # -- lookups and upkeep ---------------------------------------------------------------

    def _issued(self, handle: Any) -> Record | SubagentResult | None | object:
        """`_lookup` without awaiting, for the very handle object this service issued for a
        child it still holds (what a plugin passes back nearly always): it needs no second
        HMAC, as long as its key is not retired. `_ASK_JOURNAL` for anything else."""
        supervisor = self._supervisor
        keyring = supervisor.keyring
        if type(handle) is SubagentHandle and keyring is not None:
            try:
                found = supervisor.get(handle.subagent_id)
            except Exception:  # a hand-built handle's id may be unhashable (or hostile): never one we issued
                return None
            if found is not None and found.handle is handle and (
                not keyring.has_retired or keyring.signs_for(handle.capability)
            ):
                turn = active_turn()  # the session a plugin's handle must belong to, in one of its turns
                return found if (turn is not None and turn.session.session_id == handle.parent_session_id
                                 and turn.live) else None
        return _ASK_JOURNAL

    async def _lookup(self, handle: Any) -> Record | SubagentResult | None:
        """What a verified handle of the active parent names: the record of a live child, or
        the final result of a finished one; None for anything else."""
        supervisor = self._supervisor
        keyring = supervisor.keyring
        if keyring is None:
            return None
        turn = active_turn()  # the session a plugin's handle must belong to, in one of its turns
        if turn is None or not turn.live:
            return None
        if isinstance(handle, Mapping):
            try:
                handle = SubagentHandle.from_dict(handle)
            except SubagentLifecycleError:
                return None
        if not verify(keyring, handle) or turn.session.session_id != handle.parent_session_id:
            return None
        found = supervisor.get(handle.subagent_id)
        if found is None:
            if supervisor.sealed:  # closed: the service answers for the children it still holds, and for no other
                return None
            row = await self.journal.get(handle.subagent_id)
            if row is None or row.result is None:
                return None
            try:
                found = SubagentResult.from_dict(json.loads(row.result))
            except (ValueError, SubagentLifecycleError):
                log.error("journal record of %s is unreadable; treating its handle as unknown", handle.subagent_id)
                return None
            supervisor.tallies.remember(found)
        return found if found.handle == handle else None

    async def _sweep_forever(self) -> None:
        self._set_back_since(self.clock.time(), None)  # the clocks at the start: a step before the first sweep counts
        while True:
            await asyncio.sleep(self.settings.sweep_interval_seconds)
            try:
                await self.sweep()
            except Exception:
                log.exception("retention sweep failed")

    async def sweep(self) -> int:
        """Forget terminal records older than the retention window, in memory and in the journal;
        in the journal, not those of children that finished since the host's results are needed
        (`HostView.keep_results_since`), whatever their age, nor any that finished up to
        `DISPATCH_MARGIN_SECONDS` before that (and as far again as this process saw the wall clock step back
        meanwhile): set back while a child ran, the clock dates its end before its dispatch."""
        now = self.clock.time()
        cutoff = now - self.settings.retention_seconds
        self._supervisor.tallies.sweep(cutoff, now)
        needed = self._supervisor.results_needed_since()
        set_back = self._set_back_since(now, needed)
        if needed is not None:
            cutoff = min(cutoff, needed - DISPATCH_MARGIN_SECONDS - set_back)
        return await self.journal.sweep(cutoff)

    def _set_back_since(self, now: float, needed: float | None) -> float:
        """How far the wall clock went back (against the monotonic one) in this process while results were needed:
        each step since the last reading added, the sum forgotten once none is (``needed`` None). A step ahead
        subtracts nothing: the ends dated before it stay that far back."""
        mono = self.clock.monotonic()
        if self._clocks_read is not None:
            back = (mono - self._clocks_read[1]) - (now - self._clocks_read[0])
            if back > 1.0:  # not the fractions of a second NTP's slewing and the reads between add
                self._set_back += back
        self._clocks_read = (now, mono)
        if needed is None:
            self._set_back = 0.0
        return self._set_back

    def _off_loop(self) -> None:
        """A call from a thread other than the service loop's: refused, before it touches anything, when that
        thread runs an event loop of its own (a plugin tool's ``asyncio.run``). The service's futures, tasks and
        journal belong to its loop: a launch made there was journaled, then failed on such a future, leaving a
        child that never ran and its correlation id held. A thread without one is the sync facade answering
        before `start`, which never waits. (Told by thread, not by loop: on CPython 3.11 asking for the running
        loop costs a ``getpid()`` system call, which the child's path would pay at every call.)"""
        if self._loop_thread is not None and asyncio._get_running_loop() is not None:
            raise SubagentLifecycleError(ON_OTHER_LOOP, code="OTHER_LOOP")

    def _require_started(self) -> None:
        self._supervisor.check_open()

def _time_out(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _shown(handle: Any) -> Any:
    """What to echo back for a handle that did not verify: the object itself when it is a handle."""
    if isinstance(handle, SubagentHandle):
        return handle
    if isinstance(handle, Mapping):
        try:
            return SubagentHandle.from_dict(handle)
        except SubagentLifecycleError:
            pass
    return _UNKNOWN_HANDLE


_UNKNOWN_HANDLE = SubagentHandle(CONTRACT_VERSION, "unknown", None, None, 0.0, None, None, "leaf", 0, "")
