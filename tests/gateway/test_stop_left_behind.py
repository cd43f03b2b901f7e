"""A stop while a plugin's async code ignores its cancellation: the stop still ends within its
bound, names what it left behind, and leaves it to the next start as a crash would."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agent import Tool
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.left_behind import STUCK_WAIT_SECONDS, cancel_within, end_the_rest
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import SubagentState

GRACE = 0.2
BOUND = GRACE + 3 * STUCK_WAIT_SECONDS + 2.0
"""The stop's grace, a second past it for each kind of work left behind, and slack for a loaded machine."""


async def swallows_cancellation(let_go: asyncio.Event) -> None:
    """Plugin code that catches every cancellation and carries on, until the test lets it go."""
    while not let_go.is_set():
        try:
            await let_go.wait()
        except asyncio.CancelledError:
            continue


class Stubborn:
    """A plugin's async tool that swallows every cancellation until the test lets it go."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.let_go = asyncio.Event()

    async def __call__(self, args, ctx) -> str:
        self.started.set()
        await swallows_cancellation(self.let_go)
        return "done at last"

    def tool(self) -> Tool:
        return Tool("stubborn", "Never gives in.", {"type": "object"}, self, toolset="stubborn", owner="stubborn_plugin")


@pytest.fixture
async def stubborn():
    tool = Stubborn()
    yield tool
    tool.let_go.set()  # what was left behind ends before the test's loop closes
    await asyncio.sleep(0)


async def start(config, script, stubborn: Stubborn) -> tuple[Gateway, RecordingAdapter]:
    chat = RecordingAdapter()
    host = AgentHost(config, model=ScriptedModel(script))
    host.tools.register(stubborn.tool())
    gateway = Gateway(host, [chat])
    await gateway.start()
    return gateway, chat


CALL_STUBBORN = [{"tool_calls": [{"name": "stubborn", "arguments": {}}]}, {"text": "the tool answered"}]


async def test_a_turn_whose_tool_ignores_its_cancellation_is_left_behind_and_runs_again_after_the_next_start(
        tmp_path, stubborn, caplog):
    config = make_config(tmp_path)
    gateway, chat = await start(config, {"parent": [CALL_STUBBORN]}, stubborn)
    await chat.say("call the stubborn tool")
    await stubborn.started.wait()
    async with asyncio.timeout(BOUND):
        await gateway.stop(grace=GRACE)
    left = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and "left behind" in r.getMessage()]
    assert len(left) == 1 and "tool stubborn ignores cancellation" in left[0], left
    assert chat.texts() == []

    stubborn.let_go.set()  # the next process's tool answers
    gateway, chat = await start(config, {"parent": [CALL_STUBBORN]}, stubborn)
    try:
        await chat.wait_for(lambda: chat.texts())
        assert chat.texts() == ["the tool answered"]
    finally:
        await gateway.stop(grace=0)


async def test_a_child_whose_tool_ignores_its_cancellation_is_left_behind_and_ended_interrupted_by_the_next_start(
        tmp_path, stubborn, caplog):
    config = make_config(tmp_path, delegation={"gateway_mode": "background"})
    script = {"parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "be stubborn"}}]},
                          {"text": "on it"}]],
              "leaf": [CALL_STUBBORN]}
    gateway, chat = await start(config, script, stubborn)
    await chat.say("delegate it")
    await stubborn.started.wait()
    await chat.wait_for(lambda: "on it" in chat.texts())
    [child] = gateway.host.children.children(gateway.sessions.find("chat", "c1", None).session_id)
    async with asyncio.timeout(BOUND):
        await gateway.stop(grace=GRACE)
    left = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR and "left behind" in r.getMessage()]
    assert left == [f"child {child.subagent_id} did not end within 1 s of its stop (a tool or model call of it "
                    "ignores cancellation): left behind, the next start ends it as interrupted"]

    gateway, chat = await start(config, {"parent": [[{"text": "here is what happened"}]]}, stubborn)
    try:
        await settled(gateway)
        found = await gateway.host.children.lookup([child.subagent_id])
        assert found[child.subagent_id].state is SubagentState.INTERRUPTED
    finally:
        await gateway.stop(grace=0)


async def test_cancel_within_returns_only_what_ignores_its_cancellation():
    let_go = asyncio.Event()

    async def failing():
        await asyncio.sleep(0)
        raise RuntimeError("its own failure, taken so it is not reported as never retrieved")

    polite = asyncio.ensure_future(asyncio.Event().wait())
    fails = asyncio.ensure_future(failing())
    await asyncio.sleep(0)
    held = asyncio.ensure_future(swallows_cancellation(let_go))
    await asyncio.sleep(0)
    assert await cancel_within([polite, held, fails], 0.1) == [held]
    assert polite.cancelled()
    let_go.set()
    await held


async def test_end_the_rest_names_each_task_left_and_where_it_waits(caplog):
    let_go = asyncio.Event()
    held = asyncio.create_task(swallows_cancellation(let_go), name="plugin-work")
    polite = asyncio.create_task(asyncio.Event().wait())
    await asyncio.sleep(0)
    assert await end_the_rest(0.1) == [held]
    assert polite.cancelled()
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert line.startswith("task plugin-work in swallows_cancellation (") and "test_stop_left_behind.py:" in line
    assert line.endswith("did not end within 0 s of its cancellation (it ignores cancellation): the process ends "
                         "without it")
    let_go.set()
    await held
