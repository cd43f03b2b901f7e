"""A background delegation's results that come while the chat's messages wait in the store beyond `QUEUED` are
delivered after those messages, as they would be behind them in memory: not ahead of questions asked before the
results were in."""

from __future__ import annotations

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway import session_registry
from gateway.sessions import WorkItem
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_session_queue_bound import message, registry_on, store  # noqa: F401
from tests.gateway.test_turn_end_full_disk import until

RESULTS = "[Background delegation results]"


def parent(request: ModelRequest) -> dict:
    last = request.messages[-1]
    said = str(last["content"])
    if last["role"] != "user":
        return {"text": "on it"}
    if RESULTS in said:
        return {"text": "the results"}
    if said == "look it up":
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": "look it up"}]}}]}
    return {"wait": said, "text": f"re: {said}"} if said == "m0" else {"text": f"re: {said}"}


async def test_results_that_come_while_messages_are_held_are_delivered_after_them(tmp_path, gateways,
                                                                                 monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    model = ScriptedModel({"parent": parent, "leaf": lambda request: {"wait": "child", "text": "found it"}})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "queue"}), [chat], model=model)
    await chat.say("look it up")
    await chat.wait_for(lambda: "on it" in chat.texts())
    await chat.say("m0")
    await model.reached("m0")
    for n in (1, 2, 3, 4):
        await chat.say(f"m{n}")
    session = gateway.sessions.find(chat.name, "c1", None)
    assert (len(session.queue), session.held) == (2, 2)

    model.release("child")  # its results come while m3 and m4 wait in the store
    await until(lambda: any(item.delegation_id is not None for item in session.queue))
    await chat.say("m5")  # after the results came: answered after them
    model.release("m0")
    await chat.wait_for(lambda: "re: m5" in chat.texts())
    await settled(gateway)
    assert [text for text in chat.texts() if text.startswith("re: ") or text == "the results"] == [
        "re: m0", "re: m1", "re: m2", "re: m3", "re: m4", "the results", "re: m5"]


def test_a_delivery_queued_behind_held_messages_keeps_its_place_through_a_stop_and_later_holds(store):  # noqa: F811
    registry = registry_on(store)
    session = registry.get("telegram", "c", None)
    registry.enqueue(session, WorkItem("message", "first", "t-first", message(-1)))
    registry.begin(session)
    queued = session_registry.QUEUED
    for n in range(queued + 4):
        registry.enqueue(session, WorkItem("message", f"text {n}", f"t-{n}", message(n, "u1" if n % 2 else "u2")))
    registry.enqueue(session, WorkItem("completion", "results", "t-results", delegation_id="d-1"))
    registry.stop(session, "stop", turn=False, drops=lambda event: event.user_id == "u1", keeps={"d-1"})
    for n in range(queued + 4, queued + 6):
        registry.enqueue(session, WorkItem("message", f"text {n}", f"t-{n}", message(n, "u2")))
    taken = []
    registry.end(session)
    while (begun := registry.begin(session)) is not None:
        taken.append(begun[0].turn_id)
        registry.end(session)
    assert taken == [f"t-{n}" for n in range(0, queued + 4, 2)] + ["t-results", f"t-{queued + 4}", f"t-{queued + 5}"]
    assert session.held == 0
