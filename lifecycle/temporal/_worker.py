"""`ChildWorker`: a Temporal worker that runs children — their workflows, model calls and tools.

Any number of them may poll one task queue, on any machines: each takes whole
children and single calls as they come, and when one dies another finishes its
children (the workflow replays from history; the call in flight is retried once its
heartbeats stop).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from lifecycle.temporal._activities import ChildActivities, WorkerToolbox
from lifecycle.temporal._workflow import ChildWorkflow

log = logging.getLogger("lifecycle.temporal.worker")

STICKY_TIMEOUT = timedelta(seconds=3)
"""How long a child's next step waits for the worker that ran its last one before any worker
may take it: the pause a dead worker's children see before they go on elsewhere."""
STUCK_WAIT_SECONDS = 1.0
"""How long calls still running past the grace get to end once cancelled: one that ignores its
cancellation (a plugin's tool retrying whatever interrupts it) is left behind after that."""


class ChildWorker:
    """``async with ChildWorker(...)`` runs it for the block; `run` until cancelled.

    ``max_concurrent`` bounds the model and tool calls this worker runs at once (each
    child has at most one in flight); ``heartbeat_seconds`` is how often a running call
    heartbeats at most (``delegation.heartbeat_interval_seconds``). On shutdown, calls
    in flight get ``grace_seconds`` to finish; the rest are cancelled and retried by other
    workers. Temporal's shutdown waits for every cancelled call to end: one that ignores its
    cancellation gets `STUCK_WAIT_SECONDS` and is then named in the log and left behind, so the
    stop ends; the process must then end without waiting for it (its heartbeats stop only then,
    and Temporal gives the call to another worker once they have).
    """

    def __init__(self, client: Client, task_queue: str, toolbox: WorkerToolbox, *, max_concurrent: int = 100,
                 heartbeat_seconds: float = 5.0, grace_seconds: float = 0.0, identity: str | None = None) -> None:
        self.activities = ChildActivities(toolbox)
        self.grace_seconds = grace_seconds
        self.failed: BaseException | None = None
        """The fatal error the SDK ended this worker with, if it did."""
        self.on_failed: Callable[[], object] | None = None
        """Called at a fatal error. The SDK's shutdown then waits for its pollers (a long poll may hold
        it for a minute or more) before it ends the block: a worker polling nothing, in a process that
        looks alive, all that time."""
        self.worker = Worker(
            client,
            task_queue=task_queue,
            workflows=[ChildWorkflow],
            activities=[self.activities.prepare, self.activities.model_call, self.activities.tool_call],
            max_concurrent_activities=max_concurrent,
            max_concurrent_local_activities=max_concurrent,
            max_heartbeat_throttle_interval=timedelta(seconds=heartbeat_seconds),
            sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
            graceful_shutdown_timeout=timedelta(seconds=grace_seconds),
            identity=identity,
            on_fatal_error=self._failed,
        )

    async def _failed(self, error: BaseException) -> None:
        self.failed = error
        if self.on_failed is not None:
            self.on_failed()

    async def run(self) -> None:
        await self.worker.run()

    async def shutdown(self) -> None:
        await self.worker.shutdown()

    async def __aenter__(self) -> ChildWorker:
        await self.worker.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            async with asyncio.timeout(self.grace_seconds + STUCK_WAIT_SECONDS):
                await self.worker.__aexit__(*exc)
        except TimeoutError:
            for call in self.activities.in_flight.values():
                log.error("%s did not end within %.0f s of its cancellation (it ignores cancellation): left behind, "
                          "another worker runs it once this process has ended", call, STUCK_WAIT_SECONDS)
