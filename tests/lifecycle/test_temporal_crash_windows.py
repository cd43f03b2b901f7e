"""What the gateway has said is done stays done when it stops, or is killed, just after.

A child whose end the gateway is reporting as it closes is finished in that process, once: the engine
stopped following its children at `close` and cut off one whose completion pipeline (memory,
``subagent_stop`` hooks) was under way, its terminal result never journaled, so the next start read
the outcome from Temporal again and ran the pipeline a second time.

A steer the engine has accepted (delegate_task tells the model it is delivered) is journaled at once,
not only once a signal has failed: the client retries a call for up to ten seconds before it says
Temporal does not answer, and a gateway killed meanwhile lost the steer for good.
"""

from __future__ import annotations

import asyncio

from agent.models.scripted import ScriptedModel
from lifecycle import SubagentLaunchRequest, SubagentState
from lifecycle.temporal import TemporalEngine
from tests.lifecycle.test_temporal import crash, journaled_steers, steered_echo, until_signalled
from tests.polling import until

S = SubagentState


async def test_a_child_ending_as_the_gateway_closes_is_finished_there_once_not_again_after_the_restart(
        make_env, queue):
    settings, client, worker = queue
    await worker(ScriptedModel({"leaf": lambda r: {"text": "done as the gateway closed"}}))
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    stops: list[str] = []
    reporting, go_on = asyncio.Event(), asyncio.Event()

    async def slow_stop(**event):
        stops.append(event["child_status"])
        reporting.set()
        await go_on.wait()

    first.hooks.register("subagent_stop", slow_stop)
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="ends at the close"))
    await asyncio.wait_for(reporting.wait(), 10)
    engine = first.service.engine
    closing = asyncio.ensure_future(first.service.close())
    await until(lambda: engine._closed)  # the close has stopped following the children
    go_on.set()
    await asyncio.wait_for(closing, 10)

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    second.hooks.register("subagent_stop", lambda **e: stops.append(e["child_status"]))
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=10)).state is S.SUCCEEDED
        result = await second.service.result(handle)
    assert (result.state, result.summary) == (S.SUCCEEDED, "done as the gateway closed")
    assert stops == ["completed"]  # its completion ran once, in the process that had its outcome


async def test_a_steer_accepted_just_before_the_gateway_is_killed_reaches_the_child_after_the_restart(
        make_env, queue, tmp_path):
    settings, client, worker = queue
    model = ScriptedModel({"leaf": steered_echo})
    await worker(model)
    first = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    with first.turn():
        handle = await first.service.launch(SubagentLaunchRequest(goal="steer me"))
    sid = handle.subagent_id
    await asyncio.wait_for(model.reached("gate"), 10)
    await until(lambda: first.service.host_view().children("parent-1")[0].state is S.RUNNING)
    assert first.service.engine.steer(sid, "use metric units")
    crash(first.service.engine)  # killed before its signal reached Temporal (or while the client retried it)
    await until(lambda: journaled_steers(tmp_path / "shared.db", sid) == ["use metric units"])

    second = await make_env(engine=TemporalEngine(settings, client=client), db="shared.db")
    await until_signalled(client.get_workflow_handle(sid), 1)
    await until(lambda: journaled_steers(tmp_path / "shared.db", sid) == [])  # sent: forgotten
    model.release("gate")
    with second.turn():
        assert (await second.service.wait(handle, timeout_seconds=20)).state is S.SUCCEEDED
        summary = (await second.service.result(handle)).summary
    assert summary.endswith("use metric units") and summary.count("use metric units") == 1
