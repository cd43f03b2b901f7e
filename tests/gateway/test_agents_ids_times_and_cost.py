"""``/agents``: ids typed in another case, times read as the progress card reads them, a clear refusal to
retry a child still at work, and a listing that cuts only the lines it shows."""

from __future__ import annotations

import dataclasses
import re

import gateway.agents_command as agents_command
from agent import new_id
from agent.models.scripted import ScriptedModel
from gateway.agents_command import SHOWN, _line
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import ChildSnapshot, SubagentState
from tests.gateway.test_agents_command import command, delegating, live

SECTIONS = {"display": {"interim_assistant_messages": True}, "delegation": {"max_concurrent_children": SHOWN + 8}}


async def two_waiting(tmp_path, gateways):
    model = ScriptedModel({"parent": delegating([{"goal": "first"}, {"goal": "second"}]),
                           "leaf": lambda request: {"wait": "go", "text": "done"}})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **SECTIONS), [chat], model=model)
    await chat.say("two things")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("go")
    return model, chat, gateway, live(gateway)[0]


async def test_an_id_typed_in_capitals_finds_the_child(tmp_path, gateways):
    # "No subagent 'SA-…' in this session": ids are lower-case, and a capitalised one matched nothing.
    model, chat, gateway, first = await two_waiting(tmp_path, gateways)
    assert (await command(chat, f"/agents log {first.subagent_id.upper()}")).startswith(
        f"{first.subagent_id} — first — running")
    assert (await command(chat, f"/agents log {first.subagent_id[-6:].upper()}")).startswith(first.subagent_id)
    assert await command(chat, "/agents log SA-NOPE") == "No subagent 'SA-NOPE' in this session: /agents lists them."
    model.release("go")
    await settled(gateway)


async def test_retry_of_a_child_still_at_work_says_it_has_not_ended(tmp_path, gateways):
    # It read "Nothing to retry: sa-… running.", as if the id were running something.
    model, chat, gateway, first = await two_waiting(tmp_path, gateways)
    assert await command(chat, f"/agents retry {first.subagent_id}") == (
        f"Nothing to retry: {first.subagent_id} has not ended yet (running).")
    model.release("go")
    await settled(gateway)


def test_an_hour_long_child_reads_in_minutes_and_a_finished_one_without_its_activity():
    running = ChildSnapshot("sa-1", "s-1", "t-1", "look", "leaf", SubagentState.RUNNING, 100.0, 100.0, None,
                            "waiting for the model", None, None, "m")
    assert _line(running, 100.0 + 5430) == "• sa-1 — look — running, 90 min 30 s, waiting for the model, model m"
    done = dataclasses.replace(running, state=SubagentState.SUCCEEDED, completed_at=190.0, activity="finished",
                               summary="found it")
    assert _line(done, 5000.0) == "• sa-1 — look — succeeded, 1 min 30 s, model m: found it"


async def test_a_listing_cuts_and_masks_only_the_children_it_shows(tmp_path, gateways, monkeypatch):
    # Every child of the latest delegations had its goal and summary masked and cut, listed or not: up to a
    # millisecond each for a long summary, on the loop every chat shares, for twelve lines shown.
    model = ScriptedModel({"parent": delegating([{"goal": f"look at part {i}"} for i in range(SHOWN + 8)]),
                           "leaf": lambda request: {"text": "it holds up " * 2000}})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **SECTIONS), [chat], model=model)
    await chat.say("look at all the parts")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await settled(gateway)
    cut = []
    shown = agents_command._shown
    monkeypatch.setattr(agents_command, "_shown", lambda text, limit: cut.append(text) or shown(text, limit))
    lines = (await command(chat, "/agents")).splitlines()
    assert sum(line.startswith("• sa-") for line in lines) == SHOWN
    assert lines[-2] == "… and 8 more: 8 succeeded"
    assert len(cut) == 2 * SHOWN  # a goal and a summary for each line shown, none for those counted
    cut.clear()
    await command(chat, "/agents all")  # long: the outbox splits it, and its first part comes first
    assert len(cut) == 2 * (SHOWN + 8)


async def test_a_child_of_an_earlier_delegation_than_the_latest_twenty_is_still_found(tmp_path, gateways):
    # /agents retry read only the latest 20 delegations: the id a restart report or an earlier listing gave, with
    # more delegations since, was "No subagent … in this session", though the retry itself looks 100 back.
    attempts = []

    def child(request):
        attempts.append(request)
        # Each delegation's child fails (an empty answer): which runs first is the loop's to say, and the retry,
        # the 23rd child, succeeds.
        return {"text": "done" if len(attempts) > 22 else ""}

    model = ScriptedModel({"parent": delegating([{"goal": "a job"}]), "leaf": child})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **SECTIONS), [chat], model=model)
    for i in range(22):
        await chat.say(f"job {i}")
        await chat.wait_for(lambda: chat.texts().count("on it") == i + 1)
    await settled(gateway)
    (first, *_) = gateway.ledger.latest(next(iter(gateway.sessions)), 30)[::-1]
    (task,) = first.tasks
    answer = await command(chat, f"/agents retry {task.subagent_id}")
    assert answer.startswith(f"Retrying {task.subagent_id} as sa-"), answer
    await settled(gateway)


async def test_a_whole_id_that_is_not_the_chats_never_acts_on_the_child_whose_id_it_begins(tmp_path, gateways):
    # Ids count up in hex, so a whole id (another chat's child's, a forgotten one's) begins later ones: taken
    # as a part of one, "/agents stop sa-…56" stopped this chat's sa-…56c, a child nobody named.
    for _ in range(16):  # run alone, the child's count could be one hex digit: its id less one, no whole id
        new_id()
    model = ScriptedModel({"parent": delegating([{"goal": "only one"}]),
                           "leaf": lambda request: {"wait": "go", "text": "done"}})
    chat = RecordingAdapter()
    gateway = await gateways(make_config(tmp_path, **SECTIONS), [chat], model=model)
    await chat.say("one thing")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("go")
    (child,) = live(gateway)
    other = child.subagent_id[:-1]  # a whole id too: the one counted sixteen before it
    assert re.fullmatch(r"sa-[0-9a-f]{13,}", other)
    for action in ("stop", "log", "retry"):
        answer = await command(chat, f"/agents {action} {other}")
        assert answer == f"No subagent {other!r} in this session: /agents lists them."
    assert [c.subagent_id for c in live(gateway)] == [child.subagent_id]
    assert (await command(chat, f"/agents log {child.subagent_id[-6:]}")).startswith(child.subagent_id)  # a part
    model.release("go")
    await settled(gateway)
