"""A background delegation's card taken up again after a restart that relaunched its unfinished children
(`lifecycle.on_restart: resume`) still lists the subagents that had finished before the restart."""

from __future__ import annotations

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.progress_card import CHILD_INDENT
from gateway.testing import RecordingAdapter, make_config, settled
from tests.gateway.test_cards_relaunch import SECTIONS
from tests.gateway.test_progress_card import background_parent, shown_card


def _leaf(gate: str):
    def step(request):
        if request.metadata.get("goal") == "a":
            return {"text": "found a"}
        return {"wait": gate, "text": "found b"}
    return step


async def test_a_relaunched_card_still_lists_the_subagents_that_finished_before_the_restart(tmp_path, gateways):
    # Before, the card read "1 of 2 done" over the relaunched subagent's line alone: which one was done,
    # and how it ended, the chat could no longer tell (the card before the restart had said).
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": background_parent, "leaf": _leaf("forever")})
    gateway = await gateways(make_config(tmp_path, **SECTIONS), [chat], model=model, clock=clock)
    card = await shown_card(chat, clock, model, "forever")
    await clock.until_sleeping(lasting=2)
    clock.advance(2)
    await chat.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 1 of 2 done — 5 s\n"))
    assert f"{CHILD_INDENT}✓ a — succeeded" in card.text
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    chat2.messages, chat2._ids = chat.messages, chat._ids  # the same chat, its card still showing
    model2 = ScriptedModel({"parent": background_parent, "leaf": _leaf("again")})
    gateway2 = await gateways(make_config(tmp_path, **SECTIONS), [chat2], model=model2, clock=clock)
    await model2.reached("again")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat2.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 1 of 2 done — 8 s\n"))
    lines = card.text.splitlines()[1:]
    assert [line.split(" — ")[0] for line in lines] == [f"{CHILD_INDENT}✓ a", f"{CHILD_INDENT}▸ b"], card.text
    model2.release("again")
    await chat2.wait_for(lambda: card.text.startswith("✓ Done in"))
    clock.advance(600)
    await settled(gateway2)


def _three(request):
    last = request.messages[-1]
    if last["role"] == "user" and str(last.get("content")).startswith("[Background delegation results]"):
        return {"text": "here is what they found"}
    if last["role"] == "user":
        goals = [{"goal": goal} for goal in "abc"]
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": goals}}]}
    return {"text": "on it"}


def _each(gate: str):
    def step(request):
        goal = request.metadata.get("goal")
        return {"wait": gate if goal == "c" else f"g{goal}", "text": f"found {goal}"}
    return step


async def test_a_relaunched_card_lists_those_that_finished_before_in_the_order_it_listed_them(tmp_path, gateways):
    # Before, in the order of the tasks: `b` finished before `a`, and the restart swapped their lines over.
    chat, clock = RecordingAdapter(), FakeClock(autojump=False)
    model = ScriptedModel({"parent": _three, "leaf": _each("forever")})
    gateway = await gateways(make_config(tmp_path, **SECTIONS), [chat], model=model, clock=clock)
    await chat.say("look into a, b and c")
    for gate in ("forever", "ga", "gb"):
        await model.reached(gate)
    model.release("gb")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat.wait_for(lambda: chat.kinds() == ["reply", "notice"])
    card = chat.messages[1]
    model.release("ga")
    await clock.until_sleeping(lasting=2)
    clock.advance(2)
    await chat.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 2 of 3 done — 5 s\n"))
    before = [line.split(" — ")[0] for line in card.text.splitlines()[1:]]
    assert before == [f"{CHILD_INDENT}✓ b", f"{CHILD_INDENT}✓ a", f"{CHILD_INDENT}▸ c"], card.text
    await gateway.stop(grace=0)

    chat2 = RecordingAdapter()
    chat2.messages, chat2._ids = chat.messages, chat._ids  # the same chat, its card still showing
    model2 = ScriptedModel({"parent": _three, "leaf": _each("again")})
    gateway2 = await gateways(make_config(tmp_path, **SECTIONS), [chat2], model=model2, clock=clock)
    await model2.reached("again")
    await clock.until_sleeping(lasting=3)
    clock.advance(3)
    await chat2.wait_for(lambda: card.text.startswith("⏳ Waiting for subagents: 2 of 3 done — 8 s\n"))
    assert [line.split(" — ")[0] for line in card.text.splitlines()[1:]] == before, card.text
    model2.release("again")
    await chat2.wait_for(lambda: card.text.startswith("✓ Done in"))
    clock.advance(600)
    await settled(gateway2)
