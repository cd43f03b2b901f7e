"""Exactly-once delivery across a SIGKILL: `switchboard run` in a subprocess, killed
while a reply is still failing to deliver, then restarted."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
import yaml

from gateway.dead_letters import APOLOGY
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_post
from tests.gateway.cli_process import TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
SECRET = "restart-secret"
LISTENING_WITHIN = TIMEOUT
"""Seconds from the start of `switchboard run` to its listening, the bound `cli_process` gives one command:
1-3 s here, over 30 s on a loaded 2-core machine (the program loads first: aiogram alone takes seconds of CPU)."""


def restarts(starts: int) -> pytest.MarkDecorator:
    """The time limit of a test that starts `switchboard run` up to ``starts`` times: the suite's minute
    holds one start on a loaded 2-core machine, not several (each step keeps a bound of its own)."""
    return pytest.mark.timeout(60 + 30 * starts)


pytestmark = restarts(3)


async def start(config: Path, tmp_path: Path) -> tuple[asyncio.subprocess.Process, str]:
    """`switchboard run` on ``config``, once it listens: the process and its URL. A start that fails
    is killed: left running, it outlived the test and failed a later one with a ResourceWarning."""
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("SWITCHBOARD_CONFIG", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "--config", str(config), "run",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env, cwd=str(tmp_path))
    try:
        async with asyncio.timeout(LISTENING_WITHIN):
            while True:
                line = (await proc.stderr.readline()).decode()
                assert line, "the gateway exited before listening"
                if match := re.search(r"listening on (http://\S+)", line):
                    asyncio.ensure_future(_drain(proc.stderr))
                    return proc, match.group(1)
    except BaseException:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        raise


async def turn_began(tmp_path: Path) -> None:
    """Wait until the running gateway has durably begun an event's turn (a death before that is charged to none)."""
    async with asyncio.timeout(15):
        while True:
            with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db:
                if db.execute("SELECT 1 FROM gateway_inbox WHERE status='begun'").fetchone():
                    return
            await asyncio.sleep(0.05)


async def _drain(stream) -> None:
    while await stream.readline():
        pass


async def test_unsent_replies_are_sent_once_after_a_sigkill_and_sent_ones_never_again(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"text": "pong"}]]}))
    async with WebhookReceiver(SECRET) as receiver:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"),
            "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"webhook": {"enabled": True, "routes": {
                "hook": {"secret": SECRET, "deliver_url": receiver.url}}}},
        }))
        proc, base = await start(config, tmp_path)
        try:
            first = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "a", "chat_id": "a"})).json()
            await receiver.wait_for(lambda: receiver.unique, timeout=15)
            receiver.fail_next(10_000, 500)
            second = (await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "b", "chat_id": "b"})).json()
            await receiver.wait_for(lambda: any(d.status == 500 for d in receiver.deliveries), timeout=10)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        receiver.heal()
        proc, base = await start(config, tmp_path)
        try:
            await receiver.wait_for(lambda: len(receiver.unique) == 2, timeout=15)
        finally:  # a graceful stop flushes the outbox: a second copy, if any were pending, would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    accepted = [d for d in receiver.deliveries if d.status == 200]
    by_turn = {d.json["turn_id"]: d for d in accepted}
    assert set(by_turn) == {first["turn_id"], second["turn_id"]}
    assert len(accepted) == 2  # neither sent twice: the first never again, the second once
    assert all(d.json["text"] == "pong" for d in accepted)
    assert proc.returncode == 0


async def test_a_message_that_kills_the_gateway_every_time_is_set_aside_not_replayed_forever(tmp_path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"hang": True}]]}))  # the turn never ends: killed in it
    async with WebhookReceiver(SECRET) as receiver:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0}, "inbox": {"max_attempts": 2},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"webhook": {"enabled": True, "routes": {
                "hook": {"secret": SECRET, "deliver_url": receiver.url}}}},
        }))
        proc, base = await start(config, tmp_path)
        await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "poison", "chat_id": "c"})
        for _ in range(2):  # killed in the event's turn, then killed again in its replay
            await turn_began(tmp_path)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            proc, base = await start(config, tmp_path)
        try:
            await receiver.wait_for(lambda: receiver.unique, timeout=15)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert [d.json["text"] for d in receiver.unique.values()] == [APOLOGY]
    assert proc.returncode == 0


async def test_a_sigterm_while_the_only_reply_waits_out_a_retry_after_past_the_grace_ends_at_once(tmp_path):
    # Nothing can go out before the grace ends: the stop sat the whole grace out doing nothing,
    # past a supervisor's patience (docker stop waits 10 s, the default grace). The reply stays pending.
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"text": "pong"}]]}))
    async with WebhookReceiver(SECRET) as receiver:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0, "shutdown_grace_seconds": 120},
            "delivery": {"max_retry_after": 600}, "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"webhook": {"enabled": True, "routes": {
                "hook": {"secret": SECRET, "deliver_url": receiver.url}}}},
        }))
        receiver.fail_next(1, 503, retry_after=300)
        proc, base = await start(config, tmp_path)
        try:
            await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "ping"})
            await receiver.wait_for(lambda: receiver.deliveries, timeout=30)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 60)  # not the 120 s grace
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
    assert proc.returncode == 0 and [d.status for d in receiver.deliveries] == [503]
    with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db:
        assert db.execute("SELECT status FROM gateway_outbox").fetchall() == [("pending",)]  # the next start sends it
