"""docs/lifecycle.md "The parent": a launch from a turn being stopped is refused as one outside a turn. A plugin's
blocking tool runs on in its thread after ``/stop`` has interrupted its turn and stopped the session's children;
a launch it made before the turn had wound down passed, and its child ran on after "Stopped", out of the stop's
reach, for a turn that would never read its handle. A turn superseded by the chat's next message
(``display.busy_input_mode: interrupt``, the default) is interrupted the same way, hard, but is no stop: its
children run on, and so does one it launches as it winds down (refused NO_PARENT on 3b17d564: a supersede's
interrupt does not end the turn's work, `AgentSession.interrupt`'s ``ends_work``)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from agent import Tool
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config
from lifecycle import SubagentLaunchRequest, SubagentLifecycle, SubagentLifecycleError


@dataclass
class Window:
    """A plugin's blocking tool that launches once the turn's interrupt has come, the turn held open meanwhile."""

    gateway: Gateway
    chat: RecordingAdapter
    entered: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    launched: list = field(default_factory=list)


@asynccontextmanager
async def launching_after_the_interrupt(tmp_path, then: list[dict]) -> AsyncIterator[Window]:
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "start_job", "arguments": {}}]}, {"text": "started"}],
                                      then],
                           "leaf": [[{"wait": "dig"}, {"text": "found it"}]]})
    host = AgentHost(make_config(tmp_path), model=model)
    service = SubagentLifecycle(host.lifecycle)
    window = Window(Gateway(host, [chat]), chat)

    def start_job(args, ctx) -> str:  # a plugin's blocking tool, in a worker thread
        window.entered.set()
        window.go.wait(5)
        try:
            window.launched.append(service.launch(SubagentLaunchRequest(goal="dig")))
        except SubagentLifecycleError as exc:
            window.launched.append(exc)
        finally:
            window.done.set()
        return "started"

    async def winding_down(**event) -> None:
        # The window, held open: the turn's tool call cancelled by the interrupt, the turn not ended yet.
        window.go.set()
        await asyncio.to_thread(window.done.wait, 5)

    host.tools.register(Tool("start_job", "Starts a job.", {"type": "object"}, start_job, toolset="jobs",
                             owner="jobs_plugin"))
    host.hooks.register("turn_end", winding_down)
    try:
        await window.gateway.start()
        await chat.say("start the job")
        await asyncio.to_thread(window.entered.wait, 5)
        yield window
    finally:
        window.go.set()
        await window.gateway.stop(grace=0)


async def test_a_launch_a_plugin_tool_makes_after_stop_interrupted_its_turn_is_refused(tmp_path):
    async with launching_after_the_interrupt(tmp_path, [{"text": "unused"}]) as window:
        await window.chat.say("/stop")
        await asyncio.to_thread(window.done.wait, 5)
        await window.chat.wait_for(lambda: any(t.startswith("Stopped") for t in window.chat.texts()))
        (outcome,) = window.launched
        assert isinstance(outcome, SubagentLifecycleError), outcome
        assert (str(outcome), outcome.code) == ("No active parent session is available.", "NO_PARENT")
        assert window.gateway.host.lifecycle.host_view().sessions_with_children() == ()


async def test_a_launch_from_a_turn_superseded_by_the_next_message(tmp_path):
    async with launching_after_the_interrupt(tmp_path, [{"text": "second answer"}]) as window:
        await window.chat.say("actually, something else")
        await asyncio.to_thread(window.done.wait, 5)
        await window.chat.wait_for(lambda: any("second answer" in t for t in window.chat.texts()))
        (outcome,) = window.launched
        assert not isinstance(outcome, SubagentLifecycleError), outcome
