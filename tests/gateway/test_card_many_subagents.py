"""A progress card of more subagents than it has lines: it shows those at work, not only the latest
launched (still waiting for a slot), and counts the ones it leaves out."""

from __future__ import annotations

import asyncio

from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.progress_card import CHILD_INDENT, MAX_LINES
from gateway.testing import RecordingAdapter, make_config, settled

CARD = {"progress": "card", "progress_delay": 3, "interim_assistant_messages": False}  # inline: the turn's card


def fan_out(request: ModelRequest) -> dict:
    if request.messages[-1]["role"] == "user":
        tasks = [{"goal": f"task {i}"} for i in range(30)]
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": tasks}}]}
    return {"text": "all done"}


async def test_a_fan_out_past_the_running_limit_shows_the_subagents_at_work_and_counts_the_rest(tmp_path, gateways):
    # Thirty tasks, ten at a time (`lifecycle.max_running`): by launch order alone the card's lines were
    # the last eight, all `waiting`, and none of the ten at work showed until all but a few had finished.
    model = ScriptedModel({"parent": fan_out, "leaf": lambda r: {"wait": "go", "text": "ok"}})
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    config = make_config(tmp_path, display=CARD, agent={"gateway_notify_interval": 180},
                         delegation={"max_concurrent_children": 30}, lifecycle={"max_running": 10})
    gateway = await gateways(config, [chat], model=model, clock=clock)
    await chat.say("look into thirty things")
    async with asyncio.timeout(5):  # the ten at work have all asked their model
        while sum(r.role == "leaf" for r in model.requests) < 10:
            await asyncio.sleep(0.001)
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: "notice" in chat.kinds())
    lines = chat.messages[chat.kinds().index("notice")].text.splitlines()
    assert lines[0].startswith("⏳ Waiting for subagents: 0 of 30 done")
    assert lines[1:] == [f"{CHILD_INDENT}▸ task {i} — running, 0 s" for i in range(3, 10)] + [
        f"{CHILD_INDENT}… and 23 more"]
    assert len(lines) == 1 + MAX_LINES
    model.release("go")
    await chat.wait_for(lambda: chat.texts()[-1:] == ["all done"])
    await settled(gateway)
