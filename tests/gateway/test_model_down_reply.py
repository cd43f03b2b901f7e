"""What a chat reads while the model server is known to be down (`gateway.turn_runner.MODEL_DOWN`): that the model is
unreachable, at once, rather than "try again in a moment" after the retries of a call that is not sent any more."""

from __future__ import annotations

from agent.models import OpenAIModel
from agent.settings import ModelSettings
from agent.testing import FakeClock
from gateway.replies import MODEL_BUSY, MODEL_FAILED
from gateway.testing import RecordingAdapter, make_config
from gateway.turn_runner import MODEL_DOWN
from tests.gateway.wire import ask, openai_model

DOWN = {"error": {"message": "upstream connect error", "type": "server_error", "param": None, "code": None}}


def on(server, clock: FakeClock) -> OpenAIModel:
    return OpenAIModel(ModelSettings(provider="openai", name="m", base_url=server.base_url, api_key="sk-test",
                                     max_retries=0), env={}, clock=clock)


async def test_chats_writing_while_the_server_is_down_are_told_it_is_unreachable(tmp_path, llm, gateways):
    server, clock = await llm(default_text="back again"), FakeClock(autojump=False)
    for _ in range(3):
        server.push_error(503, DOWN)
    chat = RecordingAdapter()
    # Waiting for the server to come back (`test_model_down_wait`) off: told at once, as before that wait.
    config = make_config(tmp_path, model=openai_model(server, wait_when_down_seconds=0))
    gateway = await gateways(config, [chat], model=on(server, clock))
    told = [await ask(chat, gateway, f"question {n}") for n in range(5)]
    assert told == [MODEL_FAILED] * 3 + [MODEL_DOWN] * 2
    assert len(server.requests) == 3
    clock.advance(10)  # the next message is sent as a probe, and answered
    assert await ask(chat, gateway, "anyone there?") == "back again"


async def test_a_server_asking_for_a_long_wait_is_waited_for_and_the_chat_told_how_long(tmp_path, llm, gateways):
    server, clock = await llm(), FakeClock(autojump=False)
    for _ in range(3):
        server.push_error(429, {"error": {"message": "slow down", "type": "requests", "code": None}},
                          {"retry-after": "600"})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, model=openai_model(server)), [chat], model=on(server, clock))
    for n in range(3):
        await ask(chat, gateway, f"question {n}")
    clock.advance(300)
    assert await ask(chat, gateway, "now?") == MODEL_BUSY.format(wait="5 minutes")
    assert len(server.requests) == 3
