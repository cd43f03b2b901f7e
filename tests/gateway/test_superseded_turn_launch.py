"""Review of 3b17d564: `ActiveTurn.stopping` refuses a launch from a turn being stopped. A turn superseded by the
chat's next message (``display.busy_input_mode: interrupt``, the default) is interrupted the same way, hard, but is
no stop: the session's children run on, reachable by /stop, and a launch made a moment before it runs on with them.
On 3b17d564 a launch the same tool makes a moment after was refused NO_PARENT (it passed before the commit): a
supersede's interrupt does not end the turn's work (`AgentSession.interrupt`'s ``ends_work``)."""

from __future__ import annotations

import asyncio
import threading

from agent import Tool
from agent.models.scripted import ScriptedModel
from gateway.app import Gateway
from gateway.host import AgentHost
from gateway.testing import RecordingAdapter, make_config
from lifecycle import SubagentLaunchRequest, SubagentLifecycle, SubagentLifecycleError


async def test_a_launch_from_a_turn_superseded_by_the_next_message(tmp_path):
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "start_job", "arguments": {}}]}, {"text": "started"}],
                                      [{"text": "second answer"}]],
                           "leaf": [[{"wait": "dig"}, {"text": "found it"}]]})
    host = AgentHost(make_config(tmp_path), model=model)
    service = SubagentLifecycle(host.lifecycle)
    entered, go, done = threading.Event(), threading.Event(), threading.Event()
    launched = []

    def start_job(args, ctx) -> str:
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
        await chat.say("actually, something else")
        await asyncio.to_thread(done.wait, 5)
        await chat.wait_for(lambda: any("second answer" in t for t in chat.texts()))
        (outcome,) = launched
        assert not isinstance(outcome, SubagentLifecycleError), outcome
    finally:
        go.set()
        await gateway.stop(grace=0)
