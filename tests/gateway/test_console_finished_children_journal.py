"""The console's running work reads forgotten finished children back from the lifecycle journal: what it does when
that journal cannot be read, and what those reads cost each refresh."""

from __future__ import annotations

import asyncio
from typing import Any

import gateway.console.snapshot as snapshot_module
from agent import ModelRequest
from agent.models.scripted import ScriptedModel
from gateway.console.snapshot import ConsoleView
from gateway.testing import RecordingAdapter, make_config
from lifecycle import HostView
from tests.gateway.test_console_sick_store import allow_reads, refuse_reads

GOALS = [f"item {i}" for i in range(14)]
BUSY = {"delegation": {"gateway_mode": "background", "max_concurrent_children": 20},
        "lifecycle": {"max_running": 20}}


def gated(request: ModelRequest) -> dict[str, Any]:
    return {"wait": request.metadata["goal"], "text": "found"}


async def busy_turn(tmp_path, gateways) -> tuple[Any, ConsoleView, str]:
    """A chat's background turn with 14 children, 13 finished (3 more than the lifecycle remembers), 1 running;
    a console view made before they ended. No snapshot taken yet."""
    chat = RecordingAdapter()
    tasks = {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in GOALS]}}]}
    model = ScriptedModel({"parent": [[tasks, {"text": "on it"}], [{"text": "results are in"}]], "leaf": gated})
    gateway = await gateways(make_config(tmp_path, **BUSY), [chat], model=model)
    view = ConsoleView(gateway, gateway.recent_errors)
    await chat.say("compare", chat="c1")
    for goal in GOALS:
        await model.reached(goal)
    [session] = list(gateway.sessions)
    for goal in GOALS[:-1]:
        model.release(goal)
    async with asyncio.timeout(5):
        while len(gateway.host.children.children(session.session_id)) > 1 or len(
                gateway.host.children.recent(session.session_id)) < 10:
            await asyncio.sleep(0.01)
    return (gateway, model), view, session.session_id


async def test_an_unreadable_journal_leaves_the_running_work_shown_from_memory(tmp_path, gateways) -> None:
    # The journal turns SQLite's refusal into a JournalError, not a sqlite3.Error: the whole section was left
    # out ("work" unread), the running child and its Stop button with it, though memory still holds them.
    (gateway, model), view, _ = await busy_turn(tmp_path, gateways)
    refuse_reads(gateway.host.database)
    try:
        sick = await view.snapshot()
    finally:
        allow_reads(gateway.host.database)
    assert "work" not in sick["unread"]
    [work] = sick["work"]
    assert [c["goal"] for c in work["children"] if c["live"]] == [GOALS[-1]]
    assert sum(not c["live"] for c in work["children"]) >= 10
    well = await view.snapshot()  # read again once it can be: the forgotten ones too
    assert sum(not c["live"] for c in well["work"][0]["children"]) == len(GOALS) - 1
    model.release(GOALS[-1])


async def test_finished_children_once_read_back_are_not_read_from_the_journal_at_each_refresh(
        tmp_path, gateways, monkeypatch) -> None:
    # A finished child is final: read once. The ones read back for the tree (an orchestrator's, which no delegation
    # lists) shared their cache with the delegations' tasks: together over `FINISHED_CACHE` (first in, first out),
    # each refresh read them all again, one SQLite read each on the event loop, every second for every open page.
    # (The cap made small here: the same happens at 2,048 with a few busy orchestrators shown and the delegations.)
    monkeypatch.setattr(snapshot_module, "FINISHED_CACHE", 14)  # the earlier delegation's 14 finished tasks fit
    chat = RecordingAdapter()
    others = [f"other {i}" for i in range(14)]

    def orchestrator(request: ModelRequest) -> dict[str, Any]:
        if request.messages[-1]["role"] == "tool":
            return {"text": "planned"}
        return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in GOALS]}}]}

    def leaf(request: ModelRequest) -> dict[str, Any]:
        return {"text": "done"} if request.metadata["goal"] in others else gated(request)

    earlier = {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in others]}}]}
    plan = {"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "plan", "role": "orchestrator"}}]}
    model = ScriptedModel({"parent": [[earlier, {"text": "on it"}], [{"text": "those are in"}],
                                      [plan, {"text": "planning"}], [{"text": "plan is in"}]],
                           "orchestrator": orchestrator, "leaf": leaf})
    gateway = await gateways(make_config(tmp_path, **{**BUSY, "delegation": {**BUSY["delegation"],
                                                                             "max_spawn_depth": 2}}),
                             [chat], model=model)
    view = ConsoleView(gateway, gateway.recent_errors)
    await chat.say("compare", chat="c1")
    await chat.wait_for(lambda: "those are in" in chat.texts())
    await chat.say("plan it", chat="c1")
    for goal in GOALS:
        await model.reached(goal)
    for goal in GOALS[:-1]:
        model.release(goal)
    read: list[str] = []
    lookup = HostView.lookup

    async def counted(self: HostView, ids: Any) -> Any:
        read.extend(ids)
        return await lookup(self, ids)

    monkeypatch.setattr(HostView, "lookup", counted)

    def leaves(s: dict[str, Any]) -> list[dict[str, Any]]:
        return [leaf for w in s["work"] for c in w["children"] for leaf in c["children"]]

    async with asyncio.timeout(5):
        first = await view.snapshot()
        while sum(not c["live"] for c in leaves(first)) < len(GOALS) - 1:
            await asyncio.sleep(0.01)
            first = await view.snapshot()
    assert len(first["delegations"]) == 2
    read.clear()
    again = await view.snapshot()
    assert leaves(again) == leaves(first)
    assert again["delegations"] == first["delegations"]
    orchestrator_id = again["work"][0]["children"][0]["id"]
    assert read == [orchestrator_id]  # the delegation's running task alone: the finished ones are final
    model.release(GOALS[-1])
