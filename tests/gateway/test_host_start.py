"""`AgentHost.start`: children that end while the lifecycle service starts reach the plugins' hooks,
which load only once the service has started (a plugin may use it from `register`)."""

from __future__ import annotations

import uuid

from agent.testing import inside_turn
from gateway.host import AgentHost
from gateway.testing import make_config
from lifecycle import SubagentLaunchRequest, SubagentState
from tests.lifecycle.test_temporal import crash
from tests.plugin_modules import plugin_module

S = SubagentState

STOP_LOG = """
    ended = []

    def register(ctx):
        ctx.register_hook("subagent_stop", lambda **e: ended.append((e["child_session_id"], e["child_status"])))
"""


async def test_a_child_stopped_before_temporal_had_it_reaches_a_plugins_subagent_stop_at_the_next_start(
        tmp_path, monkeypatch, temporal_server):
    """The journal kept the child's job and its stop, and the gateway was killed before the workflow's start
    was sent: the next start ends the child without starting it, before the plugins have loaded; its end
    is held until they have."""
    plugin = plugin_module(tmp_path, monkeypatch, "stop_log_plugin", STOP_LOG)
    temporal = {"engine": "temporal", "temporal": {"address": temporal_server.address,
                                                   "task_queue": f"host-start-{uuid.uuid4().hex[:10]}"}}
    first = AgentHost(make_config(tmp_path, lifecycle=temporal))
    await first.start()
    parent = first.new_session(session_id="parent-1")
    with inside_turn(parent, "turn-1"):
        handle = await first.lifecycle.launch(SubagentLaunchRequest(goal="stopped at once"))
        await first.lifecycle.cancel(handle, "changed my mind")  # nothing awaited in between: not started yet
    crash(first.lifecycle.engine)
    await first.lifecycle.journal.sync()  # the row keeping the stop
    await first.close()

    second = AgentHost(make_config(tmp_path, lifecycle=temporal, plugins=["stop_log_plugin"]))
    await second.start()
    try:
        assert plugin.ended == [(handle.subagent_id, "interrupted")]
        with inside_turn(second.new_session(session_id="parent-1"), "turn-2"):
            result = await second.lifecycle.result(handle)
        assert (result.state, result.error_message) == (S.CANCELLED, "cancelled before start: changed my mind")
    finally:
        await second.close()
