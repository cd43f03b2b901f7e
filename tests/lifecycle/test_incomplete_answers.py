"""A child whose answer the model's output limit cut off, or the provider's content filter withheld in part,
reaches its parent as such: in its summary (delegate_task's entry, a plugin's ``result()``, the hooks) and in
its entry's ``incomplete``; on both engines."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agent import AgentSession, HookRegistry, ModelRequest, ModelResponse, ToolContext
from agent.models.scripted import ScriptedModel
from lifecycle import (
    MAX_RESULT_CHARS,
    AsyncSubagentLifecycle,
    ChildHost,
    SqliteJournal,
    SubagentLaunchRequest,
    SubagentState,
    delegate_tool,
)
from lifecycle._contract import INCOMPLETE_NOTES
from lifecycle.settings import DelegationSettings, LifecycleSettings
from tests.lifecycle.conftest import Env, FakeClock, TemporalWorkers, child_script, make_registry

CUT_OFF, WITHHELD = INCOMPLETE_NOTES["output_limit"], INCOMPLETE_NOTES["content_filter"]


class Marking(ScriptedModel):
    """`child_script`'s answers, marked as a provider marks them when the goal says ``[cut-off]`` (its
    ``finish_reason: length``) or ``[withheld]`` (``finish_reason: content_filter``)."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await super().complete(request)
        goal = request.metadata.get("goal", "")
        if "[empty]" in goal:
            response = dataclasses.replace(response, text="")
        return dataclasses.replace(response, truncated="[cut-off]" in goal, filtered="[withheld]" in goal)


@pytest.fixture
async def menv(tmp_path, request, engine_name):
    workers = TemporalWorkers(request) if engine_name == "temporal" else None
    registry, hooks, clock = make_registry(), HookRegistry(), FakeClock()
    model = Marking({"leaf": child_script, "parent": [[{"text": "hi"}]]})
    engine = await workers.engine(registry, model) if workers is not None else None
    host = ChildHost(tools=registry, hooks=hooks, delegation=DelegationSettings(), clock=clock)
    service = AsyncSubagentLifecycle(host, SqliteJournal(tmp_path / "journal.db"),
                                     settings=LifecycleSettings(), engine=engine)
    parent = AgentSession(model=model, tools=registry.resolve(None), session_id="parent-1", clock=clock,
                          workspace=tmp_path)
    await service.start()
    yield Env(service, parent, hooks, clock, model)
    await service.close()
    if workers is not None:
        await workers.close()


async def delegate(env: Env, args: dict) -> list[dict]:
    tool = delegate_tool(env.service)
    payload = await tool.invoke(args, ToolContext(env.parent, "call-1", env.parent.workspace, {}, "turn-1"))
    return json.loads(payload)["results"]


@pytest.mark.both_engines
@pytest.mark.parametrize(("mark", "incomplete", "note"), [("[cut-off]", "output_limit", CUT_OFF),
                                                          ("[withheld]", "content_filter", WITHHELD)],
                         ids=["output_limit", "content_filter"])
async def test_a_cut_off_or_withheld_answer_reaches_the_parent_model_as_not_whole(menv, mark, incomplete, note):
    (item,) = await delegate(menv, {"goal": f"{mark} list the findings"})
    assert (item["status"], item["exit_reason"], item["truncated"]) == ("completed", "completed", False)
    assert item["summary"] == f"done: {mark} list the findings\n\n{note}"
    assert item["incomplete"] == incomplete


@pytest.mark.both_engines
async def test_a_plugin_and_the_hooks_read_a_cut_off_answer_as_one(menv):
    stops = []
    menv.hooks.register("subagent_stop", lambda **e: stops.append(e["child_summary"]))
    with menv.turn():
        handle = await menv.service.launch(SubagentLaunchRequest(goal="[cut-off] review"))
        assert (await menv.service.wait(handle, timeout_seconds=5)).state is SubagentState.SUCCEEDED
        result = await menv.service.result(handle)
    assert result.summary == stops[0] == f"done: [cut-off] review\n\n{CUT_OFF}"
    assert not result.summary_truncated  # the journal's own bound, which cut nothing


async def test_a_whole_answer_has_no_note_and_no_incomplete(menv):
    (item,) = await delegate(menv, {"goal": "list the findings"})
    assert item["summary"] == "done: list the findings" and "incomplete" not in item


@pytest.mark.both_engines
async def test_an_output_contracts_answer_stays_json_and_its_entry_says_it_was_cut_off(menv):
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    (item,) = await delegate(menv, {"goal": "[json-good] [withheld] answer", "output_schema": schema})
    assert item["summary"] == '{"answer": 42}' and item["schema_valid"] is True
    assert item["incomplete"] == "content_filter"


async def test_a_child_cut_off_before_it_wrote_any_answer_fails_saying_so(menv):
    (item,) = await delegate(menv, {"goal": "[empty] [cut-off] think hard"})
    assert (item["status"], item["summary"]) == ("failed", None) and "incomplete" not in item
    assert item["error"] == "its model reached its limit on output length before it wrote an answer"


async def test_a_long_cut_off_answer_keeps_its_note_past_the_results_bound(menv):
    # The answers most often cut off are the longest: the result keeps its head, and the note that it is not whole.
    with menv.turn():
        handle = await menv.service.launch(SubagentLaunchRequest(goal="[cut-off] [long] review"))
        assert (await menv.service.wait(handle, timeout_seconds=5)).state is SubagentState.SUCCEEDED
        result = await menv.service.result(handle)
    assert result.summary_truncated and len(result.summary) == MAX_RESULT_CHARS
    assert result.summary.endswith(CUT_OFF)
