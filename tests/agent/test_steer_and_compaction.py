"""Steered text and context compaction: the model reads what the user steered in once, in its place."""

import asyncio

from agent import AgentSession, CompactionPolicy, Compactor, ToolRegistry
from agent._session import STEER_NOTE
from agent.models.scripted import ScriptedModel


def waiting_tool(output):
    entered, gate = asyncio.Event(), asyncio.Event()

    async def wait_tool(args, ctx):
        entered.set()
        await gate.wait()
        return output

    reg = ToolRegistry()
    reg.add("wait_tool", "waits", {"type": "object"}, wait_tool, toolset="test")
    return reg.resolve(), entered, gate


async def test_a_steer_left_unseen_in_a_result_compaction_shortened_is_taken_out_of_it():
    tools, entered, gate = waiting_tool("o" * 8_000)  # four times a quarter of the window: shortened
    script = [[{"tool_calls": [{"name": "wait_tool"}]}, {"error": "server_error", "message": "502"}]]
    s = AgentSession(model=ScriptedModel({"parent": script}, context_window=2_000), tools=tools,
                     compactor=Compactor(CompactionPolicy()))
    task = asyncio.create_task(s.run_turn("go"))
    await entered.wait()
    s.steer("use metric units")
    gate.set()
    result = await task
    assert result.exit_reason == "error"
    shortened = s.messages[-1]
    assert shortened["role"] == "tool" and "characters of this tool result were left out" in shortened["content"]
    # Unread again, for the host to run as a turn of its own: then not in the conversation as well.
    assert s.take_steer() == ["use metric units"]
    assert not any(STEER_NOTE in str(m.get("content")) for m in s.messages)
    assert shortened["content"].endswith("o")


WINDOW = 2_000


def compacting_session(history, script=None):
    model = ScriptedModel(script or {"parent": lambda r: {"text": "done"}}, context_window=WINDOW)
    compactor = Compactor(CompactionPolicy(threshold_tokens=100, keep_recent_messages=2))
    s = AgentSession(model=model, system_prompt="be brief", compactor=compactor)
    s.messages.extend(history)
    return s, compactor, model


def call(call_id):
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]}


def steered_turn(output_chars=3_000):
    """A turn whose long tool result carries a steer, and more work after it."""
    return [
        {"role": "user", "content": "tidy the report"},
        call("c1"),
        {"role": "tool", "tool_call_id": "c1", "content": "o" * output_chars + f"\n\n{STEER_NOTE}\nuse metric units"},
        call("c2"),
        {"role": "tool", "tool_call_id": "c2", "content": "done reading"},
        {"role": "assistant", "content": "tidied"},
        {"role": "user", "content": "thanks"},
    ]


async def test_a_steer_after_a_long_tool_result_reaches_the_summariser():
    s, compactor, model = compacting_session(steered_turn())
    assert await compactor(s)
    (summariser,) = [r for r in model.requests if r.role == "compactor"]
    assert f"{STEER_NOTE} use metric units" in summariser.messages[1]["content"]


async def test_a_steer_after_a_long_tool_result_is_in_the_extractive_summary():
    s, compactor, _ = compacting_session(steered_turn(), {"compactor": lambda r: {"error": "timeout"}})
    assert await compactor(s)
    assert "- user, while the assistant worked: use metric units" in s.messages[1]["content"]


async def test_a_steer_note_is_summarised_in_its_place_and_the_turns_request_kept_word_for_word():
    request = {"role": "user", "content": "tidy the report " + "r" * 3_000}
    note = {"role": "user", "content": f"{STEER_NOTE}\nuse metric units"}
    history = [request, call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "x" * 400}, note,
               call("c2"), {"role": "tool", "tool_call_id": "c2", "content": "y" * 400},
               call("c3"), {"role": "tool", "tool_call_id": "c3", "content": "z" * 400}]
    s, compactor, model = compacting_session(history)
    assert await compactor(s)
    (summariser,) = [r for r in model.requests if r.role == "compactor"]
    assert f"USER: {STEER_NOTE} use metric units" in summariser.messages[1]["content"]
    # Kept after the summary, the note read as new, before the work done for it (now summarised).
    assert note not in s.messages
    assert s.messages[2] == request
