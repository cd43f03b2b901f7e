"""A reply from another thread of a group (a Telegram forum's other topic) to the bot's question, by the member it
asked, that comes while the turn run again after a restart has not asked the question again: held for that turn
(`Questions.hold_across_threads`), as one written in the question's own thread is (`Questions.hold`). Taken if the
turn asks again word for word; else a message of its own in the thread it was written in, where it came there.
At the gateway with `RecordingAdapter`."""

from __future__ import annotations

import asyncio
import itertools
import os

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.questions import question_text
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import Inbound
from tests.asking_model import CHOICES, asking_parent
from tests.gateway.test_questions import replaying_parent

QUESTION = question_text("Which environment?", CHOICES, 600, private=False)
ASKED, ELSEWHERE = "9", "7"


async def say(chat: RecordingAdapter, text: str, thread: str, *, reply_to: str | None = None, user: str = "bob",
              sent_at: float | None = None) -> str:
    """Hand ``text`` over as ``user``'s group message in ``thread``; its event id."""
    assert chat._sink is not None
    event_id = f"ev-{os.urandom(6).hex()}"
    await chat._sink(Inbound(chat.name, "g", thread, user, user, text, event_id, is_private=False, sent_at=sent_at,
                             message_id=f"m-{os.urandom(3).hex()}", reply_to=reply_to))
    return event_id


def answers(chat: RecordingAdapter) -> list[tuple[str, str | None]]:
    """The model's answers and the threads they went to (not a note that a message is answered late)."""
    return [(m.text, m.outbound.thread_id) for m in chat.messages if m.text.startswith(("deploying", "plain", "❓"))]


async def asked_before_a_restart(tmp_path, gateways, clock: FakeClock, **sections):
    """Bob's request in ``ASKED``, the bot's question there, then the gateway stopped for a minute (the turn runs
    again after the start). Returns the config, the question's message id, when it was asked and the request's
    event id."""
    chat, config = RecordingAdapter(), make_config(tmp_path, **sections)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    request = await say(chat, "please deploy the app", ASKED, sent_at=clock.time() - 30)
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    question, asked = chat.messages[0].message_id, clock.time()
    await gateway.stop(grace=0)
    clock.advance(60)
    return config, question, asked, request


def restarted(ids: int) -> RecordingAdapter:
    chat = RecordingAdapter()
    chat._ids = itertools.count(ids)  # the message ids the earlier process gave stay the question's own
    return chat


async def test_held_and_taken_the_reply_is_settled_into_the_turn_that_asked(tmp_path, gateways):
    clock = FakeClock(autojump=False)
    config, question, asked, request = await asked_before_a_restart(tmp_path, gateways, clock)
    chat, model = restarted(100), ScriptedModel({"parent": replaying_parent("asking")})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await model.reached("asking")
    reply = await say(chat, "2", ELSEWHERE, reply_to=question, sent_at=asked + 10)
    running = gateway.sessions.find(chat.name, "g", ASKED).running
    assert running.held_answer is not None and running.held_answer.event.event_id == reply
    assert not gateway.sessions.find(chat.name, "g", ELSEWHERE).busy  # no turn of its own
    model.release("asking")
    await chat.wait_for(lambda: chat.texts())
    await settled(gateway)
    assert answers(chat) == [("deploying to: [@bob] production", ASKED)]
    inbox = gateway.store.inbox
    assert inbox.settled(chat.name, reply) and inbox.turn_of(chat.name, reply) == inbox.turn_of(chat.name, request)
    assert inbox.unfinished() == []


async def test_held_and_not_taken_it_is_answered_once_in_its_own_thread_where_it_came(tmp_path, gateways):
    """The turn run again asks otherwise: Bob's reply is a message of its own in the topic he wrote it in, queued
    there ahead of Carol's message that came after it, behind her slow turn that ran before it."""
    clock = FakeClock(autojump=False)
    config, question, asked, _ = await asked_before_a_restart(tmp_path, gateways, clock,
                                                             display={"busy_input_mode": "queue"})

    def parent(request: ModelRequest) -> dict:
        step = asking_parent(request)
        if "tool_calls" in step:  # the model asks otherwise this time
            return {"wait": "asking", "tool_calls": [{"name": "clarify", "arguments": {"question": "Which region?"}}]}
        return {**step, "wait": "slow"} if "slow" in str(request.messages[-1]["content"]) else step

    chat, model = restarted(100), ScriptedModel({"parent": parent})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await model.reached("asking")
    await say(chat, "a slow one", ELSEWHERE, user="carol")
    await model.reached("slow")
    await say(chat, "2", ELSEWHERE, reply_to=question, sent_at=asked + 10)  # held
    await say(chat, "and another", ELSEWHERE, user="carol")  # queued behind Carol's slow turn
    model.release("asking")
    await chat.wait_for(lambda: len(answers(chat)) == 1)
    assert answers(chat) == [(question_text("Which region?", None, 600, private=False), ASKED)]
    await say(chat, "eu-west", ASKED)
    await chat.wait_for(lambda: len(answers(chat)) == 2)
    model.release("slow")
    await chat.wait_for(lambda: len(answers(chat)) == 5)
    await settled(gateway)
    assert answers(chat)[1:] == [("deploying to: [@bob] eu-west", ASKED),
                                 ("plain answer to [@carol] a slow one", ELSEWHERE),
                                 ("plain answer to [@bob] 2", ELSEWHERE),  # before Carol's, which came after it
                                 ("plain answer to [@carol] and another", ELSEWHERE)]
    assert gateway.store.inbox.unfinished() == []


async def test_held_and_the_turn_stopped_the_reply_is_answered_in_its_own_thread(tmp_path, gateways):
    clock = FakeClock(autojump=False)
    config, question, asked, _ = await asked_before_a_restart(tmp_path, gateways, clock)
    chat, model = restarted(100), ScriptedModel({"parent": replaying_parent("asking")})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await model.reached("asking")
    await say(chat, "2", ELSEWHERE, reply_to=question, sent_at=asked + 10)
    await say(chat, "/stop", ASKED)  # no longer asks: the reply is Bob's message in the topic he wrote it in
    await chat.wait_for(lambda: answers(chat))
    await settled(gateway)
    assert answers(chat) == [("plain answer to [@bob] 2", ELSEWHERE)]
    assert gateway.store.inbox.unfinished() == []


async def test_a_restart_while_it_is_held_loses_it_not_nor_answers_it_twice(tmp_path, gateways):
    """Unsettled, the held reply is handed over again by the next start, once: there, as in the question's own topic,
    it comes before the turn run again begins, so it is held for nothing and is a message of its own in its topic;
    the question, asked again, waits for its answer."""
    clock = FakeClock(autojump=False)
    config, question, asked, request = await asked_before_a_restart(tmp_path, gateways, clock)
    chat, model = restarted(100), ScriptedModel({"parent": replaying_parent("asking")})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await model.reached("asking")
    reply = await say(chat, "2", ELSEWHERE, reply_to=question, sent_at=asked + 10)
    assert gateway.sessions.find(chat.name, "g", ASKED).running.held_answer.event.event_id == reply
    await gateway.stop(grace=0)  # held, never asked again: both wait for the next start
    assert answers(chat) == []
    clock.advance(60)

    chat3, model3 = restarted(200), ScriptedModel({"parent": replaying_parent("asking")})
    model3.release("asking")
    gateway3 = await gateways(config, [chat3], model=model3, clock=clock)
    await chat3.wait_for(lambda: len(answers(chat3)) == 2)
    await say(chat3, "1", ASKED)
    await chat3.wait_for(lambda: len(answers(chat3)) == 3)
    await settled(gateway3)
    assert sorted(answers(chat3)) == sorted([(QUESTION, ASKED), ("plain answer to [@bob] 2", ELSEWHERE),
                                             ("deploying to: [@bob] staging", ASKED)])
    inbox = gateway3.store.inbox
    assert inbox.turn_of(chat3.name, reply) != inbox.turn_of(chat3.name, request)
    assert inbox.unfinished() == []


def asks_otherwise(request: ModelRequest) -> dict:
    """The turn run again asks another question; a message with "slow" in it waits at "slow"."""
    step = asking_parent(request)
    if "tool_calls" in step:
        return {"wait": "asking", "tool_calls": [{"name": "clarify", "arguments": {"question": "Which region?"}}]}
    return {**step, "wait": "slow"} if "slow" in str(request.messages[-1]["content"]) else step


async def test_held_and_its_sender_stops_their_own_topic_the_reply_is_dropped_with_it(tmp_path, gateways):
    """Bob's /stop in the topic he wrote his reply in drops his messages waiting there: the held reply too, as one
    queued behind his slow turn there is. Else, not taken, it was answered there after his /stop."""
    clock = FakeClock(autojump=False)
    config, question, asked, _ = await asked_before_a_restart(tmp_path, gateways, clock,
                                                             display={"busy_input_mode": "queue"})
    chat, model = restarted(100), ScriptedModel({"parent": asks_otherwise})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await model.reached("asking")
    await say(chat, "a slow one", ELSEWHERE)
    await model.reached("slow")
    reply = await say(chat, "2", ELSEWHERE, reply_to=question, sent_at=asked + 10)  # held
    await say(chat, "/stop", ELSEWHERE)
    model.release("slow")
    model.release("asking")
    await chat.wait_for(lambda: any(text.startswith("❓ Which region?") for text, _ in answers(chat)))
    await say(chat, "eu-west", ASKED)
    await chat.wait_for(lambda: any(text.startswith("deploying") for text, _ in answers(chat)))
    await settled(gateway)
    assert ("plain answer to [@bob] 2", ELSEWHERE) not in answers(chat), chat.texts()
    assert gateway.store.inbox.settled(chat.name, reply) and gateway.store.inbox.unfinished() == []


async def test_held_while_its_topic_leaves_memory_twice_the_topic_keeps_its_conversation(tmp_path, gateways):
    """Bob's reply held, its topic's session leaves memory, comes back for Carol's message and leaves again: sent
    home, the reply runs in the topic's session as it is now, not in the one it was accepted in, whose conversation
    lacks Carol's exchange (stored whole again, it was lost)."""
    clock = FakeClock(autojump=False)
    config, question, asked, _ = await asked_before_a_restart(tmp_path, gateways, clock)
    chat, model = restarted(100), ScriptedModel({"parent": asks_otherwise})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await model.reached("asking")
    await say(chat, "2", ELSEWHERE, reply_to=question, sent_at=asked + 10)  # held
    assert gateway.sessions.evict_idle(0, lambda session_id: False) == 1  # topic 7's session leaves memory
    await say(chat, "hello there", ELSEWHERE, user="carol")
    await chat.wait_for(lambda: ("plain answer to [@carol] hello there", ELSEWHERE) in answers(chat))
    for _ in range(20):
        await asyncio.sleep(0)
        if not gateway.sessions.find(chat.name, "g", ELSEWHERE).busy:
            break
    assert gateway.sessions.evict_idle(0, lambda session_id: False) == 1  # and again, Carol's exchange stored
    model.release("asking")
    await chat.wait_for(lambda: any(text.startswith("❓ Which region?") for text, _ in answers(chat)))
    await say(chat, "eu-west", ASKED)
    await chat.wait_for(lambda: ("plain answer to [@bob] 2", ELSEWHERE) in answers(chat))
    await settled(gateway)
    stored = gateway.store.sessions.load(gateway.sessions.find(chat.name, "g", ELSEWHERE).key).transcript
    said = [str(message.get("content")) for message in stored]
    assert any("hello there" in text for text in said) and any("[@bob] 2" in text for text in said), said
