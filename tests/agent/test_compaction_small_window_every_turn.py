"""On a 4,096-token window (llama.cpp's and LM Studio's default n_ctx) at the default threshold (half), the tools'
schemas (the gateway's built-in ones, about 1,200 tokens) taken off the trigger left the messages some 850 tokens
before compaction was due: less than a summary may be (2,000), so once a chat had been compacted, every later turn
was compacted again, a summariser call each, where its requests were far from the window (about 2,800 of 4,096).
The schemas cap the trigger instead (`agent._compaction._trigger`)."""

from agent import AgentSession, Compactor, ToolRegistry
from agent._token_estimate import estimate_tokens, schema_tokens
from agent.models.scripted import ScriptedModel

WINDOW = 4_096


async def test_a_small_window_chat_is_not_compacted_on_every_turn():
    tools = ToolRegistry()
    tools.add("fetch", "Fetches a page. " + "Say which part of the page to fetch. " * 125, {"type": "object"},
              lambda a, c: "page", toolset="web")
    largest = []

    def parent(request):
        largest.append(estimate_tokens(request.messages) + schema_tokens(request.tools))
        return {"text": "noted"}

    model = ScriptedModel({"parent": parent, "compactor": lambda r: {"text": "summary " * 400}}, context_window=WINDOW)
    s = AgentSession(model=model, tools=tools.resolve(), system_prompt="be brief", compactor=Compactor())
    assert 1_100 < schema_tokens(s.tool_schemas()) < 1_300
    for turn in range(12):
        assert (await s.run_turn(f"note {turn}: " + "the pump logs a fault at start. " * 30)).text == "noted"
    summaries = sum(r.role == "compactor" for r in model.requests)
    assert max(largest) < 3_300  # far from the window
    assert summaries <= 4, summaries  # once every few turns, not every turn
