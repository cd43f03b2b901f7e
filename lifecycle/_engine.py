"""The engine seam: where and when children run, apart from what is remembered about them.

The lifecycle service decides everything durable: it validates and signs a
launch, journals it, and runs the completion pipeline once per child. An
engine only runs jobs. It receives each child as a `ChildJob` (plain data),
reports progress to the `EngineHost` it was started with, and takes stop and
steer requests by child id. `InProcessEngine` runs children as asyncio tasks
in this process; a distributed engine runs the same jobs on workers elsewhere
(see docs/lifecycle.md, "Engines and journals").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from agent import AgentSession, Clock, ToolTraceEntry
from lifecycle._job import ChildJob, ChildOutcome
from lifecycle.settings import DelegationSettings


class EngineHost(Protocol):
    """What the lifecycle service offers the engine that runs its children.

    Reports for one child come in this order: `starting` (at most once),
    `running` (at most once, after `starting`; a child re-attached after a restart
    is reported running without starting), `finished` (exactly once, also for a
    child that never started). An engine reports `running` before `finished` for
    every child that made a model call: an interrupted child that never ran keeps
    no partial output. `placed` (only from an engine whose children survive a
    restart) comes before `finished`, at any point before it, or not at all. A
    report about a child the service does not know, or a second `finished`, is
    ignored.
    """

    @property
    def clock(self) -> Clock:
        """The service's clock: liveness and durations are measured on it."""

    @property
    def delegation(self) -> DelegationSettings:
        """The current ``delegation.*`` settings (read again at every check: they may change)."""

    def build_child(self, job: ChildJob, project_context: str) -> AgentSession:
        """The child's session, built from its live parent in this process: the parent's own
        tool objects, services and the model chosen at launch. Only an engine that runs
        children in the service's process calls this; a worker elsewhere builds the same
        session from the job and its own configuration."""

    async def starting(self, subagent_id: str) -> None:
        """The engine took the job and begins building the child: the state becomes
        STARTING and ``subagent_start`` hooks run before this returns. While the service starts
        (until its host's hooks are in place), they are held and run then, before the child's
        ``subagent_stop``; this returns at once."""

    def running(self, subagent_id: str, started_at: float | None = None) -> None:
        """The child is built and about to make its first model call: the state becomes
        RUNNING (unless a cancel was requested) and ``started_at`` is set: to now, or to the given
        wall-clock time for a child that began before the engine could say so (one re-attached after
        a restart, found running where it runs), though never later than now on the service's clock."""

    def placed(self, subagent_id: str) -> None:
        """Reported by an engine whose children survive a restart, once the child's job is held where it
        runs (on Temporal: its workflow exists), so that a later start finds the child there. Until then
        the journal keeps the job, and the next start hands it back (`Engine.start`): a launch whose
        process stopped, or was killed, before the engine had the job still runs (unless it was asked to
        stop, or its caller waited for it in that process: an inline delegate_task's). An engine that
        never reports it is handed back the jobs of all its unfinished children."""

    def unsent_steers(self, subagent_id: str, steers: Sequence[Mapping[str, str]]) -> None:
        """Reported by an engine whose children survive a restart: the steers asked of the child that it
        has not sent (``{"id", "text"}``, oldest first; none once they are sent), as soon as one is asked,
        whenever they change until they are all sent, and as it closes. They
        are journaled (the journal's copy only when it changes), so a process killed meanwhile loses
        none, and handed back to the next start's engine (`Engine.steer_again`)."""

    async def finished(self, subagent_id: str, outcome: ChildOutcome) -> None:
        """The child has ended, however it ended. Runs the completion pipeline and puts the
        terminal result to the journal before returning; the result becomes readable (and
        waiters wake) once that is committed, which may be just after. While the service starts
        (until its host's hooks are in place), it holds the end and returns at once: the service
        finishes the child itself then."""


class Engine(Protocol):
    """Runs child jobs for one lifecycle service. Used from the service's event loop."""

    survives_restart: bool
    """True when children keep running while the service's process is down. The service
    then leaves them running on `close` and re-attaches to them on `start`; otherwise it
    interrupts them on `close` and marks those a dead process left behind INTERRUPTED."""

    runs_here: bool
    """True when children run in the service's process, built by `EngineHost.build_child`: their
    own ``turn_*``, ``model_call`` and ``tool_*`` hooks run on the host's registry. False when they
    run elsewhere, where no hooks run: what they spent reaches this process only in their outcome
    (``subagent_stop`` says which, ``child_ran_here``)."""

    async def start(self, host: EngineHost, unfinished: Mapping[str, ChildJob | None]) -> Sequence[ChildJob]:
        """Begin serving ``host``. ``unfinished`` maps the children the journal holds as not
        finished (always none unless `survives_restart`) to their jobs, for those the engine had not
        reported `EngineHost.placed` and that no stop was asked of, else to None (a child asked to stop
        before the engine had it is looked for, never started). Returns the jobs among them that this
        engine runs and will report on: those it still runs, and those it never got and starts now (a
        launch journaled is a child to run). The service ends the rest: a stopped one whose job it kept
        as stopped before it ran, the others INTERRUPTED. It may report on the children it returns before
        it returns (one that ended while no process followed it, as it re-attaches to others): the
        service keeps those reports until it holds their records."""

    def submit(self, job: ChildJob) -> None:
        """Run the job when a slot is free. Never blocks and never raises for the job's own
        failures: every way a child can end is reported through `EngineHost.finished`."""

    def withdraw(self, subagent_id: str) -> bool:
        """Remove a job that has not started. True when it was removed: the engine will then
        never report on it and the service finishes it itself. False once it started."""

    def interrupt(self, subagent_id: str, reason: str) -> None:
        """Stop a started child at its next safe boundary (its in-flight model call or tool is
        cancelled). It is reported finished with status ``interrupted``, error ``reason`` and
        the partial output it had; a child still being built never makes a model call."""

    def steer(self, subagent_id: str, text: str) -> bool:
        """Deliver text to a running child at its next iteration boundary; False when the
        child is not running (yet or any more)."""

    def steer_again(self, subagent_id: str, steers: Sequence[Mapping[str, str]]) -> None:
        """Send a re-attached child the steers a previous process could not (`EngineHost.unsent_steers`),
        in order, before any new one, each once: under its id, which the child reads once. Only an
        engine that reports unsent steers is ever asked."""

    def activity(self, subagent_id: str) -> str | None:
        """What the child is doing now (``waiting for a slot``, ``starting``, ``waiting for
        the model``, ``running web_search``...); None when this engine does not know it."""

    def tool_trace(self, subagent_id: str) -> tuple[ToolTraceEntry, ...] | None:
        """A running child's latest tool calls, oldest first, metadata only; None when this
        engine does not know them. Optional: the host view reads it only where it exists."""

    async def close(self, *, grace: float | None = None) -> None:
        """Stop starting jobs and wait for the running ones to report (the service interrupts
        them first unless `survives_restart`). Idempotent. ``grace`` is how long it may wait for the
        requests it still sends to where its children run (stops, steers, jobs it has not handed over),
        which are left to the next start past it; None for its own default. An engine that sends none
        waits that long (None: for ever) for the children interrupted here, as their outcomes are not kept
        elsewhere; one that ignores its cancellation is left behind, its row not terminal, so the next
        start ends it INTERRUPTED as after a crash."""
