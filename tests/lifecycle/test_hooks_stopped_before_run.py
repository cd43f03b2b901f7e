"""docs/lifecycle.md "One path for every child": a child's hooks run in the context of the parent turn that launched
it, also those of a child stopped while it waited for a place under ``lifecycle.max_running``. Such a child's
``subagent_stop`` hooks ran in the context of whoever stopped it: the host's ``/agents stop`` (no turn at all), where a
hook's launch failed with ``NO_PARENT``, or a later turn of the session (a plugin's ``cancel``), where its launch went
to that turn; a child that ran got its hooks in its own turn's context, where the same launch went through."""

from __future__ import annotations

from agent import AgentSession, HookRegistry, PluginHost, ToolRegistry, active_turn
from agent.models.scripted import ScriptedModel
from agent.testing import inside_turn
from lifecycle import AsyncSubagentLifecycle, ChildHost, MemoryJournal, SubagentLaunchRequest, SubagentLifecycle
from lifecycle import SubagentState as S
from lifecycle.settings import LifecycleSettings
from tests.plugin_modules import plugin_module

PLUGIN = """
from agent import active_turn
from lifecycle import SubagentLaunchRequest, SubagentLifecycleError

seen = {}


def register(ctx):
    service = ctx.subagent_lifecycle

    async def follow_up(**event):
        if event["child_status"] != "interrupted":
            return
        turn = active_turn()
        try:
            launched = (await service.aio.launch(SubagentLaunchRequest(goal="follow up"))).parent_session_id
        except SubagentLifecycleError as exc:
            launched = exc.code
        seen[event["child_session_id"]] = (turn and turn.turn_id, launched)

    ctx.register_hook("subagent_stop", follow_up)
"""


async def _service(tmp_path, monkeypatch, name: str = "stop_context_plugin"):
    tools, hooks = ToolRegistry(), HookRegistry(timeout_seconds=5)
    service = AsyncSubagentLifecycle(ChildHost(tools=tools, hooks=hooks), MemoryJournal(),
                                     settings=LifecycleSettings(max_running=1))
    await service.start()
    plugins = PluginHost(tools, hooks)
    plugin = plugin_module(tmp_path, monkeypatch, name, PLUGIN)
    await plugins.load([name], lifecycle=SubagentLifecycle(service))
    assert plugins.failures == []
    return service, plugins, plugin


def _model() -> ScriptedModel:
    return ScriptedModel({"leaf": lambda r: {"wait": "never", "text": "late"} if r.metadata["goal"] != "follow up"
                          else {"text": "fine"}})


async def test_the_host_stopping_a_queued_child_runs_its_hooks_in_its_parent_turn(tmp_path, monkeypatch):
    service, plugins, plugin = await _service(tmp_path, monkeypatch)
    try:
        model = _model()
        with inside_turn(AgentSession(model=model, session_id="chat"), turn_id="turn-1"):
            ran = await service.launch(SubagentLaunchRequest(goal="runs"))
            queued = await service.launch(SubagentLaunchRequest(goal="waits for a place"))
        await model.reached("never")
        assert (await service.host_view().lookup([queued.subagent_id]))[queued.subagent_id].state is S.PENDING
        # `/agents stop` from the host, in no turn: the queued one first, while the other still holds the place.
        view = service.host_view()
        assert await view.interrupt_child(queued.subagent_id, "stopped by /agents stop")
        assert await view.interrupt_child(ran.subagent_id, "stopped by /agents stop")
        with inside_turn(AgentSession(model=model, session_id="chat"), turn_id="turn-1"):
            for handle in (ran, queued):
                assert (await service.wait(handle, timeout_seconds=5)).state is S.INTERRUPTED
        assert plugin.seen == {ran.subagent_id: ("turn-1", "chat"), queued.subagent_id: ("turn-1", "chat")}
    finally:
        plugins.close()
        await service.close()


async def test_a_queued_child_cancelled_in_a_later_turn_runs_its_hooks_in_the_turn_that_launched_it(
        tmp_path, monkeypatch):
    service, plugins, plugin = await _service(tmp_path, monkeypatch)
    try:
        model = _model()
        session = AgentSession(model=model, session_id="chat")
        with inside_turn(session, turn_id="turn-1"):
            ran = await service.launch(SubagentLaunchRequest(goal="runs"))
            queued = await service.launch(SubagentLaunchRequest(goal="waits for a place"))
        await model.reached("never")
        with inside_turn(session, turn_id="turn-2"):
            for handle in (queued, ran):
                assert (await service.cancel(handle)).accepted
            for handle in (ran, queued):
                assert (await service.wait(handle, timeout_seconds=5)).state is S.CANCELLED
        assert plugin.seen == {ran.subagent_id: ("turn-1", "chat"), queued.subagent_id: ("turn-1", "chat")}
    finally:
        plugins.close()
        await service.close()



async def test_a_child_no_temporal_worker_took_runs_its_stop_hooks_in_its_parent_turn(make_env, queue):
    """On Temporal its end came from the task sending the stop, started in the stopper's context; a child a worker
    ran ends in the task following its workflow, started in the launching turn's."""
    from lifecycle.temporal import TemporalEngine
    from tests.lifecycle.test_temporal import exists
    from tests.polling import until

    settings, client, _ = queue
    env = await make_env(engine=TemporalEngine(settings, client=client))  # no worker: it waits for one
    seen = []
    env.hooks.register("subagent_stop", lambda **e: seen.append(active_turn() and active_turn().turn_id))
    with env.turn():
        handle = await env.service.launch(SubagentLaunchRequest(goal="never taken"))
    await until(lambda: exists(client.get_workflow_handle(handle.subagent_id)), 5, every=0.05)
    assert await env.service.host_view().interrupt_child(handle.subagent_id, "stopped by /agents stop")
    with env.turn():
        assert (await env.service.wait(handle, timeout_seconds=5)).state is S.INTERRUPTED
    assert seen == ["turn-1"]
