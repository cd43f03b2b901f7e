"""`ModelRequest.iteration` counts the turn's own model calls: not the compactor's summaries."""

from agent import AgentSession, CompactionPolicy, Compactor, ToolRegistry
from agent.models.scripted import ScriptedModel


def chat(count, chars=400):
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "x" * chars} for i in range(count)]


async def test_compacting_before_each_call_skips_no_iteration_and_no_scripted_step():
    tools = ToolRegistry()
    tools.add("read", "read", {"type": "object"}, lambda a, c: "r" * 2_000, toolset="file")
    step = {"tool_calls": [{"name": "read"}]}
    model = ScriptedModel({"parent": [[step, step, {"text": "done"}]]}, context_window=2_000)
    compactor = Compactor(CompactionPolicy(threshold_tokens=300, keep_recent_messages=2))
    s = AgentSession(model=model, tools=tools.resolve(), compactor=compactor)
    s.messages.extend(chat(10))
    result = await s.run_turn("read it twice")
    assert compactor.compactions >= 2  # before the first call and mid-turn
    assert (result.exit_reason, result.text) == ("completed", "done")
    assert [r.iteration for r in model.requests if r.role == "parent"] == [0, 1, 2]
    assert [r.role for r in model.requests].count("compactor") == compactor.compactions
    assert result.api_calls == len(model.requests)  # the summaries still count as the turn's spend
