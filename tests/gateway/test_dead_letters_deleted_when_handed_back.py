"""A user's deletion of a message handed back from the dead letters (`switchboard inbox retry`) that waits for its turn,
whose turn had asked the chat a question before it was set aside. A start that replays it finds it too late to drop
(`gateway.message_edits`), as any turn run again that had asked the chat; handed back while the gateway ran, the
same deletion dropped it, so whether the message was answered hung on when the operator retried it. Now it is too late
either way: the turn runs again, and asks again."""

from __future__ import annotations

import pytest

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY, REQUEUE_POLL_SECONDS
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES
from tests.polling import until

QUESTION = question_text("Which environment?", CHOICES, 600)
ANSWER = "deploying to: "


class Odd(RecordingAdapter):
    """The first answer to the deployment breaks the gateway's handling of its turn (a bug measuring it)."""

    broke = False

    def measure(self, text: str) -> int:
        if ANSWER in text and not self.broke:
            self.broke = True
            raise RuntimeError("a bug in measuring")
        return len(text)


def parent(request) -> dict:
    """Asks before it deploys; any other message is answered once ``wait`` at its own text is released."""
    last = request.messages[-1]
    if last["role"] == "tool":
        return {"text": f"{ANSWER}{last['content']}"}
    if "deploy" in str(last["content"]):
        return {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which environment?",
                                                                  "choices": CHOICES}}]}
    return {"wait": str(last["content"]), "text": f"re: {last['content']}"}


@pytest.mark.parametrize("handed_back", ["while the gateway runs", "before a restart"])
async def test_a_dead_letter_handed_back_whose_turn_asked_is_too_late_to_drop_either_way(tmp_path, gateways,
                                                                                         handed_back):
    config = make_config(tmp_path, inbox={"max_attempts": 1}, display={"busy_input_mode": "queue"})
    clock, chat = FakeClock(autojump=False), Odd()
    model = ScriptedModel({"parent": parent})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please deploy the app", event_id="ev-asks", message_id="m-asks")
    await chat.wait_for(lambda: QUESTION in chat.texts())
    await chat.say("2", event_id="ev-answer")
    await chat.wait_for(lambda: APOLOGY in chat.texts())
    await settled(gateway)
    [letter] = gateway.store.dead_letters.all()
    await chat.say("busy", event_id="ev-busy")  # the handed back message waits behind its turn
    await model.reached("busy")
    gateway.store.dead_letters.retry(letter.id, gateway.store.inbox.requeue)  # as `switchboard inbox retry` does
    if handed_back == "before a restart":
        await gateway.stop(grace=0)
        model = ScriptedModel({"parent": parent})
        gateway = await gateways(config, [chat], model=model, clock=clock)
        await model.reached("busy")
    else:
        await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)
        clock.advance(REQUEUE_POLL_SECONDS)
    session = gateway.sessions.find("chat", "c1", None)
    await until(lambda: [i.event.event_id for i in session.queue if i.event is not None] == ["ev-asks"])

    assert not await gateway.edits.deleted("chat", "c1", None, "m-asks")
    model.release("busy")
    await chat.wait_for(lambda: chat.texts().count(QUESTION) == 2)
    await chat.say("1", event_id="ev-answer-2")
    await chat.wait_for(lambda: chat.texts()[-1].startswith(ANSWER))
    await settled(gateway)
    assert chat.texts() == [QUESTION, APOLOGY, "re: busy", QUESTION, f"{ANSWER}staging"]
