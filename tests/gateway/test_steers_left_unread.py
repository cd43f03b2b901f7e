"""Messages steered into a turn that ended before reading them wait for turns of their own: each is marked
begun only when its turn begins, so a death in an earlier turn is not charged to them (`Inbox.begun`)."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled


def answering(request):
    said = str(request.messages[-1]["content"]).splitlines()[0]
    if said in ("start", "one"):
        return {"wait": said, "text": f"answer to {said}"}
    return {"text": f"answer to {said}"}


async def test_steers_a_turn_never_read_are_not_begun_while_they_wait(tmp_path, gateways):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": answering})
    gateway = await gateways(make_config(tmp_path, display={"busy_input_mode": "steer"}), [chat], model=model)
    await chat.say("start", event_id="ev-start")
    await model.reached("start")
    await chat.say("one", event_id="ev-one")  # steered: begun with the turn they were handed to
    await chat.say("two", event_id="ev-two")
    assert {("chat", "ev-one"), ("chat", "ev-two")} <= gateway.store.inbox.begun()
    model.release("start")  # the turn answers without reading them: each runs as a turn of its own
    await model.reached("one")
    begun = gateway.store.inbox.begun()
    assert ("chat", "ev-one") in begun and ("chat", "ev-two") not in begun  # `two` still waits
    model.release("one")
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert chat.texts() == ["answer to start", "answer to one", "answer to two"]
