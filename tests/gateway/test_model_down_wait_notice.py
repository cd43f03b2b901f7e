"""A "⏳ Still working" notice sent before its turn began to wait for its model to come back reads that it waits
(`gateway.notices.Notifier.hold`), at once, its time refreshed once per interval, and as before once the turn's call
goes again: it was left as it last read, "⏳ Working — 15 s — thinking" for up to ten minutes while nothing ran. None
is sent anew meanwhile, and where the platform cannot edit (the webhook) nothing more is sent. The notifier on a fake
clock, then the openai provider against a fake server, through the gateway."""

from __future__ import annotations

import asyncio

import pytest

from agent.testing import FakeClock
from gateway.notices import Notifier
from gateway.replies import MODEL_FAILED
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_model_down_wait import DOWN, on
from tests.gateway.wire import ask, openai_model

HELD = "⏳ Waiting for the model to come back"


@pytest.mark.parametrize(("mode", "working"),
                         [(True, "⏳ Working — {} — thinking"), ("generic", "⏳ Still working — {}")])
async def test_a_notice_sent_reads_that_its_turn_waits_and_reads_as_before_once_released(mode, working):
    clock, sent = FakeClock(autojump=False), []
    notifier = Notifier(interval=15, mode=mode, send=lambda text, n: sent.append((text, n)),
                        detail=lambda: "thinking", clock=clock)
    notifier.start()
    try:
        await clock.until_sleeping(lasting=15)
        clock.advance(15)
        await clock.until_sleeping(lasting=15)
        clock.advance(5)
        notifier.hold(True)  # 20 s in
        notifier.hold(True)  # told again: nothing new to say
        assert sent == [(working.format("15 s"), 0), (f"{HELD} — 20 s", 1)]
        clock.advance(10)
        await clock.until_sleeping(lasting=15)
        assert sent[2:] == [(f"{HELD} — 30 s", 2)]
        clock.advance(8)
        notifier.hold(False)  # 38 s in: its call goes
        assert sent[3:] == [(working.format("38 s"), 3)]
        clock.advance(7)
        await clock.until_sleeping(lasting=15)
        assert sent[4:] == [(working.format("45 s"), 4)]
        notifier.disarm()
        notifier.hold(True)  # final: its turn ended
        assert len(sent) == 5
    finally:
        notifier.disarm()


async def test_no_notice_is_sent_while_the_turn_waits_and_none_was_sent_before():
    clock, sent = FakeClock(autojump=False), []
    notifier = Notifier(interval=15, mode=True, send=lambda text, n: sent.append((text, n)),
                        detail=lambda: "thinking", clock=clock)
    notifier.start()
    try:
        notifier.hold(True)
        await clock.until_sleeping(lasting=15)
        for _ in range(3):
            clock.advance(15)
            await clock.until_sleeping(lasting=15)
        notifier.hold(False)
        assert sent == []  # the chat's own notice of the wait said it
        clock.advance(15)
        await clock.until_sleeping(lasting=15)
        assert sent == [("⏳ Working — 1 min — thinking", 0)]
    finally:
        notifier.disarm()


def notice(chat: RecordingAdapter):
    notices = [m for m in chat.messages if m.kind == "notice"]
    return notices[0] if notices else None


def read(chat: RecordingAdapter) -> str | None:
    return None if (shown := notice(chat)) is None else shown.text


async def waiting_after_a_notice(tmp_path, llm, gateways, chat: RecordingAdapter):
    """A gateway whose third message's turn showed its notice 15 s in, then its call took the server for down: the
    turn waits for the next probe, its chat told so. The probe is answered with a tool call; the call after it waits
    for the future returned."""
    server, clock = await llm(), FakeClock(autojump=False)
    failures, gates = [2], [asyncio.get_running_loop().create_future() for _ in range(2)]

    async def play(body) -> dict | None:
        if failures[0] > 0:
            failures[0] -= 1
            server.push_error(503, DOWN)
            return None
        if body["messages"][-1]["role"] == "tool":
            await gates[1]
            return {"text": "answered"}
        if not gates[0].done():  # the turn's first call, once its notice is up: its failure takes the server for down
            await gates[0]
            server.push_error(503, DOWN)
            return None
        return {"tool_calls": [{"name": "no_such_tool", "arguments": "{}"}]}  # the probe, answered

    server.respond_with(play)
    config = make_config(tmp_path, model=openai_model(server), agent={"gateway_notify_interval": 15},
                         display={"progress": "off"})
    gateway = await gateways(config, [chat], model=on(server, clock), clock=clock)
    assert [await ask(chat, gateway, f"question {n}") for n in range(2)] == [MODEL_FAILED] * 2
    await chat.say("question 2")
    await server.wait_for(lambda: len(server.requests) == 3)
    await clock.until_sleeping(lasting=15.0)
    clock.advance(15)
    await chat.wait_for(lambda: read(chat) == "⏳ Working — 15 s — thinking")
    gates[0].set_result(None)  # the server is down: the turn waits for it, its chat told so
    await chat.wait_for(lambda: chat.texts("interim"))
    await clock.until_sleeping(lasting=10.0)  # the wait for the next probe, sent by this turn
    return server, clock, gateway, gates[1]


async def test_a_notice_shown_reads_that_the_turn_waits_for_the_model_until_its_call_goes(tmp_path, llm, gateways):
    chat = RecordingAdapter()
    server, clock, gateway, answer = await waiting_after_a_notice(tmp_path, llm, gateways, chat)
    await chat.wait_for(lambda: notice(chat).edits and notice(chat).edits[-1] == f"{HELD} — 15 s")
    clock.advance(10)  # 25 s in: the probe is answered, but held until its answer is read
    clock.advance(5)  # 30 s: a notice is due, the turn still waiting or just back
    await server.wait_for(lambda: len(server.requests) == 5)
    await chat.wait_for(lambda: not notice(chat).edits[-1].startswith(HELD))
    answer.set_result(None)
    await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
    await settled(gateway)
    assert chat.texts("reply")[-1] == "answered"
    assert [m.kind for m in chat.messages[-3:]] == ["notice", "interim", "reply"]  # none sent anew
    states = [notice(chat).outbound.text, *notice(chat).edits]
    assert states[:2] == ["⏳ Working — 15 s — thinking", f"{HELD} — 15 s"]
    held = [state.startswith(HELD) for state in states[1:-1]]
    assert held == sorted(held, reverse=True) and not held[-1]  # waiting, then as before
    assert states[-2].startswith("⏳ Working — ") and states[-1] == "✓ Done in 30 s"


async def test_a_notice_stays_as_it_was_where_the_platform_cannot_edit(tmp_path, llm, gateways):
    chat = RecordingAdapter("webhook")
    server, clock, gateway, answer = await waiting_after_a_notice(tmp_path, llm, gateways, chat)
    clock.advance(10)  # the probe is answered
    await server.wait_for(lambda: len(server.requests) == 5)
    answer.set_result(None)
    await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
    await settled(gateway)
    assert [m.text for m in chat.messages if m.kind == "notice"] == ["⏳ Working — 15 s — thinking"]
    assert notice(chat).edits == []
