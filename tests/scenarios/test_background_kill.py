"""Background delegations across a SIGKILL: `switchboard run` killed while one chat's child is still
running and another chat's results wait for their completion turn's answer, then restarted on the
same state directory (the in-process engine)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import yaml

from agent.testing import FakeOpenAIServer
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_post
from tests.gateway.wire import call, goal, is_child
from tests.scenarios.test_outbox_restart import restarts, start

pytestmark = restarts(2)

SECRET = "kill-secret"
RESULTS = "[Background delegation results]"


class Model:
    """Plays the parent and children of both chats; ``killing``: the slow child and the quick
    delegation's completion turn never answer (the process dies while they wait)."""

    def __init__(self) -> None:
        self.killing = True
        self.calls: list[str] = []

    def __call__(self, body: dict) -> dict:
        if is_child(body):
            self.calls.append(f"child {goal(body)}")
            return {"hang": True} if self.killing and goal(body) == "slow" else {"text": f"{goal(body)} found"}
        last = body["messages"][-1]
        content = str(last.get("content"))
        if content.startswith(RESULTS):
            which = "quick" if '"quick"' in content else "slow"
            self.calls.append(f"completion {which}")
            if self.killing:
                return {"hang": True}
            return {"text": f"summary: {'; '.join(s for s in ('quick found', 'slow found') if s in content)}"}
        if last["role"] == "tool":
            return {"text": "on it"}
        return call("delegate_task", {"goal": content.split()[-1]})


def texts(receiver: WebhookReceiver, chat: str) -> list[str]:
    return [d.json["text"] for d in receiver.unique.values() if d.json["chat_id"] == chat]


async def test_a_sigkill_with_background_work_reports_the_running_delivers_the_finished_once(tmp_path: Path):
    model = Model()
    async with FakeOpenAIServer() as server, WebhookReceiver(SECRET) as receiver:
        server.respond_with(model)
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"provider": "openai", "base_url": server.base_url, "name": "m", "max_retries": 0},
            "platforms": {"webhook": {"enabled": True, "routes": {
                "hook": {"secret": SECRET, "deliver_url": receiver.url}}}},
        }))
        proc, base = await start(config, tmp_path)
        try:
            for chat, task in (("running", "slow"), ("finished", "quick")):
                await signed_post(f"{base}/webhooks/hook", SECRET, {"text": f"please do {task}", "chat_id": chat})
            await receiver.wait_for(lambda: texts(receiver, "running") == ["on it"]
                                    and texts(receiver, "finished") == ["on it"], timeout=10)
            await server.wait_for(lambda: {"child slow", "completion quick"} <= set(model.calls))
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()

        model.killing, model.calls = False, []
        proc, base = await start(config, tmp_path)
        try:
            await receiver.wait_for(lambda: len(texts(receiver, "running")) == len(texts(receiver, "finished")) == 2,
                                    timeout=10)
            [report] = texts(receiver, "running")[1:]
            assert report.startswith("⚠️ The gateway restarted") and "Interrupted: slow" in report and "/retry" in report
            assert texts(receiver, "finished")[1] == "summary: quick found"
            assert "child slow" not in model.calls  # reported, never silently run again
            await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "/retry", "chat_id": "running"})
            await receiver.wait_for(lambda: len(texts(receiver, "running")) == 4, timeout=10)
            assert texts(receiver, "running")[2:] == ["Retrying 1 subagent: slow. The results will follow.",
                                                      "summary: slow found"]
        finally:  # a graceful stop flushes the outbox: a second copy of anything would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert proc.returncode == 0
    # Nothing doubled: each chat's messages, by idempotency key (a resend of one the receiver already
    # took, under its key, is not a second message), are the ones above and no more.
    assert len(texts(receiver, "running")) == 4 and len(texts(receiver, "finished")) == 2
    assert model.calls.count("completion quick") == 1
