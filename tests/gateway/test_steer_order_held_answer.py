"""A group message held for a question a turn run again after a restart may ask again (`RunningTurn.held_answer`),
and not taken for its answer, runs as a turn of its own behind another member's message sent before it."""

from __future__ import annotations

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES, asking_parent
from tests.gateway.test_questions import replaying_parent


def answers(chat: RecordingAdapter) -> list[str]:
    """The model's answers (not the question, nor the note that Bob's late message is answered late)."""
    return [text for text in chat.texts() if text.startswith(("deploying", "plain answer"))]


async def test_a_held_answer_not_taken_waits_behind_another_members_earlier_message(tmp_path, gateways):
    config = make_config(tmp_path, display={"busy_input_mode": "steer"})
    chat = RecordingAdapter()
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}))
    await chat.say("please deploy the app", private=False)
    await chat.wait_for(lambda: chat.texts() == [question_text("Which environment?", CHOICES, 600, private=False)])
    await gateway.stop(grace=0)

    def other_question(request: ModelRequest) -> dict:  # the model asks otherwise this time
        step = replaying_parent("asking")(request)
        if "tool_calls" in step:
            return {**step, "tool_calls": [{"name": "clarify", "arguments": {"question": "Which region?"}}]}
        return step

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": other_question})
    gateway2 = await gateways(config, [chat2], model=model)
    await model.reached("asking")
    # Bob's, handed over late: sent before the question was asked, so never held for its answer; it waits.
    await chat2.say("hello", private=False, user="u2", name="bob", sent_at=1.0)
    await chat2.say("2", private=False)  # Alice's, meant for "Which environment?": held
    [session] = gateway2.sessions
    assert session.running.held_answer is not None and [i.event.text for i in session.queue] == ["hello"]
    model.release("asking")
    await chat2.wait_for(lambda: len(chat2.texts()) == 1)
    await chat2.say("eu-west", private=False)
    await chat2.wait_for(lambda: len(answers(chat2)) == 3)
    await settled(gateway2)
    assert answers(chat2) == ["deploying to: [@alice] eu-west", "plain answer to [@bob] hello",
                                 "plain answer to [@alice] 2"]
    assert gateway2.store.inbox.unfinished() == []
