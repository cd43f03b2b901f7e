"""Background results belong to the thread that asked for them: two threads of one chat are two
sessions, and neither their results nor a restart's report of them may land in the other."""

from __future__ import annotations

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled

BACKGROUND = {"display": {"interim_assistant_messages": True}}


def parent(request: ModelRequest) -> dict:
    """Delegates the last word of "delegate <goal>"; answers results naming the goals they hold."""
    last = request.messages[-1]
    content = str(last.get("content"))
    if last["role"] == "user" and content.startswith("[Background delegation results]"):
        return {"text": "results: " + " ".join(g for g in ("goal-a", "goal-b") if g in content)}
    if last["role"] == "user" and content.startswith("delegate"):
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": content.split()[-1]}}]}
    return {"text": "on it"}


def leaf(request: ModelRequest) -> dict:
    return {"text": f"found {request.metadata['goal']}"}


def by_thread(chat: RecordingAdapter) -> dict[str | None, list[str]]:
    threads: dict[str | None, list[str]] = {}
    for message in chat.messages:
        threads.setdefault(message.outbound.thread_id, []).append(message.text)
    return threads


async def test_results_and_restart_reports_land_in_the_thread_that_asked(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent, "leaf": lambda r: {"wait": "forever"}})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=model)
    await chat.say("delegate goal-a", thread="ta")
    await chat.say("delegate goal-b", thread="tb")
    await chat.wait_for(lambda: len(chat.messages) == 2)
    await gateway.stop(grace=0)  # both threads' children still running

    chat2 = RecordingAdapter()
    gateway2 = await gateways(make_config(tmp_path, **BACKGROUND), [chat2],
                              model=ScriptedModel({"parent": parent, "leaf": leaf}))
    await chat2.wait_for(lambda: len(chat2.messages) == 2)
    reports = by_thread(chat2)
    assert set(reports) == {"ta", "tb"}
    assert "goal-a" in reports["ta"][0] and "goal-b" not in reports["ta"][0]
    assert "goal-b" in reports["tb"][0] and "goal-a" not in reports["tb"][0]

    await chat2.say("/retry", thread="tb")
    await chat2.wait_for(lambda: len(chat2.messages) == 4)
    await settled(gateway2)
    assert by_thread(chat2)["tb"][1:] == ["Retrying 1 subagent: goal-b. The results will follow.", "results: goal-b"]
    assert len(by_thread(chat2)["ta"]) == 1
