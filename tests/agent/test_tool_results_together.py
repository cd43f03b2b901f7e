"""Tool results of one answer, each under a quarter of the context window, that together outgrow it: compaction
never parts a call from its results, so it cuts them to an equal share instead of leaving a tail no summary
shortens (the turn, and the chat's next turns, refused as too long)."""

import logging

from agent import AgentSession, Compactor, ToolRegistry
from agent._compaction import TOO_LONG_TOGETHER, _shorten_tool_results, estimate_tokens
from agent.models.scripted import ScriptedModel

WINDOW = 2_000
REFUSAL = {"error": "bad_request", "message": f"This model's maximum context length is {WINDOW} tokens"}


def server_of(window, calls):
    """A parent role that refuses requests longer than ``window`` and asks for six parts in the turn's first call."""
    def parent(request):
        if estimate_tokens(request.messages) > window:
            return REFUSAL
        if request.iteration == 0:
            return {"tool_calls": [{"name": "read", "arguments": {"n": n}} for n in range(calls)]}
        return {"text": "read them all"}
    return parent


def reading_session(calls=6, part_chars=1_600):
    tools = ToolRegistry()
    tools.add("read", "read", {"type": "object"}, lambda a, c: f"part {a['n']} " + "p" * part_chars + " end",
              toolset="f")
    model = ScriptedModel({"parent": server_of(WINDOW, calls)}, context_window=WINDOW)
    s = AgentSession(model=model, tools=tools.resolve(), compactor=Compactor())
    s.messages.extend([{"role": "user" if i % 2 == 0 else "assistant", "content": "x" * 400} for i in range(4)])
    return s


async def test_results_that_outgrow_the_window_together_are_cut_to_a_share_each(caplog):
    s = reading_session()  # six results of a fifth of the window each: none over a quarter
    result = await s.run_turn("read all six parts")
    assert (result.exit_reason, result.text) == ("completed", "read them all")
    results = [m["content"] for m in s.messages if m["role"] == "tool"]
    assert len(results) == 6
    for n, content in enumerate(results):
        assert content.startswith(f"part {n} ") and content.endswith(" end") and TOO_LONG_TOGETHER in content
    assert estimate_tokens(s.messages) <= WINDOW
    assert any("their share of half of it" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


async def test_a_result_cut_to_its_share_is_not_cut_again_at_the_next_compaction():
    s = reading_session()
    await s.run_turn("read all six parts")
    before = list(s.messages)
    assert _shorten_tool_results(s.messages, 0, WINDOW) == 0  # each now within its share, or marked as cut
    assert all(m is b for m, b in zip(s.messages, before, strict=True))


async def test_results_that_fit_together_stay_whole():
    s = reading_session(calls=3, part_chars=800)
    assert (await s.run_turn("read three parts")).exit_reason == "completed"
    assert not any(TOO_LONG_TOGETHER in str(m.get("content")) for m in s.messages)
