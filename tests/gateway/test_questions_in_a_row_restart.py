"""A turn that asked two questions in a row, the first answered, dies while the second waits: the answer the
chat gives to the second meanwhile is kept for it, not run as a message that stops the turn run again."""

from __future__ import annotations

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES

ENVIRONMENT = question_text("Which environment?", CHOICES, 600)
REGION = question_text("Which region?", None, 600)


def two_questions(gate: str | None = None):
    """Asks the environment (waiting at ``gate`` first, when given), then the region, then answers with both."""
    def parent(request: ModelRequest) -> dict:
        last = request.messages[-1]
        answers = [m["content"] for m in request.messages if m["role"] == "tool"]
        if last["role"] == "user" and "deploy" in str(last["content"]):
            step = {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                      "choices": CHOICES}}]}
            return {**step, "wait": gate} if gate else step
        if last["role"] == "tool" and len(answers) == 1:
            return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which region?"}}]}
        if last["role"] == "tool":
            return {"text": f"deploying to: {answers[0]} in {answers[1]}"}
        return {"text": f"plain answer to {last['content']}"}
    return parent


async def test_an_answer_to_the_second_question_given_across_a_restart_answers_it_when_asked_again(
        tmp_path, gateways):
    chat, config = RecordingAdapter(), make_config(tmp_path)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": two_questions()}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [ENVIRONMENT])
    await chat.say("1")
    await chat.wait_for(lambda: chat.texts() == [ENVIRONMENT, REGION])
    await gateway.stop(grace=0)  # the turn runs again after the restart, and asks the first question again

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": two_questions("asking")})
    gateway2 = await gateways(config, [chat2], model=model)
    await model.reached("asking")
    await chat2.say("eu-west")  # the answer to the region, the question the chat has open
    model.release("asking")
    await chat2.wait_for(lambda: chat2.texts() == [ENVIRONMENT])  # answered before, its answer not kept: anew
    await chat2.say("1")
    await chat2.wait_for(lambda: len(chat2.texts()) == 2)
    await settled(gateway2)
    assert chat2.texts() == [ENVIRONMENT, "deploying to: staging in eu-west"]  # the region not asked twice
    assert gateway2.store.inbox.unfinished() == []


async def test_an_answer_to_the_second_question_after_the_first_is_answered_again_is_kept_for_it(tmp_path, gateways):
    # Answered again after the restart, the first question's answer is handed into the turn: the region,
    # asked before it was, must not read as answered by it.
    chat, config = RecordingAdapter(), make_config(tmp_path)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": two_questions()}))
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [ENVIRONMENT])
    await chat.say("1")
    await chat.wait_for(lambda: chat.texts() == [ENVIRONMENT, REGION])
    await gateway.stop(grace=0)

    def region_waits(request: ModelRequest) -> dict:
        step = two_questions()(request)
        asks_region = "tool_calls" in step and step["tool_calls"][0]["arguments"]["question"] == "Which region?"
        return {**step, "wait": "region"} if asks_region else step

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": region_waits})
    gateway2 = await gateways(config, [chat2], model=model)
    await chat2.wait_for(lambda: chat2.texts() == [ENVIRONMENT])
    await chat2.say("2")
    await model.reached("region")
    await chat2.say("eu-west")  # the answer to the region, still open in the chat
    model.release("region")
    await chat2.wait_for(lambda: len(chat2.texts()) == 2)
    await settled(gateway2)
    assert chat2.texts() == [ENVIRONMENT, "deploying to: production in eu-west"]
    assert gateway2.store.inbox.unfinished() == []
