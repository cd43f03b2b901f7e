"""Work queued for a session that an idle sweep let leave memory meanwhile (a background delivery holds its
session across an await): it runs in the chat's session in memory, one turn at a time, never beside a
second session the chat's next message loads."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.sessions import WorkItem, new_turn_id
from gateway.testing import RecordingAdapter, make_config, settled


def answering(request):
    said = str(request.messages[-1]["content"])
    if said == "results":
        return {"wait": "first", "text": "answer to results"}
    return {"text": f"answer to {said}"}


async def test_work_queued_for_a_session_that_left_memory_runs_in_the_chats_one_session(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat], model=model)
    await chat.say("hello")
    await chat.wait_for(lambda: chat.texts() == ["answer to hello"])
    await settled(gateway)
    [session] = gateway.sessions
    assert gateway.sessions.evict_idle(0, lambda session_id: False) == 1  # idle: it leaves memory
    gateway.runner.submit(session, WorkItem("message", "results", new_turn_id()))  # held across the sweep
    await model.reached("first")
    await chat.say("next")  # queued behind that turn, not run at once in a session loaded anew
    assert gateway.sessions.find("chat", "c1", None) is session
    assert [item.text for item in session.queue] == ["next"]
    model.release("first")
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert chat.texts() == ["answer to hello", "answer to results", "answer to next"]
