"""``/agents`` on Temporal lists what a child does now, not what Temporal said at the last look. The engine's activity
was refreshed only in the background, when read: after a quiet spell, ``/agents`` showed the activity of minutes
ago (``waiting for the model`` for a child long at work in a tool), and only the next ``/agents`` the current one.
It now asks Temporal and waits for the answer, at most `ACTIVITY_WAIT`; an activity it could not wait for says how
old it is."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from agent.models.scripted import ScriptedModel
from gateway.agents_command import AgentsCommand
from lifecycle import SubagentLaunchRequest
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.conftest import FakeClock
from tests.polling import until

QUIET = 300.0
"""How long nobody looks at the children: no `/agents`, no card."""


class _NoDelegations:
    """The ledger of a chat that made no background delegation: `/agents` lists its live children alone."""

    async def listing(self, session, limit):
        return []

    def latest(self, session, limit):
        return []


async def test_agents_after_a_quiet_spell_shows_the_tool_a_temporal_child_runs_now(make_env, queue):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "tool_calls": [{"name": "block"}]}})
    await worker(model)
    clock = FakeClock()
    engine = TemporalEngine(settings, client=client, clock=clock.monotonic)
    env = await make_env(engine=engine, clock=clock)
    view = env.service.host_view()
    agents = AgentsCommand(view, _NoDelegations(), clock)
    chat = SimpleNamespace(session_id="parent-1")
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="long job"))
    await asyncio.wait_for(model.reached("gate"), 10)
    await until(lambda: view.children("parent-1")[0].activity != "waiting for a worker")
    assert "waiting for the model" in await agents.run(chat, "")

    clock.advance(QUIET)
    model.release("gate")  # the model answers with a call of the tool `block`, which runs on until stopped
    workflow = client.get_workflow_handle(handle.subagent_id)

    async def in_the_tool() -> bool:
        pending = (await workflow.describe()).raw_description.pending_activities
        return bool(pending) and pending[-1].activity_id.endswith("tool-block")

    await until(in_the_tool, 10, every=0.02)
    # Not waited for (no time to wait): the last look, with how long ago Temporal told it.
    [child] = await view.children_now("parent-1", timeout=0)
    assert child.activity == "waiting for the model (as Temporal told it 5 min ago)", child.activity

    listed = await agents.run(chat, "")
    assert ", running block," in listed and "waiting for the model" not in listed, listed
