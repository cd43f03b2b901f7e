"""How `switchboard worker` meets failures. A fatal error of a running worker (the SDK ends it and raises
why: here Temporal has no such namespace) is one line naming Temporal's own reason, not ``could not start:
RuntimeError: Workflow worker failed``, and the SDK's log line of it (``Worker failed, shutting down``, for an
error after the worker's start) comes without its traceback (the command's goes to the log at DEBUG). A model
that fails to close is logged, and the others are still closed."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from gateway import worker as gateway_worker
from gateway.errors import StartupError
from gateway.testing import make_config
from gateway.worker import WorkerModels, _FatalErrorTold, serve_children

pytest.importorskip("temporalio")

from temporalio.client import Client  # noqa: E402

from agent import ToolRegistry  # noqa: E402
from agent.models.demo import DemoModel  # noqa: E402
from lifecycle.settings import TemporalSettings  # noqa: E402
from lifecycle.temporal import ChildWorker, WorkerToolbox  # noqa: E402


async def test_a_fatal_worker_error_is_one_line_naming_temporals_reason(temporal_server):
    temporal = TemporalSettings(address=temporal_server.address, namespace="deleted-meanwhile",
                                task_queue=f"t-{uuid.uuid4().hex[:12]}")
    # A namespace that went away after the connect, as one deleted under a running worker does.
    client = await Client.connect(temporal.address, namespace=temporal.namespace)
    model = DemoModel()
    worker = ChildWorker(client, temporal.task_queue, WorkerToolbox(ToolRegistry(), lambda provider, name: model))
    with pytest.raises(StartupError) as stopped:
        async with asyncio.timeout(30):
            await serve_children(worker, asyncio.Event(), temporal, "worker-1")
    line = str(stopped.value)
    assert line.startswith(f"lifecycle.temporal: the worker stopped on a fatal error from Temporal at"
                           f" {temporal.address} (namespace deleted-meanwhile): NotFound: "), line
    assert "deleted-meanwhile" in line.split(": NotFound: ")[1] and "\\n" not in line and "\\x" not in line, line
    assert not logging.getLogger("temporalio.worker._worker").filters  # taken off again


def test_the_sdks_line_of_a_fatal_error_comes_without_its_traceback():
    try:
        raise RuntimeError("Workflow worker failed")
    except RuntimeError as exc:
        record = logging.LogRecord("temporalio.worker._worker", logging.ERROR, __file__, 1,
                                   "Worker failed, shutting down", (), (type(exc), exc, exc.__traceback__))
    assert _FatalErrorTold().filter(record) and record.exc_info is None


async def test_a_worker_model_that_fails_to_close_leaves_no_other_unclosed(tmp_path, monkeypatch, caplog):
    # One failure left the models after it open, and `run_worker` then skipped closing the routes' models.
    closed: list[str] = []

    class Closable:
        def __init__(self, name: str) -> None:
            self.name = name

        async def aclose(self) -> None:
            if self.name == "broken":
                raise OSError("the connection pool is gone")
            closed.append(self.name)

    monkeypatch.setattr(gateway_worker, "build_model", lambda settings: Closable(settings.name))
    models = WorkerModels(make_config(tmp_path))
    for name in ("first", "broken", "last"):
        models("DemoModel", name)
    with caplog.at_level(logging.ERROR, logger="gateway.worker"):
        await models.aclose()
    assert closed == ["first", "last"]
    assert [r.getMessage() for r in caplog.records] == ["closing the demo model broken failed"]
