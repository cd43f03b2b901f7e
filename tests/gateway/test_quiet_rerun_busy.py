"""A message sent while a turn runs again "quiet" after a death while its answered end was owed
(`gateway.owed_ends`): the chat saw that turn end, so the message is a request of its own, answered after it,
whatever ``display.busy_input_mode`` says; it is neither steered into the quiet run nor interrupts it."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_owed_end_after_death import TOOL, died_with_its_end_owed, looking


def again_then_metric(request) -> dict:
    """The quiet run waits at ``again`` beside a tool call; a model that read "use metric units" answers it."""
    if request.messages[-1]["content"] == "hello":
        return {"wait": "again", "tool_calls": [TOOL], "text": "looking"}
    if any("metric" in str(m["content"]) for m in request.messages):
        return {"text": "in metric"}
    return {"text": "other"}


async def message_during_quiet_rerun(tmp_path, gateways, chat: RecordingAdapter, first: ScriptedModel,
                                     **sections) -> None:
    """"hello" answered by ``first``, its end owed at a death; run again quietly, "use metric units" comes while
    it runs."""
    config = make_config(tmp_path, **sections)
    await died_with_its_end_owed(tmp_path, gateways, config, chat, first)
    model = ScriptedModel({"parent": again_then_metric})
    gateway2 = await gateways(config, [chat], model=model)
    await model.reached("again")
    await chat.say("use metric units", event_id="ev-2")
    model.release("again")
    await settled(gateway2)
    assert gateway2.store.inbox.unfinished() == []


async def test_a_message_steered_during_a_quiet_rerun_is_answered(tmp_path, gateways):
    chat = RecordingAdapter()
    first = ScriptedModel({"parent": [[{"text": "answer after 1"}]]})
    await message_during_quiet_rerun(tmp_path, gateways, chat, first, display={"busy_input_mode": "steer"})
    # Before, steered in, the quiet run read it and answered it, an answer never sent: the turn's reply key held the
    # first run's answer. The message was settled with the turn, unanswered.
    assert chat.texts() == ["answer after 1", "in metric"]


async def test_a_message_sent_during_a_quiet_rerun_does_not_interrupt_it(tmp_path, gateways):
    chat = RecordingAdapter()
    first = ScriptedModel({"parent": [[{"wait": "first", **looking("looking")[0]}, looking("looking")[1]]]})
    first.release("first")
    await message_during_quiet_rerun(tmp_path, gateways, chat, first,
                                     display={"progress": "card", "progress_delay": 0, "busy_input_mode": "interrupt"})
    [card] = [m for m in chat.messages if m.kind == "notice"]
    # Before, the card of the turn the chat saw end turned to "⏹ Stopped for your next message" above its answer, and
    # the run rebuilding what the death lost (its transcript, what it delegated) was cut short.
    assert card.edits == ["✓ Done in 0 s"]
    assert chat.texts() == ["✓ Done in 0 s", "looking", "answer after 1", "in metric"]
