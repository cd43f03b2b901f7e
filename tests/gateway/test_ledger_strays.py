"""Children that a restart finds running with no delivery waiting for them (on Temporal, they outlive
the gateway): a process killed between launching a background delegation's children and recording
them in the ledger (at the dispatch, or relaunching them after a restart) left them running for no
one. The next start stops them before anything delegates again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from agent import ModelRequest, ToolRegistry
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled
from lifecycle import PROCESS_EXIT, SubagentState
from tests.gateway.test_ledger import BACKGROUND, parent, rows
from tests.polling import until

INTERRUPTED = (SubagentState.INTERRUPTED, PROCESS_EXIT)


@contextlib.asynccontextmanager
async def temporal_worker(temporal_server, leaves: ScriptedModel):
    """A worker running children with ``leaves``, and the ``lifecycle`` config section that uses it."""
    from lifecycle.settings import TemporalSettings
    from lifecycle.temporal import ChildWorker, WorkerToolbox, connect

    settings = TemporalSettings(address=temporal_server.address, task_queue=f"strays-{uuid.uuid4().hex[:10]}")
    client = await connect(settings)
    toolbox = WorkerToolbox(tools=ToolRegistry(), model_for=lambda provider, name: leaves)
    async with ChildWorker(client, settings.task_queue, toolbox, heartbeat_seconds=0.2):
        yield {"engine": "temporal", "temporal": {"address": settings.address, "task_queue": settings.task_queue}}


def forget_row(gateway, delegation_id: str) -> None:
    """The ledger as a process killed before it wrote this row left it."""
    gateway.store.db.write("DELETE FROM gateway_delegations WHERE delegation_id=?", (delegation_id,))


def stop_logs(caplog) -> list[str]:
    return [m for m in caplog.messages if "are being stopped" in m]


async def test_children_a_crash_left_unrecorded_at_dispatch_are_stopped_before_the_turn_delegates_again(
        tmp_path, gateways, temporal_server, caplog):
    """Killed after the children's journal rows, before their ledger row: the turn runs again and delegates
    anew, and the first children, which no delegation names, would run to their end on their workers for no
    one, their work done twice."""

    def acknowledge_never(request: ModelRequest) -> dict:
        if request.messages[-1]["role"] == "tool":
            return {"wait": "ack"}
        return parent()(request)

    first_run = [True]
    leaves = ScriptedModel({"leaf": lambda r: {"wait": "first run", "text": "ran for no one"} if first_run[0]
                            else {"text": "found"}})
    try:
        async with temporal_worker(temporal_server, leaves) as lifecycle:
            config = make_config(tmp_path, **BACKGROUND, lifecycle=lifecycle)
            chat = RecordingAdapter()
            gateway = await gateways(config, [chat], model=ScriptedModel({"parent": acknowledge_never}))
            await chat.say("please delegate", event_id="ev-1")
            await until(lambda: len(leaves.requests) == 2, 15)  # both children are in their model calls
            [row] = rows(gateway)
            old = [t.subagent_id for t in row.tasks]
            forget_row(gateway, row.delegation_id)
            await gateway.stop(grace=0)  # the children run on; the turn is left unfinished
            first_run[0] = False

            caplog.set_level(logging.INFO, logger="gateway.ledger")
            chat2 = RecordingAdapter()
            gateway2 = await gateways(config, [chat2], model=ScriptedModel({"parent": parent()}))
            view = gateway2.host.children
            async with asyncio.timeout(15):
                await view.wait_finished(old)
            leaves.release("first run")
            found = await view.lookup(old)
            assert [(found[sid].state, found[sid].error) for sid in old] == [INTERRUPTED] * 2
            assert stop_logs(caplog) == ["2 subagent(s) of delegations whose turns run again are being stopped"]
            await chat2.wait_for(lambda: len(chat2.messages) == 2, timeout=15)
            await settled(gateway2, timeout=15)
            assert chat2.texts() == ["on it", "results: alpha"]  # one acknowledgement, one set of results
            assert len(leaves.requests) == 4  # the old two, cut off; the new two
    finally:
        leaves.release("first run")


async def test_in_process_a_crash_at_dispatch_leaves_nothing_to_stop(tmp_path, gateways, caplog):
    """The in-process engine's children die with the process: the start finds none to stop, and says nothing."""

    def acknowledge_never(request: ModelRequest) -> dict:
        if request.messages[-1]["role"] == "tool":
            return {"wait": "ack"}
        return parent()(request)

    chat = RecordingAdapter()
    model = ScriptedModel({"parent": acknowledge_never, "leaf": lambda r: {"wait": "forever"}})
    gateway = await gateways(make_config(tmp_path, **BACKGROUND), [chat], model=model)
    await chat.say("please delegate", event_id="ev-1")
    await model.reached("ack")
    [row] = rows(gateway)
    forget_row(gateway, row.delegation_id)
    await gateway.stop(grace=0)

    caplog.set_level(logging.INFO, logger="gateway.ledger")
    chat2 = RecordingAdapter()
    gateway2 = await gateways(make_config(tmp_path, **BACKGROUND), [chat2],
                              model=ScriptedModel({"parent": parent(), "leaf": lambda r: {"text": "found"}}))
    await chat2.wait_for(lambda: len(chat2.messages) == 2)
    await settled(gateway2)
    assert chat2.texts() == ["on it", "results: alpha"]
    old = await gateway2.host.children.lookup([t.subagent_id for t in row.tasks])
    assert [(c.state, c.error) for c in old.values()] == [INTERRUPTED] * 2
    assert stop_logs(caplog) == []


async def test_children_a_crash_left_unrecorded_as_they_were_relaunched_are_stopped_not_followed(
        tmp_path, gateways, temporal_server, caplog):
    """``lifecycle.on_restart: resume``: killed after relaunching a delegation's lost children, before the
    ledger row named them. The row still names the lost ones, which the next start relaunches again: the
    first relaunch's children would run to their end for no one."""
    chat = RecordingAdapter()
    model = ScriptedModel({"parent": parent(), "leaf": lambda r: {"wait": "never"}})
    config = make_config(tmp_path, **BACKGROUND, lifecycle={"on_restart": "resume"})
    gateway = await gateways(config, [chat], model=model)  # in-process: its children die with it
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await until(lambda: len([r for r in model.requests if r.role == "leaf"]) == 2)
    [row] = rows(gateway)
    await gateway.stop(grace=0)

    run = ["relaunched"]
    leaves = ScriptedModel({"leaf": lambda r: {"wait": "relaunched", "text": "ran for no one"}
                            if run[0] == "relaunched" else {"text": f"found {r.metadata['goal']}"}})
    try:
        async with temporal_worker(temporal_server, leaves) as lifecycle:
            config = make_config(tmp_path, **BACKGROUND, lifecycle={"on_restart": "resume", **lifecycle})
            gateway2 = await gateways(config, [RecordingAdapter()], model=ScriptedModel({"parent": parent()}))
            await until(lambda: len(leaves.requests) == 2, 15)  # relaunched on Temporal, in their model calls
            [relaunched] = rows(gateway2)
            assert relaunched.delegation_id == row.delegation_id
            first = [t.subagent_id for t in relaunched.tasks]
            assert set(first).isdisjoint(t.subagent_id for t in row.tasks)
            gateway2.store.delegations.replace_tasks(row.delegation_id, row.tasks)  # the record they never got
            await gateway2.stop(grace=0)
            run[0] = "again"

            caplog.set_level(logging.INFO, logger="gateway.ledger")
            chat3 = RecordingAdapter()
            gateway3 = await gateways(config, [chat3], model=ScriptedModel({"parent": parent()}))
            view = gateway3.host.children
            async with asyncio.timeout(15):
                await view.wait_finished(first)
            leaves.release("relaunched")
            found = await view.lookup(first)
            assert [(found[sid].state, found[sid].error) for sid in first] == [INTERRUPTED] * 2
            assert stop_logs(caplog) == [
                "2 subagent(s) launched again that no delegation records (the process stopped first) are being stopped"]
            await chat3.wait_for(lambda: len(chat3.messages) == 1, timeout=15)
            await settled(gateway3, timeout=15)
            assert chat3.texts() == ["results: alpha"]
            [again] = gateway3.store.delegations.latest(row.agent_session_id, 1)
            assert again.status == "delivered" and {t.attempts for t in again.tasks} == {2}
            assert len(leaves.requests) == 4  # the first relaunch's two, cut off; the second's two
    finally:
        leaves.release("relaunched")


async def test_children_already_stopping_at_the_start_are_neither_stopped_again_nor_counted(
        tmp_path, gateways, temporal_server, caplog):
    """An inline ``delegate_task``'s children whose turn the stop cut short: their stop was asked before the
    ledger looks (by the turn's interrupt, or by the lifecycle's start, as orphans). That stop stands; they
    are no strays of the ledger's, and its log line does not count them again."""
    leaves = ScriptedModel({"leaf": lambda r: {"wait": "first run", "text": "ran for no one"}})
    try:
        async with temporal_worker(temporal_server, leaves) as lifecycle:
            config = make_config(tmp_path, delegation={"gateway_mode": "inline"}, lifecycle=lifecycle)
            chat = RecordingAdapter()
            gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent()}))
            await chat.say("please delegate", event_id="ev-1")
            await until(lambda: len(leaves.requests) == 2, 15)
            [session] = gateway.sessions
            old = [c.subagent_id for c in gateway.host.children.children(session.session_id)]
            await gateway.stop(grace=0)

            caplog.set_level(logging.INFO)
            gateway2 = await gateways(config, [RecordingAdapter()], model=ScriptedModel({"parent": parent()}))
            async with asyncio.timeout(15):
                await gateway2.host.children.wait_finished(old)
            assert stop_logs(caplog) == ["2 inline child(ren) whose turn ended with the previous process are being "
                                         "stopped"]  # the lifecycle's: the ledger's would follow it
    finally:
        leaves.release("first run")
