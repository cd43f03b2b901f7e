"""A message steered into a turn whose end was owed (`gateway.owed_ends`) when the process died: the turn read it
and answered it within its reply, which the chat has. The next start runs the turn again quietly; the steered
message is not a turn of its own there, answered a second time."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_dead_letters import execute, killed_now
from tests.gateway.test_refused_end_marks import REFUSE_SETTLE
from tests.polling import until


async def died_with_a_steered_message(tmp_path, gateways, config, chat: RecordingAdapter, parent, shown: str) -> None:
    """"how far?" answered by ``parent`` with "use metric units" steered into its turn while it waits, the settling
    refused, then the state a SIGKILL leaves once ``shown`` is in the chat, the store taking writes."""
    model = ScriptedModel({"parent": parent})
    gateway = await gateways(config, [chat], model=model)
    gateway.store.db.write(REFUSE_SETTLE["message"])
    await chat.say("how far?", event_id="ev-1")
    await model.reached("steer")
    await chat.say("use metric units", event_id="ev-2")
    model.release("steer")
    await chat.wait_for(lambda: shown in chat.texts())
    await until(lambda: not gateway.sessions.get("chat", "c1", None).running)
    assert gateway.sessions.get("chat", "c1", None).owed
    await gateway.store.durable()
    restore = killed_now(tmp_path)  # the end still owed
    await gateway.stop(grace=0)
    restore()
    execute(tmp_path, "DROP TRIGGER refuse")


async def test_a_message_steered_into_a_turn_that_died_owing_its_end_is_not_answered_again(tmp_path, gateways):
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    chat = RecordingAdapter()

    def parent(request) -> dict:
        said = [str(m["content"]) for m in request.messages]
        if not any("metric" in s for s in said):
            return {"wait": "steer", "tool_calls": [{"name": "memory", "arguments": "{}"}]}
        return {"text": "42 km"}

    await died_with_a_steered_message(tmp_path, gateways, config, chat, parent, "42 km")
    assert chat.texts() == ["42 km"]

    again = ScriptedModel({"parent": parent})
    again.release("steer")
    gateway2 = await gateways(config, [chat], model=again)
    await settled(gateway2)
    # Before, "use metric units" ran as a turn of its own after the quiet rerun, and was answered again.
    assert chat.texts() == ["42 km"], chat.texts()
    # Read within the turn run again, as the first run read it: the conversation holds it, before that answer.
    assert len(again.requests) == 1
    assert any("use metric units" in str(m["content"]) for m in again.requests[0].messages)
    assert gateway2.store.inbox.settled("chat", "ev-1") and gateway2.store.inbox.settled("chat", "ev-2")


def _answers_steered_in_its_sends(request) -> dict:
    """The first run: told "use metric units" while it waits, it says so with ``send_message`` alone."""
    said = [str(m["content"]) for m in request.messages]
    if not any("metric" in s for s in said):
        return {"wait": "steer", "tool_calls": [{"name": "memory", "arguments": "{}"}]}
    if not any(m.get("role") == "tool" and "sent" in str(m["content"]) for m in request.messages):
        return {"tool_calls": [{"name": "send_message", "arguments": {"text": "in km, then"}}]}
    return {"text": ""}


async def test_a_message_steered_into_a_turn_that_died_owing_its_end_with_no_answer_is_not_answered_again(
        tmp_path, gateways):
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    chat = RecordingAdapter()
    await died_with_a_steered_message(tmp_path, gateways, config, chat, _answers_steered_in_its_sends, "in km, then")

    gateway2 = await gateways(config, [chat], model=ScriptedModel({"parent": _answers_steered_in_its_sends}))
    await settled(gateway2)
    # Its end marked that its sends were its answer (`Outbox.mark_answered_by_sends`): the turn runs again quietly,
    # reading the steered message again, which is not a turn of its own.
    assert chat.texts() == ["in km, then"], chat.texts()
    assert gateway2.store.inbox.settled("chat", "ev-1") and gateway2.store.inbox.settled("chat", "ev-2")
