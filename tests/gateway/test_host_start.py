"""`AgentHost.start`: children that end while the lifecycle service starts reach the plugins' hooks,
which load only once the service has started (a plugin may use it from `register`)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from gateway.host import AgentHost
from gateway.testing import make_config
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.settings import TemporalSettings
from lifecycle.temporal import ChildWorker, WorkerToolbox, connect
from tests.lifecycle.conftest import make_registry
from tests.lifecycle.test_temporal import crash
from tests.plugin_modules import plugin_module
from tests.polling import until

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
        # Killed while the cancel waits for its stop's commit, before the engine's requests (the workflow's
        # start, the stop) have run: the cancel's first step, up to that wait, taken at once.
        cancelling = first.lifecycle.cancel(handle, "changed my mind")
        with contextlib.suppress(StopIteration):
            cancelling.send(None)
    crash(first.lifecycle.engine)
    cancelling.close()  # killed: no answer
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


SLOW_START_LOG = """
    import asyncio

    calls = []
    go = asyncio.Event()

    async def register(ctx):
        await go.wait()  # loads only once the test lets it: the child has started by then
        ctx.register_hook("subagent_start", lambda **e: calls.append(("start", e["child_subagent_id"])))
        ctx.register_hook("subagent_stop", lambda **e: calls.append(("stop", e["child_session_id"], e["child_status"])))
"""


async def test_a_child_a_worker_takes_before_the_plugins_load_reaches_a_plugins_subagent_start(
        tmp_path, monkeypatch, temporal_server):
    """The gateway was killed before the child's workflow start was sent: the next start sends it, and a
    worker takes the child while the plugins still load. Their `subagent_start` (on the gateway, as for every
    child on a worker) hears of it once they have loaded, before its `subagent_stop`."""
    plugin = plugin_module(tmp_path, monkeypatch, "slow_start_log_plugin", SLOW_START_LOG)
    queue = f"host-start-{uuid.uuid4().hex[:10]}"
    temporal = {"engine": "temporal", "temporal": {"address": temporal_server.address, "task_queue": queue}}
    first = AgentHost(make_config(tmp_path, lifecycle=temporal))
    await first.start()
    with inside_turn(first.new_session(session_id="parent-1"), "turn-1"):
        handle = await first.lifecycle.launch(SubagentLaunchRequest(goal="sent at the next start"))
    crash(first.lifecycle.engine)  # nothing awaited since the launch: its workflow's start was not sent
    await first.close()

    model = ScriptedModel({"leaf": lambda r: {"wait": "gate", "text": "done after the restart"}})
    client = await connect(TemporalSettings(address=temporal_server.address, task_queue=queue))
    toolbox = WorkerToolbox(tools=make_registry(), model_for=lambda provider, name: model)
    async with ChildWorker(client, queue, toolbox, heartbeat_seconds=0.2):
        second = AgentHost(make_config(tmp_path, lifecycle=temporal, plugins=["slow_start_log_plugin"]))
        starting = asyncio.ensure_future(second.start())
        try:
            await asyncio.wait_for(model.reached("gate"), 10)
            view = second.lifecycle.host_view()
            await until(lambda: [c.state for c in view.children("parent-1")] in ([S.STARTING], [S.RUNNING]))
            plugin.go.set()
            await asyncio.wait_for(starting, 10)
            assert plugin.calls == [("start", handle.subagent_id)]
            model.release("gate")
            with inside_turn(second.new_session(session_id="parent-1"), "turn-2"):
                assert (await second.lifecycle.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
            assert plugin.calls == [("start", handle.subagent_id), ("stop", handle.subagent_id, "completed")]
        finally:
            plugin.go.set()
            await starting
            await second.close()
