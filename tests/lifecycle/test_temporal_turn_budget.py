"""Per-turn tool limits (`agent.tools._per_turn.TurnBudget`) hold for a child's turn on a Temporal worker,
which builds a fresh stand-in session for every tool call: counted by that object, each call was the
turn's first, and ``write_file``'s 100 MB a turn never held there."""

from __future__ import annotations

import asyncio
import uuid

from agent import ModelRequest, ToolContext, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.tools import _per_turn, file, file_toolset
from agent.tools._per_turn import TurnBudget, count_by_session_id
from lifecycle import ChildJob, ChildOutcome
from lifecycle.settings import DelegationSettings
from lifecycle.temporal import WORKFLOW, ChildLimits


async def test_a_childs_turn_on_a_worker_is_held_to_its_write_file_limit(queue, tmp_path, monkeypatch):
    settings, client, worker = queue
    monkeypatch.setattr(file._WRITTEN, "most", 10)  # bytes a turn; 100 MB is too much to write in a test
    tools = ToolRegistry()
    for tool in file_toolset():
        tools.register(tool)
    await worker(ScriptedModel({"leaf": _writes_three}), tools)
    job = ChildJob(subagent_id=f"sa-{uuid.uuid4().hex[:12]}", parent_session_id="p", parent_turn_id="t",
                   goal="write", tools=("write_file",), workspace=str(tmp_path))
    limits = ChildLimits.from_settings(DelegationSettings(heartbeat_interval_seconds=0.2), None)
    async with asyncio.timeout(30):
        body = await client.execute_workflow(WORKFLOW, {"job": job.to_dict(), "limits": limits.to_dict()},
                                             id=job.subagent_id, task_queue=settings.task_queue)
    outcome = ChildOutcome.from_dict(body)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.txt", "1.txt"]
    assert outcome.status == "completed" and "this turn has written 8 bytes" in outcome.summary, outcome.summary


def _writes_three(request: ModelRequest) -> dict:
    if request.iteration < 3:
        args = {"path": f"{request.iteration}.txt", "content": "four"}
        return {"tool_calls": [{"name": "write_file", "arguments": args}]}
    return {"text": request.messages[-1]["content"]}


class _StandIn:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id


def _ctx(session_id: str, turn_id: str) -> ToolContext:
    session = _StandIn(session_id)
    count_by_session_id(session)
    return ToolContext(session, "call", None, {}, turn_id)


def test_stand_ins_are_counted_by_id_and_the_least_recently_counted_forgotten(monkeypatch):
    monkeypatch.setattr(_per_turn, "MAX_COUNTED_SESSIONS", 3)
    budget = TurnBudget(1)
    assert budget.take(_ctx("a", "t1")) and not budget.take(_ctx("a", "t1"))
    assert budget.take(_ctx("a", "t2"))  # a new turn starts afresh, replacing the old one's count
    for child in ("b", "c"):
        assert budget.take(_ctx(child, "t1"))
    assert len(budget._by_id) == 3
    assert budget.take(_ctx("d", "t1"))
    assert len(budget._by_id) == 3 and "a" not in budget._by_id  # the least recently counted went
    assert not budget.take(_ctx("b", "t1"))
