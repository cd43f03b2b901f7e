"""docs/lifecycle.md "The parent": a launch from a turn being stopped is refused as one outside a turn. A plugin's
blocking tool runs on in its thread after ``/stop`` has interrupted its turn and stopped the session's children;
a launch it made before the turn had wound down passed, and its child ran on after "Stopped", out of the stop's
reach, for a turn that would never read its handle."""

from __future__ import annotations

import asyncio
import threading

from agent import Tool
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config
from lifecycle import SubagentLaunchRequest, SubagentLifecycle, SubagentLifecycleError


async def test_a_launch_a_plugin_tool_makes_after_stop_interrupted_its_turn_is_refused(tmp_path):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "start_job", "arguments": {}}]}, {"text": "started"}]],
                           "leaf": [[{"wait": "dig"}, {"text": "found it"}]]})
    host = AgentHost(make_config(tmp_path), model=model)
    service = SubagentLifecycle(host.lifecycle)
    entered, go, done = threading.Event(), threading.Event(), threading.Event()
    launched = []

    def start_job(args, ctx) -> str:  # a plugin's blocking tool, in a worker thread
        entered.set()
        go.wait(5)
        try:
            launched.append(service.launch(SubagentLaunchRequest(goal="dig")))
        except SubagentLifecycleError as exc:
            launched.append(exc)
        finally:
            done.set()
        return "started"

    async def winding_down(**event) -> None:
        # The window, held open: the turn's tool call cancelled by the stop, the turn not ended yet.
        go.set()
        await asyncio.to_thread(done.wait, 5)

    host.tools.register(Tool("start_job", "Starts a job.", {"type": "object"}, start_job, toolset="jobs",
                             owner="jobs_plugin"))
    host.hooks.register("turn_end", winding_down)
    gateway = Gateway(host, [chat])
    try:
        await gateway.start()
        await chat.say("start the job")
        await asyncio.to_thread(entered.wait, 5)
        await chat.say("/stop")
        await asyncio.to_thread(done.wait, 5)
        await chat.wait_for(lambda: any(t.startswith("Stopped") for t in chat.texts()))
        (outcome,) = launched
        assert isinstance(outcome, SubagentLifecycleError), outcome
        assert (str(outcome), outcome.code) == ("No active parent session is available.", "NO_PARENT")
        assert gateway.host.lifecycle.host_view().sessions_with_children() == ()
    finally:
        go.set()
        await gateway.stop(grace=0)
