"""A background delegation's card taken up again after a restart that relaunched its children
(`lifecycle.on_restart: resume`): its headline's time and its done line's count from one start, the dispatch,
as they do for a card whose children ran on across the restart."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_progress_card import CARD, background_parent, shown_card

SECTIONS = {"display": {**CARD, "interim_assistant_messages": True}, "lifecycle": {"on_restart": "resume"},
            "agent": {"gateway_notify_interval": 180, "toolsets": ["file"]}}


async def test_a_relaunched_cards_headline_and_done_line_count_from_the_dispatch(tmp_path, gateways):
    # Before, the headline counted from the relaunch (`— 3 s`, after it had read `— 7 s` before the restart)
    # while the done line counted from the dispatch (`Done in 10 s`): the card jumped back, then contradicted itself.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "forever"}})
    gateway = await gateways(make_config(tmp_path, **SECTIONS), [chat], model=model, clock=clock)
    card = await shown_card(chat, clock, model, "forever")  # 3 s after the dispatch
    for _ in range(2):
        await clock.until_sleeping(lasting=2)
        clock.advance(2)
    await chat.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 0 of 2 done — 7 s\n"))
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    chat2.messages, chat2._ids = chat.messages, chat._ids  # the same chat, its card still showing
    model2 = ScriptedModel({"parent": background_parent, "leaf": lambda r: {"wait": "again", "text": "found"}})
    gateway2 = await gateways(make_config(tmp_path, **SECTIONS), [chat2], model=model2, clock=clock)
    await model2.reached("again")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat2.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 0 of 2 done — 10 s\n"))
    model2.release("again")
    await chat2.wait_for(lambda: card.text.startswith("✓ Done in"))
    assert card.text == "✓ Done in 10 s · 2 subagents"  # the headline's time, up to the end
    clock.advance(600)
    await settled(gateway2)
    assert chat2.kinds() == ["reply", "notice", "completion"]
