"""A message steered into a turn and read there before the turn asked its question is marked as read within that
turn (`Inbox.read_into`): it carries the asking turn's id. When the process dies and the asking message is set aside
as a dead letter while the steered one is not, the steered one runs after the start as a turn of its own. Under the
asking turn's id, its answer was journaled as that turn's: the operator's retry of the dead letter then ran the asking
turn again quietly, taken for one whose answer the chat had, and the asking message was never answered."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY, REQUEUE_POLL_SECONDS
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES
from tests.gateway.test_dead_letters import attempts_of, died, killed_now

QUESTION = question_text("Which environment?", CHOICES, 600)


def parent(request) -> dict:
    """Asked to deploy, lists files first (waiting at ``first``), then asks, then answers (waiting at ``answered``);
    anything else is answered plainly."""
    tools = [m for m in request.messages if m["role"] == "tool"]
    users = [str(m["content"]) for m in request.messages if m["role"] == "user"]
    if not any("deploy" in u for u in users):
        return {"text": f"plain answer to {users[-1]}"}
    if not tools:
        return {"wait": "first", "tool_calls": [{"name": "list_files", "arguments": {}}]}
    if len(tools) == 1:
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                  "choices": CHOICES}}]}
    return {"wait": "answered", "text": f"deploying to: {tools[-1]['content']}"}


async def test_a_steered_message_of_an_asking_turn_set_aside_is_answered_and_so_is_the_dead_letter_retried(
        tmp_path, gateways):
    config = make_config(tmp_path, inbox={"max_attempts": 2}, display={"busy_input_mode": "steer"})
    clock, chat = FakeClock(autojump=False), RecordingAdapter()
    model = ScriptedModel({"parent": parent})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please deploy the app", event_id="ev-asks")
    await model.reached("first")
    await gateway.stop(grace=0)
    died(tmp_path)  # the asking message's first attempt

    model = ScriptedModel({"parent": parent})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await model.reached("first")
    await chat.say("and check the logs", event_id="ev-steered")  # read with the tool's result, before the question
    model.release("first")
    await chat.wait_for(lambda: QUESTION in chat.texts())
    assert gateway.store.inbox.turn_of("chat", "ev-steered") == gateway.store.inbox.turn_of("chat", "ev-asks")
    await chat.say("2", event_id="ev-answer")
    await model.reached("answered")
    await gateway.store.durable()
    restore = killed_now(tmp_path)  # dies working on the answer: charged to both messages
    await gateway.stop(grace=0)
    restore()

    model = ScriptedModel({"parent": parent})
    model.release("first")
    model.release("answered")
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    await settled(gateway)
    assert [attempts_of(tmp_path, e) for e in ("ev-asks", "ev-steered")] == [2, 1]
    # The asking message set aside, the steered one answered as a message of its own, once.
    assert chat.texts() == [QUESTION, APOLOGY, "plain answer to and check the logs"]
    [letter] = gateway.store.dead_letters.all()
    assert letter.event_id == "ev-asks"
    assert gateway.store.inbox.turn_of("chat", "ev-steered") != letter.turn_id

    gateway.store.dead_letters.retry(letter.id, gateway.store.inbox.requeue)  # as `switchboard inbox retry` does
    await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)
    clock.advance(REQUEUE_POLL_SECONDS)
    # Before, the retried turn was taken for one whose answer the chat had, and said nothing.
    await chat.wait_for(lambda: chat.texts().count(QUESTION) == 2)
    await chat.say("1", event_id="ev-answer-2")
    await chat.wait_for(lambda: len(chat.texts()) == 5)
    await settled(gateway)
    assert chat.texts()[3:] == [QUESTION, "deploying to: staging"]
    assert gateway.store.inbox.settled("chat", "ev-asks") and gateway.store.inbox.unfinished() == []
