"""Many large tool outputs in one model answer never take a child's workflow past Temporal's hard limit on
its history (which terminates it, the child lost with all it had done): a run cannot continue as new between
the tool calls of one answer, so past a bound the rest of them are not run (the model reads why), and the run
continues as new before the next model call.

Against a dev server of its own whose limit is lowered to 1 MB (not 50), with the workflow's bounds lowered
to match: no test writes 50 MB.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from lifecycle import ChildJob, ChildOutcome
from lifecycle.settings import TemporalSettings
from lifecycle.temporal import WORKFLOW, ChildLimits, ChildWorker, WorkerToolbox, connect
from lifecycle.temporal import _workflow as temporal_workflow
from lifecycle.temporal.testing import DevServer
from tests.lifecycle.conftest import make_registry
from tests.lifecycle.test_temporal_continue import runs

HISTORY_LIMIT = 1_000_000
OUTPUT = 40_000
CALLS = 30
"""30 outputs of 40 kB in one answer: 1.2 MB of results, past the server's limit."""


@pytest.fixture
async def small_history(tmp_path, monkeypatch):
    # Room below the limit for the last call let in and for the run's end: the state it carries (as
    # big as the conversation here, which is at most a payload in a real child) is written into this
    # run's history too.
    monkeypatch.setattr(temporal_workflow, "_FULL_AFTER_BYTES", 500_000)
    monkeypatch.setattr(temporal_workflow, "_CONTINUE_AFTER_BYTES", 300_000)
    with DevServer(log_file=tmp_path / "server.log", dynamic_config=(
            f"limit.historySize.error={HISTORY_LIMIT}", f"limit.historySize.warn={HISTORY_LIMIT // 2}")) as server:
        settings = TemporalSettings(address=server.address, task_queue=f"t-{uuid.uuid4().hex[:12]}")
        client = await connect(settings)
        yield settings, client


async def test_many_large_tool_outputs_in_one_answer_stay_under_the_history_limit(small_history):
    """30 outputs of 40 kB in one answer (past the 1 MB limit): those past the bound are not run, the model
    reads why, the child's compactor cuts the results it read, the run continues as new, and the calls made
    again there run; the child ends with its answer instead of being terminated by Temporal."""
    settings, client = small_history
    ran = []
    tools = make_registry()
    tools.add("bulky", "big output", {"type": "object"}, lambda args, ctx: ran.append(1) or "x" * OUTPUT,
              toolset="file")

    def leaf(request: ModelRequest) -> dict:
        if request.iteration == 0:
            return {"tool_calls": [{"name": "bulky"} for _ in range(CALLS)]}
        last = max(i for i, m in enumerate(request.messages) if m.get("role") == "assistant")
        refused = sum(temporal_workflow.HISTORY_FULL in str(m["content"]) for m in request.messages[last + 1:])
        if refused:  # made again, after the switch
            return {"tool_calls": [{"name": "bulky"} for _ in range(refused)]}
        return {"text": "read them all"}

    # The compactor cuts results over their share of the window, as a child's does: the conversation,
    # and with it the state carried to the next run, stays small.
    model = ScriptedModel({"leaf": leaf}, context_window=20_000)
    limits = ChildLimits(compaction={"threshold_tokens": 10_000, "keep_recent_messages": 200})
    toolbox = WorkerToolbox(tools=tools, model_for=lambda provider, name: model)
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="read it all", tools=("bulky",), workspace="/tmp")
    async with ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2):
        async with asyncio.timeout(60):
            body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": limits.to_dict()},
                                                 id=job.subagent_id, task_queue=settings.task_queue)
    outcome = ChildOutcome.from_dict(body)
    assert (outcome.status, outcome.summary) == ("completed", "read them all"), outcome.error
    assert len(ran) == CALLS  # each once: none lost, none twice
    assert len(model.requests) >= 3  # some were refused, and made again
    assert await runs(client, job.subagent_id) >= 2  # it continued as new between the answers
