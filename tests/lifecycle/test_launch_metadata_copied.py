"""docs/lifecycle.md "Usage": a child reads the metadata it was launched with, as a child on Temporal (its job sent
as JSON as it is launched) does, not what the plugin put in the same lists and mappings afterwards."""

from __future__ import annotations

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest, SubagentState
from lifecycle.settings import LifecycleSettings


async def test_a_queued_child_reads_the_metadata_it_was_launched_with():
    seen = {}

    def leaf(request):
        seen[request.metadata["goal"]] = request.metadata["batch"]
        return {"text": "reviewed"}

    service = AsyncSubagentLifecycle(ChildHost(tools=ToolRegistry(), hooks=HookRegistry()), MemoryJournal(),
                                     settings=LifecycleSettings(max_running=1))  # the later ones wait, queued
    await service.start()
    try:
        with inside_turn(AgentSession(model=ScriptedModel({"leaf": leaf}))):
            batch = {"files": [], "options": {"depth": 0}}
            handles = []
            for name in ("a.py", "b.py", "c.py"):  # one batch mapping, grown a file a launch
                batch["files"].append(name)
                batch["options"]["depth"] += 1
                request = SubagentLaunchRequest(goal=f"review {name}", metadata={"batch": batch})
                handles.append(await service.launch(request))
            batch["files"].clear()
            for handle in handles:
                assert (await service.wait(handle, timeout_seconds=5)).state is SubagentState.SUCCEEDED
    finally:
        await service.close()
    assert seen == {
        "review a.py": {"files": ["a.py"], "options": {"depth": 1}},
        "review b.py": {"files": ["a.py", "b.py"], "options": {"depth": 2}},
        "review c.py": {"files": ["a.py", "b.py", "c.py"], "options": {"depth": 3}},
    }
