"""A turn's progress card, shown, reads that the turn waits for its model to come back while it does
(`gateway.progress_card.ProgressCard.hold`), its time refreshed at the card's pace, and reads as before once its call
goes again: it was stopped as it last read, "⏳ Thinking — 2 s" for up to ten minutes. One not shown yet is shown
meanwhile once a message waits behind the turn, saying so. The openai provider against a fake server, through the
gateway, on a fake clock."""

from __future__ import annotations

import asyncio

from agent.testing import FakeClock
from gateway.replies import MODEL_FAILED
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_model_down_wait import DOWN, on
from tests.gateway.wire import ask, openai_model

HELD = "⏳ Waiting for the model to come back"


def card(chat: RecordingAdapter):
    cards = [m for m in chat.messages if m.kind == "notice"]
    return cards[0] if cards else None


def read(chat: RecordingAdapter) -> str | None:
    return None if (shown := card(chat)) is None else shown.text.splitlines()[0]


async def test_a_card_shown_reads_that_the_turn_waits_for_the_model_until_its_call_goes(tmp_path, llm, gateways):
    server, clock = await llm(), FakeClock(autojump=False)
    failures, gates = [2], [asyncio.get_running_loop().create_future() for _ in range(2)]

    async def play(body) -> dict | None:
        if failures[0] > 0:
            failures[0] -= 1
            server.push_error(503, DOWN)
            return None
        last = body["messages"][-1]
        if last["role"] == "tool":
            await gates[1]
            return {"text": "answered"}
        if not gates[0].done():  # the turn's first call, once its card is up: its failure takes the server for down
            await gates[0]
            server.push_error(503, DOWN)
            return None
        return {"tool_calls": [{"name": "no_such_tool", "arguments": "{}"}]}  # the probe, answered

    server.respond_with(play)
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server), agent={"gateway_notify_interval": 15},
                         display={"progress": "card"})  # a card's due 2 s in, then refreshed every 15 s
    gateway = await gateways(config, [chat], model=on(server, clock), clock=clock)
    assert [await ask(chat, gateway, f"question {n}") for n in range(2)] == [MODEL_FAILED] * 2
    await chat.say("question 2")
    await server.wait_for(lambda: len(server.requests) == 3)
    await clock.until_sleeping(lasting=2.0)
    clock.advance(2)
    await chat.wait_for(lambda: read(chat) == "⏳ Thinking — 2 s")
    gates[0].set_result(None)  # the server is down: the turn waits for it, its chat told so
    await chat.wait_for(lambda: chat.texts("interim") and read(chat) == f"{HELD} — 2 s")
    await clock.until_sleeping(lasting=10.0)  # the wait for the next probe, sent by this turn
    failures[0] = 1
    clock.advance(10)  # the probe fails; the next is due 20 s later
    await server.wait_for(lambda: len(server.requests) == 4)
    await clock.until_sleeping(lasting=20.0)
    clock.advance(5)  # the card's refresh, 15 s after it last changed
    await chat.wait_for(lambda: read(chat) == f"{HELD} — 17 s")
    clock.advance(15)  # the probe is answered: the turn goes on
    await server.wait_for(lambda: len(server.requests) == 6)
    await chat.wait_for(lambda: not read(chat).startswith(HELD))
    shown = card(chat)
    gates[1].set_result(None)
    await chat.wait_for(lambda: len(chat.texts("reply")) == 3)
    await settled(gateway)
    assert chat.texts("reply")[-1] == "answered"
    headlines = [text.splitlines()[0] for text in (shown.outbound.text, *shown.edits)]
    assert headlines[:3] == ["⏳ Thinking — 2 s", f"{HELD} — 2 s", f"{HELD} — 17 s"]
    # The card's refresh, due as the probe is answered, may read the wait once more, just before.
    held = [headline.startswith(HELD) for headline in headlines[3:-1]]
    assert held == sorted(held, reverse=True) and not held[-1]
    assert headlines[-1] == "✓ Done in 32 s"
    assert len(chat.texts("interim")) == 1


async def test_a_card_not_shown_yet_shows_the_messages_waiting_behind_the_turn(tmp_path, llm, gateways):
    server, clock = await llm(), FakeClock(autojump=False)
    failures = [3]

    def play(body) -> dict | None:
        if failures[0] > 0:
            failures[0] -= 1
            server.push_error(503, DOWN)
            return None
        return {"text": f"answer to {body['messages'][-1]['content'].splitlines()[-1]}"}

    server.respond_with(play)
    chat = RecordingAdapter()
    config = make_config(tmp_path, model=openai_model(server), agent={"gateway_notify_interval": 15},
                         display={"progress": "card", "busy_input_mode": "queue"})
    gateway = await gateways(config, [chat], model=on(server, clock), clock=clock)
    assert [await ask(chat, gateway, f"question {n}") for n in range(2)] == [MODEL_FAILED] * 2
    await chat.say("question 2")
    await chat.wait_for(lambda: chat.texts("interim"))
    await clock.until_sleeping(lasting=10.0)  # the wait for the next probe
    await clock.until_sleeping(lasting=2.0)  # and the card's delay: the turn waited at once
    clock.advance(2)
    assert card(chat) is None  # the chat's notice says it all
    await chat.say("question 3")
    await chat.wait_for(lambda: card(chat) is not None)
    assert card(chat).text == f"{HELD} — 2 s\n⋯ 1 more message waiting, answered after this"
    clock.advance(8)  # the probe is answered
    await chat.wait_for(lambda: len(chat.texts("reply")) == 4)
    await settled(gateway)
    assert chat.texts("reply")[2:] == ["answer to question 2", "answer to question 3"]
