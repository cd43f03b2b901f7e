"""A turn waiting for its model's server to come back (`agent.models._outage.WaitWhenDown`), its chat told so,
shows no "typing…" meanwhile and sends no "⏳ Still working" notice: both said the bot was writing while it waited
(on Telegram a typing call every 4 s, ~150 a chat in ten minutes). Both go on once its call goes again. The openai
provider against a fake server, through the gateway, on a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from agent.testing import FakeClock
from gateway.replies import MODEL_FAILED
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_model_down_wait import DOWN, on
from tests.gateway.wire import ask, openai_model


def typing_loops() -> int:
    """How many turns' typing indicators are being refreshed now (`gateway.turn_runner._Typing`)."""
    return sum(1 for task in asyncio.all_tasks()
               if not task.done() and task.get_coro().__qualname__ == "_Typing._keep_typing")


async def until(predicate, timeout: float = 5.0) -> None:
    """Wait (in real time) for ``predicate``, which no event tells of (a typing call changes no message)."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


@pytest.mark.parametrize(("lapses", "progress"), [(False, "off"), (True, "off"), (False, "card")])
async def test_a_turn_waiting_for_the_model_shows_no_typing_and_no_notice_until_its_call_goes(
        tmp_path, llm, gateways, lapses, progress):
    server, clock = await llm(), FakeClock(autojump=False)
    failures, gate = [3], asyncio.get_running_loop().create_future()

    async def play(body) -> dict | None:
        if failures[0] > 0:
            failures[0] -= 1
            server.push_error(503, DOWN)
            return None
        if body["messages"][-1]["role"] != "tool":  # the probe answered: the turn goes on, its next call held
            return {"tool_calls": [{"name": "no_such_tool", "arguments": "{}"}]}
        await gate
        return {"text": "answered"}

    server.respond_with(play)
    chat = RecordingAdapter()
    if lapses:  # Telegram's, Discord's: nothing to clear, it lapses
        chat.typing_lapses = True  # type: ignore[attr-defined]
    config = make_config(tmp_path, model=openai_model(server), agent={"gateway_notify_interval": 15},
                         display={"progress": progress})  # a card's due 2 s in, then every 15 s
    gateway = await gateways(config, [chat], model=on(server, clock), clock=clock)
    assert [await ask(chat, gateway, f"question {n}") for n in range(2)] == [MODEL_FAILED] * 2
    idle = chat.idle_calls
    await chat.say("question 2")
    await chat.wait_for(lambda: chat.texts("interim"))
    await clock.until_sleeping(lasting=10.0)  # the wait for the next probe, sent by this turn
    if not lapses:  # Slack's placeholder, the web page's "working": cleared
        await until(lambda: chat.idle_calls == idle + 1)
    assert typing_loops() == 0
    typed = chat.typing_calls
    failures[0] = 2
    clock.advance(10)  # the probe fails; the next is due 20 s later, and fails too; the next 40 s after it
    await server.wait_for(lambda: len(server.requests) == 4)
    await clock.until_sleeping(lasting=20.0)
    clock.advance(20)
    await server.wait_for(lambda: len(server.requests) == 5)
    await clock.until_sleeping(lasting=40.0)
    assert typing_loops() == 0 and chat.typing_calls == typed  # no typing for its own probes either
    clock.advance(40)  # 70 s in: the probe is answered, and the turn goes on
    await server.wait_for(lambda: len(server.requests) == 7)
    await until(lambda: chat.typing_calls > typed)
    assert typing_loops() == 1
    gate.set_result(None)
    await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
    await settled(gateway)
    assert chat.texts("reply")[-1] == "answered"
    assert chat.texts("notice") == []  # due at 15, 30, 45 and 60 s (a card at 2 s), the turn waiting all along
    assert chat.idle_calls == idle + (1 if lapses else 2)
