"""A tool result longer than the model's context window can hold must not wedge the chat: compaction keeps
the newest messages verbatim, and a server refuses every request that carries such a result whole."""

from agent import AgentSession, Compactor, ToolRegistry
from agent._compaction import SUMMARY_HEADER
from agent._token_estimate import estimate_tokens
from agent.models.scripted import ScriptedModel

WINDOW = 2_000
REFUSAL = {"error": "bad_request", "message": f"This model's maximum context length is {WINDOW} tokens. However, "
                                              "your messages resulted in 9000 tokens."}


def strict_server(answer):
    """The parent's script, refusing (as a real server does) every request over the window."""
    return {"parent": lambda r: REFUSAL if estimate_tokens(r.messages) > WINDOW else answer(r)}


def asked_to_fetch(request):
    return request.messages[-1] == {"role": "user", "content": "fetch the page"}


def fetching_session(history, output, *, context_window=WINDOW):
    tools = ToolRegistry()
    tools.add("fetch", "fetch a page", {"type": "object"}, lambda a, c: output, toolset="web")
    model = ScriptedModel(strict_server(lambda r: {"tool_calls": [{"name": "fetch"}]} if asked_to_fetch(r)
                                        else {"text": "read it"}), context_window=context_window)
    s = AgentSession(model=model, system_prompt="be brief", tools=tools.resolve(), compactor=Compactor())
    s.messages.extend(history)
    return s, model


PAGE = "<html>" + "x" * 40_000 + "</html>"


async def test_a_tool_result_longer_than_the_window_is_cut_and_the_turn_goes_on():
    s, model = fetching_session([], PAGE)
    version = s.history_version
    result = await s.run_turn("fetch the page")
    assert (result.exit_reason, result.text, result.error) == ("completed", "read it", None)
    (tool,) = [m for m in s.messages if m["role"] == "tool"]
    assert tool["content"].startswith("<html>xxx") and tool["content"].endswith("xxx</html>")
    assert "characters of this tool result were left out" in tool["content"]
    assert estimate_tokens([tool]) <= WINDOW // 4
    assert s.history_version > version  # a saver stores the conversation again, shortened
    assert result.tool_trace[0].output_bytes == len(PAGE)  # the tool's own output, as it answered


async def test_an_oversized_result_among_the_newest_messages_does_not_wedge_the_next_turns():
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "y" * 300} for i in range(8)]
    s, model = fetching_session(history, PAGE)
    assert (await s.run_turn("fetch the page")).exit_reason == "completed"
    for text in ("and now?", "thanks"):
        result = await s.run_turn(text)
        assert (result.exit_reason, result.error) == ("completed", None)
    assert all(estimate_tokens(r.messages) <= WINDOW for r in model.requests if r.role == "parent")


async def test_a_server_smaller_than_the_settings_say_has_the_result_cut_to_the_window_it_named():
    s, model = fetching_session([], PAGE, context_window=128_000)
    result = await s.run_turn("fetch the page")
    assert (result.exit_reason, result.text) == ("completed", "read it")
    (tool,) = [m for m in s.messages if m["role"] == "tool"]
    assert estimate_tokens([tool]) <= WINDOW // 4


async def test_results_that_fit_are_kept_whole_when_older_messages_are_summarised():
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "y" * 1_000} for i in range(8)]
    s, model = fetching_session(history, "z" * 1_500)
    assert (await s.run_turn("fetch the page")).exit_reason == "completed"
    assert s.messages[1]["content"].startswith(SUMMARY_HEADER)
    assert not any("left out" in str(m.get("content")) for m in s.messages)
    assert s.messages[-2]["content"] == "z" * 1_500
