"""Two replies to a question asked before a restart, both sent before the turn run again asks it again: the first is
held for the question (`gateway.questions.Questions.hold`), the second is a message of its own, queued behind the turn
whatever the busy mode (`Questions.holds_answer`). Interrupting, it stopped the turn before it asked again, and the
held answer ran as a message of its own: the question was lost."""

from __future__ import annotations

import pytest

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import asking_parent
from tests.gateway.test_questions import QUESTION, replaying_parent


@pytest.mark.parametrize("mode", ["interrupt", "steer", "queue"])
async def test_a_second_reply_to_a_held_question_is_answered_after_the_turn(tmp_path, gateways, mode):
    chat, config = RecordingAdapter(), make_config(tmp_path, display={"busy_input_mode": mode})
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await gateway.stop(grace=0)  # the turn runs again after the restart, and asks again

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": replaying_parent("asking")})
    gateway2 = await gateways(config, [chat2], model=model)
    await model.reached("asking")
    await chat2.say("2")  # held for the question
    await chat2.say("and hurry")
    model.release("asking")
    await chat2.wait_for(lambda: len(chat2.texts()) == 2)
    await settled(gateway2)
    assert chat2.texts() == ["deploying to: production", "plain answer to and hurry"]
    assert gateway2.store.inbox.unfinished() == []


async def test_once_the_turn_has_asked_the_held_question_otherwise_a_message_takes_the_busy_mode_again(
        tmp_path, gateways):
    # The held reply stays with the turn until it ends (a message of its own then); the turn has asked again, so a
    # message now is no second reply to the question: interrupting, it stops the turn as any message does.
    chat, config = RecordingAdapter(), make_config(tmp_path, display={"busy_input_mode": "interrupt"})
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await gateway.stop(grace=0)

    def other_question(request: ModelRequest) -> dict:  # asks otherwise this time, then works on
        step = replaying_parent("asking")(request)
        if "tool_calls" in step:
            return {**step, "tool_calls": [{"name": "clarify", "arguments": {"question": "Which region?"}}]}
        return {**step, "wait": "working"} if request.messages[-1]["role"] == "tool" else step

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": other_question})
    gateway2 = await gateways(config, [chat2], model=model)
    await model.reached("asking")
    await chat2.say("2")  # held for "Which environment?"
    model.release("asking")
    await chat2.wait_for(lambda: chat2.texts() == [question_text("Which region?", None, 600)])
    await chat2.say("eu-west")
    await model.reached("working")
    await chat2.say("forget it, status please")  # interrupts the working turn, as configured
    await chat2.wait_for(lambda: len(chat2.texts()) == 4)
    assert chat2.texts()[1:] == ["⏹ Stopped for your next message", "plain answer to 2",
                                 "plain answer to forget it, status please"]
    model.release("working")
    await settled(gateway2)
    assert gateway2.store.inbox.unfinished() == []
