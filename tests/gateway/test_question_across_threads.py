"""From review of `Questions.hand_across_threads`: a reply from another thread of a group (a Telegram forum's other
topic) quoting the bot's question, by the member it asked, answers it; at the gateway with `RecordingAdapter`."""

from __future__ import annotations

import asyncio
import itertools
import os

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
              sent_at: float | None = None) -> None:
    assert chat._sink is not None
    await chat._sink(Inbound(chat.name, "g", thread, user, user, text, f"ev-{os.urandom(6).hex()}",
                             is_private=False, sent_at=sent_at, message_id=f"m-{os.urandom(3).hex()}",
                             reply_to=reply_to))


def where(chat: RecordingAdapter) -> list[tuple[str, str | None]]:
    return [(m.text, m.outbound.thread_id) for m in chat.messages]


async def test_the_reply_from_another_thread_answers_the_question(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}))
    await say(chat, "please deploy the app", ASKED)
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    await say(chat, "2", ELSEWHERE, reply_to=chat.messages[0].message_id)
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    assert where(chat) == [(QUESTION, ASKED), ("deploying to: [@bob] production", ASKED)]
    assert gateway.store.inbox.unfinished() == []


async def test_the_reply_from_another_thread_to_a_question_asked_before_a_restart_is_held_for_it(tmp_path, gateways):
    """The member answers, from another topic, the question they saw, sent while the gateway was down; the turn
    run again has not asked it yet. In the question's own topic such an answer is held for the question asked again
    (`Questions.hold`); from another topic it opened a turn of its own there, and the question waited again."""
    clock = FakeClock(autojump=False)
    chat, config = RecordingAdapter(), make_config(tmp_path)
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": asking_parent}), clock=clock)
    await say(chat, "please deploy the app", ASKED, sent_at=clock.time() - 30)
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    question, asked = chat.messages[0].message_id, clock.time()
    await gateway.stop(grace=0)  # the turn runs again after the restart
    clock.advance(60)

    chat2, model = RecordingAdapter(), ScriptedModel({"parent": replaying_parent("asking")})
    chat2._ids = itertools.count(100)
    gateway2 = await gateways(config, [chat2], model=model, clock=clock)
    await model.reached("asking")
    await say(chat2, "2", ELSEWHERE, reply_to=question, sent_at=asked + 10)  # while the gateway was down
    model.release("asking")
    await chat2.wait_for(lambda: chat2.texts())
    for _ in range(50):
        await asyncio.sleep(0.01)
    # On the commit: [("plain answer to [@bob] 2", ELSEWHERE)], the question in ASKED waiting again till it expires.
    assert where(chat2) == [("deploying to: [@bob] production", ASKED)]  # the same question: not asked twice
    await settled(gateway2)
    assert gateway2.store.inbox.unfinished() == []


async def test_with_questions_waiting_in_two_threads_the_reply_answers_the_one_it_quotes(tmp_path, gateways):
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}))
    await say(chat, "please deploy the app", ASKED)
    await say(chat, "please deploy the docs", "3")
    await chat.wait_for(lambda: chat.texts() == [QUESTION] * 2)
    first = next(m.message_id for m in chat.messages if m.outbound.thread_id == "3")
    await say(chat, "1", ELSEWHERE, reply_to=first)
    await chat.wait_for(lambda: len(chat.texts()) == 3)
    assert where(chat)[2] == ("deploying to: [@bob] staging", "3")
    assert gateway.sessions.find("chat", "g", ASKED).running.question is not None  # still waits for its own
    await say(chat, "2", ASKED)
    await chat.wait_for(lambda: len(chat.texts()) == 4)
    await settled(gateway)
    assert where(chat)[3] == ("deploying to: [@bob] production", ASKED)
