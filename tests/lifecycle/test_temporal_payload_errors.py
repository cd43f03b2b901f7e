"""What a child on a worker cannot pass through Temporal, and how it ends then: a tool's error or a model's
error text, or the images of its first message, over the 2 MB payload limit reach the child (or end it) once,
saying so, instead of the call being run again until its stall limit or the workflow task failing for ever;
and a child its worker cannot build ends with the reason alone."""

from __future__ import annotations

import asyncio
import os
import uuid

from PIL import Image

from agent import ModelRequest, ToolError
from agent.models.scripted import ScriptedModel
from lifecycle import ChildJob, ChildOutcome
from lifecycle.settings import DelegationSettings
from lifecycle.temporal import WORKFLOW, ChildLimits
from tests.lifecycle.conftest import make_registry

BIG = 3_000_000


async def run_child(queue, model, tool) -> tuple[ChildOutcome, list]:
    """One child on a worker whose ``bulky`` tool returns (or raises) what ``tool()`` does, its calls counted."""
    settings, client, worker = queue
    calls = []

    def handler(args, ctx):
        calls.append(1)
        return tool()

    tools = make_registry()
    tools.add("bulky", "fails loudly", {"type": "object"}, handler, toolset="file")
    await worker(model, tools)
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="bulk", tools=("bulky",), workspace="/tmp")
    limits = ChildLimits.from_settings(DelegationSettings(heartbeat_interval_seconds=0.2), None)
    async with asyncio.timeout(30):  # well inside the stall limits (450 s, 1200 s) a retried call would run to
        body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": limits.to_dict()},
                                             id=job.subagent_id, task_queue=settings.task_queue)
    return ChildOutcome.from_dict(body), calls


async def test_a_tool_error_over_temporals_payload_limit_reaches_the_child_once(queue):
    """Only a tool's output was measured: an error as long (a `ToolError` quoting what the tool choked on) was
    refused by Temporal, and the tool run again and again until its stall limit, the child waiting."""
    def leaf(request: ModelRequest) -> dict:
        if request.iteration == 0:
            return {"tool_calls": [{"name": "bulky"}]}
        return {"text": request.messages[-1]["content"][:300]}

    def tool():
        raise ToolError("e" * BIG)

    outcome, calls = await run_child(queue, ScriptedModel({"leaf": leaf}), tool)
    assert calls == [1]  # not run again and again until its stall limit, the child waiting all along
    assert outcome.status == "completed"
    assert "bulky's error (2.9 MB) is over Temporal's payload limit (2 MB)" in outcome.summary


async def test_a_model_error_over_temporals_payload_limit_fails_the_child_once(queue):
    """Temporal puts its own words in place of a failure over the limit: the child ended with no word of
    what the model said."""
    model = ScriptedModel({"leaf": lambda r: {"error": "server_error", "message": "m" * BIG}})
    outcome, _ = await run_child(queue, model, lambda: "x")
    assert len(model.requests) == 1
    assert outcome.status == "failed"
    # What the model said, not Temporal's "Failure exceeds size limit." in its place.
    assert outcome.error.startswith("m" * 100)
    assert "the model's error (2.9 MB) is over Temporal's payload limit (2 MB)" in outcome.error
    assert len(outcome.error) < 5000


async def test_images_over_temporals_payload_limit_fail_the_child_saying_so_not_stuck(queue, tmp_path):
    """A vision model's images travel inline in the result of the local activity that builds the child:
    over the limit, the workflow task recording it failed, and Temporal retried it for ever (reading the
    images again each time), the child never ending."""
    settings, client, worker = queue
    Image.frombytes("RGB", (1400, 1400), os.urandom(1400 * 1400 * 3)).save(tmp_path / "noise.png")
    model = ScriptedModel({"leaf": lambda r: {"text": "seen"}}, supports_vision=True)
    await worker(model)
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="look", images=("noise.png", "noise.png", "noise.png"), workspace=str(tmp_path))
    limits = ChildLimits.from_settings(DelegationSettings(heartbeat_interval_seconds=0.2), None)
    async with asyncio.timeout(30):
        body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": limits.to_dict()},
                                             id=job.subagent_id, task_queue=settings.task_queue)
    outcome = ChildOutcome.from_dict(body)
    assert not model.requests
    assert outcome.status == "error"
    assert outcome.error.startswith("the child's first message with its images (")
    assert "over Temporal's payload limit (2 MB)" in outcome.error and "fewer or smaller images" in outcome.error


async def test_a_child_its_worker_cannot_build_ends_with_the_reason_alone(queue, tmp_path):
    """The failure of the local activity that builds the child came to the workflow as its own error, not
    in an `ActivityError`: uncaught, it failed the workflow, and the child's error began with "the child's
    workflow ended without a result (ApplicationError: ...)"."""
    settings, client, worker = queue
    await worker(ScriptedModel({"leaf": lambda r: {"text": "never"}}))
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="anything", workspace=str(tmp_path / "not-on-this-machine"))
    async with asyncio.timeout(30):
        body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": ChildLimits().to_dict()},
                                             id=job.subagent_id, task_queue=settings.task_queue)
    outcome = ChildOutcome.from_dict(body)
    assert (outcome.status, outcome.exit_reason) == ("error", "error")
    assert outcome.error.startswith(f"the workspace {tmp_path / 'not-on-this-machine'} does not exist on worker")
