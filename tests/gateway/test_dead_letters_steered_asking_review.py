"""Review of 57c5069f: a message steered into an asking turn, and that turn's message handed back, at a start."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES
from tests.gateway.test_dead_letters import died
from tests.gateway.test_dead_letters_steered_asking import parent

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


async def test_the_asking_message_handed_back_behind_its_steered_one_at_a_start_is_answered(tmp_path, gateways):
    # The asking message is set aside (its attempts used up), the steered one, charged less, waits to be tried again;
    # the operator hands the dead letter back and the gateway stops before taking it up. The start replays the steered
    # one first (unsettled), the asking one after it (re-queued): the steered one runs as a turn of its own, and the
    # asking one must run its turn, not be left to steer into a turn that never begins.
    config = make_config(tmp_path, inbox={"max_attempts": 2}, display={"busy_input_mode": "steer"})
    clock, chat = FakeClock(autojump=False), Odd()
    model = ScriptedModel({"parent": parent})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please deploy the app", event_id="ev-asks")
    await model.reached("first")
    await gateway.stop(grace=0)
    died(tmp_path)  # the asking message's first attempt

    model = ScriptedModel({"parent": parent})
    model.release("answered")
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await model.reached("first")
    await chat.say("and check the logs", event_id="ev-steered")
    model.release("first")
    await chat.wait_for(lambda: QUESTION in chat.texts())
    await chat.say("2", event_id="ev-answer")
    await chat.wait_for(lambda: APOLOGY in chat.texts())  # the turn broke: the asking message is set aside
    await settled(gateway)
    [letter] = gateway.store.dead_letters.all()
    assert letter.event_id == "ev-asks"
    assert not gateway.store.inbox.settled("chat", "ev-steered")  # to be tried again
    gateway.store.dead_letters.retry(letter.id, gateway.store.inbox.requeue)
    await gateway.stop(grace=0)

    model = ScriptedModel({"parent": parent})
    model.release("first")
    model.release("answered")
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.wait_for(lambda: chat.texts().count(QUESTION) == 2)
    await chat.say("1", event_id="ev-answer-2")
    await chat.wait_for(lambda: chat.texts()[-1].startswith(ANSWER))
    await settled(gateway)
    assert gateway.store.inbox.settled("chat", "ev-asks") and gateway.store.inbox.unfinished() == []
    assert "plain answer to and check the logs" in chat.texts()
