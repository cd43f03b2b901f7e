"""The Temporal core's (Rust) own log lines go through Python logging, as ``lifecycle.temporal.core``: in the
log's format and redacted, not printed by the core around it, and without its blob of fields."""

from __future__ import annotations

import asyncio
import logging
import uuid

from temporalio import workflow
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from lifecycle.settings import TemporalSettings
from lifecycle.temporal import connect


@workflow.defn(name="test-core-log-failing")
class Failing:
    @workflow.run
    async def run(self) -> None:
        raise RuntimeError("a workflow task that fails")  # not an ApplicationError: the core warns and retries it


class Caught(logging.Handler):
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self.arrived = asyncio.Event()
        self._loop = loop

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self._loop.call_soon_threadsafe(self.arrived.set)


async def test_the_core_warns_through_python_logging(temporal_server, capfd):
    settings = TemporalSettings(address=temporal_server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
    client = await connect(settings)
    caught = Caught(asyncio.get_running_loop())
    core = logging.getLogger("lifecycle.temporal.core")
    core.addHandler(caught)
    try:
        async with Worker(client, task_queue=settings.task_queue, workflows=[Failing],
                          workflow_runner=UnsandboxedWorkflowRunner()):
            handle = await client.start_workflow(Failing.run, id=f"w-{uuid.uuid4().hex}",
                                                 task_queue=settings.task_queue)
            await asyncio.wait_for(caught.arrived.wait(), 30)
            await handle.terminate()
    finally:
        core.removeHandler(caught)
    record = caught.records[0]
    assert record.name == "lifecycle.temporal.core" and record.levelno == logging.WARNING
    assert "Failing workflow task" in record.getMessage()
    assert "Failure {" not in record.getMessage()  # the fields, left on the record
    printed = capfd.readouterr()
    assert "Failing workflow task" not in printed.out + printed.err
