"""Review of 57c5069f: a message steered into an asking turn, and that turn's message, both set aside as dead letters
and handed back after retention forgot their inbox records (`Inbox.prune`). Which message began the turn was read
from the inbox alone, by the order of its rows (`Inbox.opened_by`): with both records forgotten, the steered message
handed back first ran as the asking turn, its answer journaled as that turn's, and the asking message, handed back
after it, ran quietly, never answered; with the asking message's record alone forgotten, its record written again
came after the steered one's, which was taken for the turn's."""

from __future__ import annotations

import contextlib
import sqlite3

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.dead_letters import APOLOGY, REQUEUE_POLL_SECONDS
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import CHOICES
from tests.gateway.test_dead_letters_steered_asking import parent

QUESTION = question_text("Which environment?", CHOICES, 600)
ANSWER = "deploying to: "
STEERED_ANSWER = "plain answer to and check the logs"


class Odd(RecordingAdapter):
    """The first answer to the deployment breaks the gateway's handling of its turn (a bug measuring it)."""

    broke = False

    def measure(self, text: str) -> int:
        if ANSWER in text and not self.broke:
            self.broke = True
            raise RuntimeError("a bug in measuring")
        return len(text)


def _forget(tmp_path, *event_ids: str) -> None:
    """As retention does to events set aside long ago (`Inbox.prune`)."""
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db, db:
        db.executemany("DELETE FROM gateway_inbox WHERE event_id=?", [(e,) for e in event_ids])


async def test_both_dead_letters_handed_back_after_retention_forgot_them_are_both_answered(tmp_path, gateways):
    # Both messages set aside; retention forgets their inbox records; the operator hands back the steered one, then
    # the asking one. The asking one's turn must ask again, not run quietly as one whose answer the chat has.
    config = make_config(tmp_path, inbox={"max_attempts": 1}, display={"busy_input_mode": "steer"})
    clock, chat = FakeClock(autojump=False), Odd()
    model = ScriptedModel({"parent": parent})
    model.release("answered")
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please deploy the app", event_id="ev-asks")
    await model.reached("first")
    await chat.say("and check the logs", event_id="ev-steered")
    model.release("first")
    await chat.wait_for(lambda: QUESTION in chat.texts())
    await chat.say("2", event_id="ev-answer")
    await chat.wait_for(lambda: chat.texts().count(APOLOGY) == 2)
    await settled(gateway)
    letters = {letter.event_id: letter for letter in gateway.store.dead_letters.all()}
    assert letters.keys() == {"ev-asks", "ev-steered"}
    await gateway.stop(grace=0)
    _forget(tmp_path, "ev-asks", "ev-steered", "ev-answer")

    model = ScriptedModel({"parent": parent})
    model.release("first")
    model.release("answered")
    gateway = await gateways(config, [chat], model=model, clock=clock)
    for event_id in ("ev-steered", "ev-asks"):
        gateway.store.dead_letters.retry(letters[event_id].id, gateway.store.inbox.requeue)
        await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)
        clock.advance(REQUEUE_POLL_SECONDS)
        if event_id == "ev-steered":
            await chat.wait_for(lambda: STEERED_ANSWER in chat.texts())
            await settled(gateway)
    await chat.wait_for(lambda: chat.texts().count(QUESTION) == 2)
    await chat.say("1", event_id="ev-answer-2")
    await chat.wait_for(lambda: chat.texts()[-1].startswith(ANSWER))
    await settled(gateway)
    assert gateway.store.inbox.settled("chat", "ev-asks") and gateway.store.inbox.unfinished() == []


async def test_the_asking_dead_letter_handed_back_after_retention_forgot_it_alone_runs_its_own_turn(
        tmp_path, gateways):
    # Retention forgets the asking message's record, received first, not yet the steered one's: handed back, the
    # asking message's record is written anew, after the steered one's, and must still be taken for its turn's.
    config = make_config(tmp_path, inbox={"max_attempts": 1}, display={"busy_input_mode": "steer"})
    clock, chat = FakeClock(autojump=False), Odd()
    model = ScriptedModel({"parent": parent})
    model.release("answered")
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("please deploy the app", event_id="ev-asks")
    await model.reached("first")
    clock.advance(1.0)  # received a second later: retention forgets the older record first
    await chat.say("and check the logs", event_id="ev-steered")
    model.release("first")
    await chat.wait_for(lambda: QUESTION in chat.texts())
    await chat.say("2", event_id="ev-answer")
    await chat.wait_for(lambda: chat.texts().count(APOLOGY) == 2)
    await settled(gateway)
    letters = {letter.event_id: letter for letter in gateway.store.dead_letters.all()}
    turn = letters["ev-asks"].turn_id
    assert letters["ev-steered"].turn_id == turn
    await gateway.stop(grace=0)
    _forget(tmp_path, "ev-asks")

    model = ScriptedModel({"parent": parent})
    model.release("first")
    model.release("answered")
    gateway = await gateways(config, [chat], model=model, clock=clock)
    gateway.store.dead_letters.retry(letters["ev-asks"].id, gateway.store.inbox.requeue)
    await clock.until_sleeping(lasting=REQUEUE_POLL_SECONDS)
    clock.advance(REQUEUE_POLL_SECONDS)
    await chat.wait_for(lambda: chat.texts().count(QUESTION) == 2)
    assert gateway.store.inbox.turn_of("chat", "ev-asks") == turn  # its own turn, asking again, not a new one
    await chat.say("1", event_id="ev-answer-2")
    await chat.wait_for(lambda: chat.texts()[-1].startswith(ANSWER))
    await settled(gateway)
    assert gateway.store.inbox.settled("chat", "ev-asks") and gateway.store.inbox.unfinished() == []
