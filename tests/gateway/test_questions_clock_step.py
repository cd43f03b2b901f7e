"""A question waiting while NTP steps the wall clock back (it ran fast): the answer the chat sends next is
still its answer (`Questions._asked_at`), not a message taken for one written before the question."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, make_config, settled
from tests.asking_model import asking_parent
from tests.gateway.test_questions import QUESTION


async def test_an_answer_received_after_the_clock_was_stepped_back_answers_the_question(tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}),
                             clock=clock)
    await chat.say("please deploy the app")
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    clock.jump(-3600.0)
    await chat.say("2")  # received (the web chat, the terminal: no platform date) an hour "before" it was asked
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    assert chat.texts() == [QUESTION, "deploying to: production"]


async def test_an_answer_the_platform_dates_after_the_question_answers_it_once_a_fast_clock_is_set_right(
        tmp_path, gateways):
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    clock.jump(3600.0)  # the gateway's clock an hour ahead of the platform's: the question is stamped an hour late
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}),
                             clock=clock)
    await chat.say("please deploy the app", sent_at=clock.time())
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    clock.advance(5)
    clock.jump(-3600.0)  # NTP sets it right
    await chat.say("2", sent_at=clock.time())  # dated by the platform an hour before the question's stamp
    await chat.wait_for(lambda: len(chat.texts()) == 2)
    await settled(gateway)
    assert chat.texts() == [QUESTION, "deploying to: production"]


async def test_after_a_suspend_a_message_written_before_the_question_is_still_not_its_answer(tmp_path, gateways):
    # The machine slept with the question waiting: the wall clock ran ahead, which moves the question nowhere.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    gateway = await gateways(make_config(tmp_path), [chat], model=ScriptedModel({"parent": asking_parent}),
                             clock=clock)
    await chat.say("please deploy the app", sent_at=clock.time() - 60)
    await chat.wait_for(lambda: chat.texts() == [QUESTION])
    clock.jump(8 * 3600.0)
    await chat.say("and check the logs", sent_at=clock.time() - 8 * 3600.0 - 59)  # written before it was asked
    assert gateway.sessions.find("chat", "c1", None).running.question is not None  # still waits
    await chat.say("2")
    await chat.wait_for(lambda: "plain answer to and check the logs" in chat.texts())
    await settled(gateway)
    replies = [text for text in chat.texts() if not text.startswith("⏱")]  # late notes: the night it slept
    assert replies == [QUESTION, "deploying to: production", "plain answer to and check the logs"]
