"""A message whose model call meets its server known to be down (`agent.models._outage`) waits for it to come back,
up to ``model.wait_when_down_seconds``, its chat told so once (`gateway.replies.MODEL_DOWN_WAITING`), and is answered
then: nobody has to send it again. The openai provider against a fake server, through the gateway, on a fake clock."""

from __future__ import annotations

import pytest

from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeClock
from gateway.replies import MODEL_FAILED, down_waiting_text
from gateway.testing import RecordingAdapter, make_config, settled
from gateway.turn_runner import MODEL_DOWN
from tests.gateway.wire import ask, openai_model

DOWN = {"error": {"message": "upstream connect error", "type": "server_error", "param": None, "code": None}}


def on(server, clock: FakeClock) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                     max_retries=0), env={}, clock=clock)


def failing_first(server, failures: list[int]):
    """A responder: a 503 of the server's own for as many calls as ``failures[0]`` says, then an answer."""

    def play(body) -> dict | None:
        if failures[0] > 0:
            failures[0] -= 1
            server.push_error(503, DOWN)
            return None
        return {"text": f"answer to {body['messages'][-1]['content'].splitlines()[-1]}"}

    return play


async def down_and_waiting(tmp_path, llm, gateways, busy_mode: str = "interrupt", **model):
    """A gateway whose third message took the server for down (the two before it told the model failed), its turn
    waiting for the server to come back, its chat told so; the server answers from then on."""
    server, clock = await llm(), FakeClock(autojump=False)
    failures = [3]
    server.respond_with(failing_first(server, failures))
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server, **model), display={"busy_input_mode": busy_mode})
    gateway = await gateways(config, [chat], model=on(server, clock), clock=clock)
    assert [await ask(chat, gateway, f"question {n}") for n in range(2)] == [MODEL_FAILED] * 2
    await chat.say("question 2")
    await chat.wait_for(lambda: chat.texts("interim"))
    await clock.until_sleeping(lasting=10.0)  # the wait for the next probe, sent by this turn
    return server, clock, chat, gateway, failures


@pytest.mark.parametrize("busy_mode", ["queue", "steer", "interrupt"])
async def test_a_message_that_meets_the_server_down_is_answered_once_it_is_back(tmp_path, llm, gateways, busy_mode):
    # It read "the model is unreachable … Please send your message again in a few minutes", and was never answered.
    server, clock, chat, gateway, _ = await down_and_waiting(tmp_path, llm, gateways, busy_mode)
    assert chat.texts("interim") == [down_waiting_text(600)]
    assert "I will answer this as soon as it is back, waiting up to 10 minutes for it" in chat.texts("interim")[0]
    await chat.say("question 3")  # meanwhile: as the chat's busy mode says
    clock.advance(10)  # the probe, the waiting call, is answered
    if busy_mode == "interrupt":  # stopped for the next message, whose turn reads both
        await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
        await settled(gateway)
        assert chat.texts("reply")[2] == "answer to question 3"
        assert server.requests[-1]["messages"][-1]["content"].endswith("question 2\n\nquestion 3")
    else:  # answered, then the next message (a steer the waiting call had not read, as a turn of its own)
        await chat.wait_for(lambda: len(chat.texts("reply")) == 4)
        await settled(gateway)
        assert chat.texts("reply")[2:] == ["answer to question 2", "answer to question 3"]
    assert len(chat.texts("interim")) == 1  # told once
    assert MODEL_DOWN not in chat.texts()


async def test_past_its_wait_the_message_is_answered_that_the_model_is_unreachable(tmp_path, llm, gateways):
    server, clock, chat, gateway, failures = await down_and_waiting(tmp_path, llm, gateways, wait_when_down_seconds=15)
    assert chat.texts("interim") == [down_waiting_text(15)]
    failures[0] = 1
    clock.advance(10)  # the probe fails: the next is due 20 s later, past the wait
    await server.wait_for(lambda: len(server.requests) == 4)
    await clock.until_sleeping(lasting=5.0)
    clock.advance(5)
    await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
    await settled(gateway)
    assert chat.texts("reply")[-1] == MODEL_DOWN
    assert len(server.requests) == 4


async def test_a_stop_ends_the_wait_and_nothing_is_answered_later(tmp_path, llm, gateways):
    server, clock, chat, gateway, failures = await down_and_waiting(tmp_path, llm, gateways)
    await chat.say("/stop")
    await chat.wait_for(lambda: "command" in chat.kinds())
    await settled(gateway)
    assert clock.sleeping == clock._count(None) and not _waiting(clock)  # its wait for the next probe is over
    assert len(chat.texts("reply")) == 2 and MODEL_DOWN not in chat.texts()
    clock.advance(10)  # a probe would be due: nobody waits to send it
    assert await ask(chat, gateway, "question 3") == "answer to question 3"  # the next message is the probe
    assert "answer to question 2" not in chat.texts()
    assert len(server.requests) == 4


def _waiting(clock: FakeClock) -> bool:
    """Whether a turn waits for a probe due 10 s after the server was taken for down."""
    return clock._count(10.0) > 0


async def test_in_a_group_the_answer_after_the_wait_quotes_the_message_as_the_notice_does(tmp_path, llm, gateways):
    # The notice took the quote, and the answer, minutes later among the group's other messages, showed no one's.
    server, clock = await llm(), FakeClock(autojump=False)
    server.respond_with(failing_first(server, [3]))
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server), display={"busy_input_mode": "queue"})
    gateway = await gateways(config, [chat], model=on(server, clock), clock=clock)
    for n in range(2):
        await chat.say(f"question {n}", private=False, message_id=f"m{n}")
        await chat.wait_for(lambda n=n: len(chat.texts("reply")) == n + 1)
    await chat.say("question 2", private=False, message_id="m2")
    await chat.wait_for(lambda: chat.texts("interim"))
    await clock.until_sleeping(lasting=10.0)
    clock.advance(10)
    await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
    await settled(gateway)
    [notice] = [m for m in chat.messages if m.kind == "interim"]
    answer = [m for m in chat.messages if m.kind == "reply"][-1]
    assert (notice.outbound.reply_to, answer.outbound.reply_to) == ("m2", "m2")
    assert answer.text.endswith("question 2")
