"""Nothing lost, nothing doubled across crashes: `switchboard run` killed at random points while
messages, turns, children, completion turns and deliveries are under way, and restarted.

Every message goes to a chat of its own through a webhook route whose replies reach a
loopback receiver. At the end each chat must hold exactly one reply and, for a list
delegated in the background, exactly one completion (its results, or the report that a
restart interrupted its children) — counted by distinct idempotency keys, so a
redelivery of the same message (which the receiver dedupes) is not a double, and a
second message is.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import signal
import sys
import time
from pathlib import Path

import aiohttp
import pytest
import yaml

from platforms.fakes.webhook_receiver import WebhookReceiver, signed_post
from tests.scenarios.test_outbox_restart import LISTENING_WITHIN

ROOT = Path(__file__).resolve().parents[2]
SECRET = "chaos-secret"
MESSAGES = 12
KILLS = 4

# Five starts of `switchboard run`: about 10 s in all here, over 60 s (the suite's per-test limit)
# on a loaded 2-core machine, where each start alone can take 10 s; each step keeps its own bound.
pytestmark = pytest.mark.timeout(180)


class Gateway:
    """One `switchboard run` at a time on the same state directory."""

    def __init__(self, config: Path, tmp_path: Path) -> None:
        self.config, self.tmp_path = config, tmp_path
        self.proc: asyncio.subprocess.Process | None = None
        self.url = ""

    async def start(self) -> None:
        env = {**os.environ, "HOME": str(self.tmp_path), "PYTHONPATH": str(ROOT)}
        env.pop("SWITCHBOARD_CONFIG", None)
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway.cli", "run", "--config", str(self.config),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env, cwd=str(self.tmp_path))
        try:
            async with asyncio.timeout(LISTENING_WITHIN):
                while True:
                    line = (await self.proc.stderr.readline()).decode()
                    assert line, "the gateway exited before listening"
                    if match := re.search(r"listening on (http://\S+)", line):
                        self.url = match.group(1)
                        asyncio.ensure_future(_drain(self.proc.stderr))
                        return
        except BaseException:  # not left running past the test
            if self.proc.returncode is None:
                self.proc.kill()
            await self.proc.wait()
            raise

    async def stop(self, how: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(how)
        async with asyncio.timeout(30):
            await self.proc.wait()
        if how == signal.SIGTERM:
            assert self.proc.returncode == 0


async def _drain(stream) -> None:
    while await stream.readline():
        pass


async def post(gateway: Gateway, body: bytes, timestamp: str) -> dict:
    """POST until accepted: a request the dying gateway never answered is sent again, the same
    signed request, which the inbox knows if it did arrive."""
    while True:
        try:
            reply = await signed_post(f"{gateway.url}/webhooks/chaos", SECRET, body, timestamp=timestamp)
        except (aiohttp.ClientError, OSError):
            await asyncio.sleep(0.05)  # polling for the gateway to come back
            continue
        if reply.status == 202:
            return reply.json()
        assert reply.status >= 500, reply.status
        await asyncio.sleep(0.05)


def deliveries_by_chat(receiver: WebhookReceiver) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = {}
    for delivery in receiver.unique.values():
        body = delivery.json
        kinds = counts.setdefault(str(body["chat_id"]), {})
        kinds[body["kind"]] = kinds.get(body["kind"], 0) + 1
    return counts


@pytest.mark.parametrize(("mode", "how"), [("auto", signal.SIGKILL), ("inline", signal.SIGKILL),
                                           ("auto", signal.SIGTERM)])
async def test_every_accepted_message_is_answered_once_across_restarts(tmp_path, mode, how):
    rng = random.Random(f"{mode}-{how.name}")
    async with WebhookReceiver(SECRET) as receiver:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0, "shutdown_grace_seconds": 0.5},
            "model": {"demo": {"child_steps": 2, "step_seconds": 0.25}},
            "delegation": {"gateway_mode": mode},
            "platforms": {"webhook": {"enabled": True, "routes": {"chaos": {"secret": SECRET,
                                                                             "deliver_url": receiver.url}}}},
        }))
        gateway = Gateway(config, tmp_path)
        await gateway.start()
        lists = {f"c{i}" for i in range(MESSAGES) if i % 2}
        kill_after = set(rng.sample(range(MESSAGES), KILLS))
        for i in range(MESSAGES):
            text = f"Compare these:\n- apples {i}\n- pears {i}" if f"c{i}" in lists else f"hello {i}"
            body = json.dumps({"text": text, "chat_id": f"c{i}"}).encode()
            await post(gateway, body, str(int(time.time())))
            if i in kill_after:  # mid-turn, while children run, mid completion turn or delivery
                await asyncio.sleep(rng.uniform(0.0, 0.9))
                await gateway.stop(how)
                await gateway.start()
            else:
                await asyncio.sleep(rng.uniform(0.0, 0.2))

        def answered() -> bool:
            counts = deliveries_by_chat(receiver)
            return all(counts.get(f"c{i}", {}).get("reply") for i in range(MESSAGES)) and (
                mode == "inline" or all(counts.get(chat, {}).get("completion") for chat in lists))

        await receiver.wait_for(answered, timeout=60)
        await gateway.stop(signal.SIGTERM)  # a graceful stop sends anything still pending: doubles would show
    counts = deliveries_by_chat(receiver)
    for i in range(MESSAGES):
        chat = f"c{i}"
        expected = {"reply": 1, "completion": 1} if mode == "auto" and chat in lists else {"reply": 1}
        assert counts[chat] == expected, (chat, counts[chat])
