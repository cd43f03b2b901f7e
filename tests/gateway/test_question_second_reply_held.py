"""Two replies to a question asked before a restart, both sent before the turn run again asks it again: the first is
held for the question (`gateway.questions.Questions.hold`), the second is a message of its own, queued behind the turn
whatever the busy mode (`Questions.holds_answer`). Interrupting, it stopped the turn before it asked again, and the
held answer ran as a message of its own: the question was lost."""

from __future__ import annotations

import pytest

from agent.models.scripted import ScriptedModel
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
