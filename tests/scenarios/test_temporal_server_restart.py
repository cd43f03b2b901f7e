"""The Temporal server itself is SIGKILLed while a chat's children run on a worker, and started again on
the same port and database (`temporal server start-dev --db-filename`): the gateway and the worker ride it
out, /agents says what the children wait for meanwhile, and every child's result reaches its chat once.
And the only worker is SIGKILLed mid-child while Temporal stays up, then started again: it finishes the child."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest

from agent import ModelRequest, ToolRegistry
from agent.models.scripted import ScriptedModel
from gateway.testing import RecordingAdapter, make_config, settled, start_gateway
from gateway.worker import serve_children
from lifecycle import SubagentState
from lifecycle.settings import TemporalSettings
from lifecycle.temporal import ChildWorker, WorkerToolbox, connect
from lifecycle.temporal.testing import DevServer
from tests.polling import until
from tests.scenarios import test_scale_out as scale_out
from tests.scenarios.test_scale_out import RESULTS, texts

pytestmark = pytest.mark.timeout(120)

cluster = scale_out.cluster
"""A gateway and its workers as real processes (`switchboard run`, `switchboard worker`)."""

GOALS = ("alpha", "beta", "gamma")


def parent(request: ModelRequest) -> dict:
    """Delegates one task per word of the message in the background; answers the results with what was found."""
    last = request.messages[-1]
    content = str(last.get("content"))
    if last["role"] == "tool":
        return {"text": "on it"}
    if content.startswith("[Background delegation results]"):
        return {"text": "results: " + ", ".join(g for g in GOALS if f"found {g}" in content)}
    return {"tool_calls": [{"name": "delegate_task", "arguments": {"tasks": [{"goal": g} for g in content.split()]}}]}


def leaf(request: ModelRequest) -> dict:
    """Each child waits at the gate named by its goal."""
    goal = request.metadata["goal"]
    return {"wait": goal, "text": f"found {goal}"}


@pytest.fixture
async def gateways():
    started = []

    async def make(config, adapters, **kw):
        started.append(await start_gateway(config, adapters, **kw))
        return started[-1]

    yield make
    for gateway in started:
        await gateway.stop(grace=0)


@contextlib.asynccontextmanager
async def serving_worker(settings: TemporalSettings, model: ScriptedModel):
    """`switchboard worker`'s serving loop in this process, running children with ``model``; yields its task."""
    toolbox = WorkerToolbox(tools=ToolRegistry(), model_for=lambda provider, name: model)
    worker = ChildWorker(await connect(settings), settings.task_queue, toolbox, heartbeat_seconds=0.2)
    stopping = asyncio.Event()
    serving = asyncio.ensure_future(serve_children(worker, stopping, settings, "test-worker"))
    try:
        yield serving
    finally:
        stopping.set()
        await serving


def killed(server: DevServer) -> None:
    server.process.kill()
    server.process.wait()
    server.process = None


def answer(chat: RecordingAdapter, kind: str, chat_id: str) -> str:
    [text] = [m.text for m in chat.messages if m.kind == kind and m.outbound.chat_id == chat_id]
    return text


def live_children(gateway) -> list:
    view = gateway.host.children
    return [child for session in view.sessions_with_children() for child in view.children(session)]


def live_activities(gateway) -> list[str]:
    return [child.activity for child in live_children(gateway)]


async def test_children_outlive_a_killed_temporal_server_and_agents_says_what_they_wait_for(tmp_path, gateways):
    server = DevServer(db_file=tmp_path / "temporal.db", log_file=tmp_path / "server.log")
    await asyncio.to_thread(server.start)
    leaves = ScriptedModel({"leaf": leaf})
    try:
        settings = TemporalSettings(address=server.address, task_queue=f"crash-{uuid.uuid4().hex[:10]}")
        config = make_config(tmp_path, display={"interim_assistant_messages": True}, lifecycle={
            "engine": "temporal", "temporal": {"address": settings.address, "task_queue": settings.task_queue}})
        async with serving_worker(settings, leaves) as worker:
            chat = RecordingAdapter()
            gateway = await gateways(config, [chat], model=ScriptedModel({"parent": parent}))
            await chat.say("alpha beta", chat="c1")
            for goal in ("alpha", "beta"):
                await asyncio.wait_for(leaves.reached(goal), 15)
            # Running in the worker is not yet running as the gateway knows it (it hears so through Temporal): killed
            # before that, on a loaded machine, a child stayed `pending` in the gateway's eyes.
            await until(lambda: [c.state for c in live_children(gateway)] == [SubagentState.RUNNING] * 2, 15, every=0.05)
            await asyncio.to_thread(killed, server)
            await chat.say("gamma", chat="c2")  # launched while Temporal is down: it waits for it
            await chat.wait_for(lambda: chat.texts() == ["on it", "on it"])

            # Once the client's own retries are spent (10 s), the follows say Temporal does not answer.
            silent = f"Temporal at {server.address}"
            await until(lambda: (found := live_activities(gateway)) and all(silent in a for a in found), 40, every=0.1)
            await chat.say("/agents", chat="c2")
            await chat.say("/agents", chat="c1")
            await chat.wait_for(lambda: chat.kinds().count("command") == 2)
            waiting, running = (answer(chat, "command", c) for c in ("c2", "c1"))
            # Before: `waiting for a worker`, which sent the operator to the workers that were fine.
            assert "gamma — pending, " in waiting and f"waiting for {silent}, which does not answer" in waiting
            assert "waiting for a worker" not in waiting
            assert running.count("running, ") == 2 and running.count(f"; {silent} does not answer") == 2

            await asyncio.to_thread(server.start)  # the same port and database
            await until(lambda: not any(silent in a for a in live_activities(gateway)), 30, every=0.1)
            for goal in GOALS:
                leaves.release(goal)
            await settled(gateway, timeout=60)
            assert not worker.done()  # it polled through the outage, and polls still
        assert chat.kinds().count("completion") == 2  # one each
        assert (answer(chat, "completion", "c1"), answer(chat, "completion", "c2")) == (
            "results: alpha, beta", "results: gamma")
    finally:
        await asyncio.to_thread(server.stop)


async def test_the_only_worker_killed_mid_child_and_started_again_finishes_it_with_one_completion(cluster):
    receiver = cluster.receiver
    scale = cluster(model={"provider": "demo", "demo": {"child_steps": 2, "step_seconds": 1}})
    await scale.start(workers=1)
    await scale.say("k", "- kappa report")
    await scale.until_running(1)
    await scale.workers[0].kill()  # SIGKILL in the middle of the child's call; no other worker
    await scale.start_worker()
    await receiver.wait_for(lambda: any(RESULTS in t for t in texts(receiver, "k")), timeout=60)
    assert await scale.gateway.stop() == 0  # a graceful stop flushes anything still queued: nothing is
    completions = [t for t in texts(receiver, "k") if RESULTS in t]
    assert len(completions) == 1 and "kappa report: completed" in completions[0]
