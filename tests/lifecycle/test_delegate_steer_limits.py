"""delegate_task's live control refuses what the service would: a steer too long for a child, a stop or steer
that names no subagent."""

import asyncio
import json

import pytest

from agent import ToolError
from lifecycle import SubagentState, delegate_tool
from tests.lifecycle.test_delegate import Host, delegate


@pytest.fixture
async def denv(make_env):
    return await make_env(delegate=True)


async def _running(denv, goal: str) -> None:
    async with asyncio.timeout(5):
        while not any(c.state is SubagentState.RUNNING for c in denv.service.host_view().children("parent-1")) or \
                not any(r.metadata.get("goal") == goal for r in denv.child_model.requests):
            await asyncio.sleep(0.005)


async def test_a_steer_longer_than_a_goal_may_be_is_refused_and_never_reaches_the_child(denv):
    # The service's `steer` refuses text over 16,000 characters; the tool handed it to the engine unchecked, and
    # a megabyte steered in sat in the child's conversation, sent again with every request it made.
    host = Host(denv)
    run = lambda args: delegate(denv, args, mode="background", on_dispatch=host)  # noqa: E731
    (sid,) = json.loads(await run({"goal": "[echo-steer]"}))["subagent_ids"]
    await _running(denv, "[echo-steer]")
    with pytest.raises(ToolError) as refused:
        await run({"action": "steer", "subagent_id": sid, "message": "y" * 1_000_000})
    assert str(refused.value).startswith("steer's `message` is 1,000,000 characters; at most 16,000.")
    assert json.loads(await run({"action": "steer", "subagent_id": sid, "message": "wrap up"}))["status"] == "queued"
    _, (entry,) = await asyncio.wait_for(host.delivered.get(), 5)
    assert "wrap up" in entry["summary"] and "yyyy" not in json.dumps(entry)
    assert not any("yyyy" in json.dumps(r.messages) for r in denv.child_model.requests)


@pytest.mark.parametrize("args", [{"action": "stop"}, {"action": "steer", "message": "hi"}])
async def test_a_stop_or_steer_without_a_subagent_id_says_it_needs_one(denv, args):
    # It said "no running subagent None in this session", as though a child had ended.
    with pytest.raises(ToolError) as refused:
        await delegate(denv, args, mode="background", on_dispatch=Host(denv))
    assert str(refused.value) == (f"action={args['action']} needs `subagent_id`: which subagent "
                                  "(action=list shows them)")


async def test_the_schema_states_the_steer_limit(denv):
    message = delegate_tool(denv.service, mode="background", on_dispatch=lambda d: None).parameters[
        "properties"]["message"]
    assert message["maxLength"] == 16_000
