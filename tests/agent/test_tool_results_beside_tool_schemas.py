"""The results of one answer's tool calls share half of what the context window leaves beside the tools' schemas,
not half of the window: with a plugin's 3,000 tokens of schemas on an 8k window, results of just under half of it
together, kept whole with the summary, came to more than the window, and as compaction never parts a call from its
results, the turn was refused as too long with nothing left to summarise."""

import json

from agent import AgentSession, Compactor, ToolRegistry
from agent._compaction import TOO_LONG_TOGETHER
from agent._token_estimate import estimate_tokens
from agent.models.scripted import ScriptedModel

WINDOW = 8_192
REFUSAL = {"error": "bad_request", "message": f"This model's maximum context length is {WINDOW} tokens"}


def schemas(request):
    """The tokens of the request's tool schemas, a character of their JSON a quarter token."""
    return len(json.dumps(request.tools)) // 4


def parent(request):
    """A server that refuses, as a real one does, a request whose messages and tool schemas pass the window."""
    if estimate_tokens(request.messages) + schemas(request) > WINDOW:
        return REFUSAL
    if request.iteration == 0:
        return {"tool_calls": [{"name": "fetch", "arguments": {"n": n}} for n in range(4)]}
    return {"text": "fetched them all"}


async def test_results_are_cut_to_their_share_of_the_window_the_schemas_leave():
    tools = ToolRegistry()
    tools.add("fetch", "Fetches a page. " + "Say which part of the page to fetch. " * 330, {"type": "object"},
              lambda a, c: f"page {a['n']} " + "p" * 4_400 + " end", toolset="web")  # 1,100 tokens each
    model = ScriptedModel({"parent": parent, "compactor": lambda r: {"text": "s" * 9_000}}, context_window=WINDOW)
    s = AgentSession(model=model, tools=tools.resolve(), system_prompt="be brief", compactor=Compactor())
    s.messages.extend({"role": "user" if i % 2 == 0 else "assistant", "content": "x" * 400} for i in range(8))
    result = await s.run_turn("fetch the four pages")
    assert (result.exit_reason, result.text) == ("completed", "fetched them all")
    parents = [r for r in model.requests if r.role == "parent"]
    assert len(parents) == 2  # never refused
    assert all(estimate_tokens(r.messages) + schemas(r) <= WINDOW for r in parents)
    assert 3_000 < schemas(model.requests[0]) < 3_200
    results = [m["content"] for m in s.messages if m["role"] == "tool"]
    assert all(content.endswith(" end") and TOO_LONG_TOGETHER in content for content in results)
