"""A model answer holding hundreds of tool calls (a small model caught in a loop) runs a bounded number."""

from agent import AgentSession, ToolRegistry
from agent._session import MAX_CALLS_PER_ANSWER, TOO_MANY_CALLS
from agent.models.scripted import ScriptedModel


async def test_only_the_first_calls_of_a_flooding_answer_run_and_every_call_is_answered(caplog):
    sent = []
    tools = ToolRegistry()
    tools.add("send_message", "send", {"type": "object"}, lambda a, c: sent.append(a["n"]) or "sent", toolset="chat")
    flood = {"tool_calls": [{"name": "send_message", "arguments": {"n": n}} for n in range(300)]}
    model = ScriptedModel({"parent": lambda r: flood if r.iteration == 0 else {"text": "done"}})
    s = AgentSession(model=model, tools=tools.resolve())
    result = await s.run_turn("say hi")
    assert (result.exit_reason, result.text) == ("completed", "done")
    assert sent == list(range(MAX_CALLS_PER_ANSWER))
    results = [m["content"] for m in s.messages if m["role"] == "tool"]
    assert len(results) == 300  # every call answered, or the server refuses the conversation
    assert results[:MAX_CALLS_PER_ANSWER] == ["sent"] * MAX_CALLS_PER_ANSWER
    assert results[MAX_CALLS_PER_ANSWER:] == [TOO_MANY_CALLS] * (300 - MAX_CALLS_PER_ANSWER)
    assert len(result.tool_trace) == MAX_CALLS_PER_ANSWER
    assert sum("300 tool calls in one answer" in r.getMessage() for r in caplog.records) == 1


async def test_an_answer_within_the_bound_runs_all_its_calls():
    ran = []
    tools = ToolRegistry()
    tools.add("read", "read", {"type": "object"}, lambda a, c: ran.append(1) or "ok", toolset="file")
    calls = {"tool_calls": [{"name": "read"}] * MAX_CALLS_PER_ANSWER}
    model = ScriptedModel({"parent": lambda r: calls if r.iteration == 0 else {"text": "done"}})
    result = await AgentSession(model=model, tools=tools.resolve()).run_turn("read them")
    assert result.exit_reason == "completed" and len(ran) == MAX_CALLS_PER_ANSWER
