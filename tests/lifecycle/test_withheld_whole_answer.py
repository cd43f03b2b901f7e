"""A child whose whole answer the provider's content filter withheld fails saying so, not as a child that wrote
nothing: a model (a delegation backend's) may tell it as an empty answer marked filtered, where the openai
provider raises `ModelError` ``content_filter``; the parent model and the chat read the same news for both."""

from __future__ import annotations

import json

import pytest

from agent import AgentSession, HookRegistry, ToolContext, model_failure_kind
from gateway.replies import child_failure_reason
from lifecycle import AsyncSubagentLifecycle, ChildHost, SqliteJournal, delegate_tool
from lifecycle.settings import DelegationSettings, LifecycleSettings
from tests.lifecycle.conftest import FakeClock, child_script, make_registry
from tests.lifecycle.test_incomplete_answers import Marking


@pytest.fixture
async def delegate(tmp_path):
    registry, clock = make_registry(), FakeClock()
    model = Marking({"leaf": child_script, "parent": [[{"text": "hi"}]]})
    host = ChildHost(tools=registry, hooks=HookRegistry(), delegation=DelegationSettings(), clock=clock)
    service = AsyncSubagentLifecycle(host, SqliteJournal(tmp_path / "journal.db"), settings=LifecycleSettings())
    parent = AgentSession(model=model, tools=registry.resolve(None), session_id="parent-1", clock=clock,
                          workspace=tmp_path)
    await service.start()

    async def run(goal: str) -> dict:
        payload = await delegate_tool(service).invoke({"goal": goal}, ToolContext(parent, "call-1", tmp_path, {},
                                                                                  "turn-1"))
        (item,) = json.loads(payload)["results"]
        return item

    yield run
    await service.close()


async def test_a_child_whose_whole_answer_was_withheld_fails_saying_it_was_filtered(delegate):
    item = await delegate("[empty] [withheld] describe the photo")
    assert (item["status"], item["summary"]) == ("failed", None) and "incomplete" not in item
    assert model_failure_kind(item["error"]) == "content_filter"  # was "Subagent did not produce a response."
    assert child_failure_reason(item["error"]) == "the model provider's content filter blocked it"
