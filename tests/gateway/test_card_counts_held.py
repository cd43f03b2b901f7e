"""The running turn's progress card counts every message waiting behind it: those held in the store beyond what a
session keeps in memory (`session_registry.QUEUED`) too."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from gateway import session_registry
from tests.gateway.test_progress_card import start


async def test_the_card_counts_the_messages_held_in_the_store_as_waiting(tmp_path, gateways, monkeypatch):
    monkeypatch.setattr(session_registry, "QUEUED", 2)
    model = ScriptedModel({"parent": lambda request: {"wait": "think", "text": "done"}})
    chat, clock, gateway = await start(tmp_path, gateways, model, busy_input_mode="queue")
    await chat.say("first")
    await model.reached("think")
    for n in range(5):
        await chat.say(f"then {n}")
    session = gateway.sessions.find(chat.name, "c1", None)
    assert (len(session.queue), session.held) == (2, 3)
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["notice"])
    # Before: "⋯ 2 more messages waiting", the three held in the store left out.
    assert chat.messages[0].text.splitlines()[-1] == "⋯ 5 more messages waiting, answered after this"
