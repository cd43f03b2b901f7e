"""A turn a SIGKILL cut short is replayed by the next start that brings every platform up, and by no
start that fails first: a later platform refusing its token must not leave the earlier one's replayed
turn paying for model calls twice. Its hooks run again when it is replayed (at least once, see
docs/agent.md), under the same turn id, which is what a plugin de-duplicates on."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import yaml

from platforms.fakes.slack import FakeSlack
from platforms.fakes.telegram import FakeTelegram
from tests.gateway.cli_process import TIMEOUT
from tests.scenarios.test_outbox_restart import restarts, start

pytestmark = restarts(3)

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = """
    import json
    from pathlib import Path

    LOG = Path(__file__).with_name("hooks.jsonl")

    def _note(name):
        def note(**event):
            with LOG.open("a", encoding="utf-8") as log:
                log.write(json.dumps({"hook": name, "turn_id": event.get("turn_id"),
                                      "role": event.get("role")}) + "\\n")
        return note

    def stall(args, context):
        import threading
        threading.Event().wait()

    def register(ctx):
        for name in ("turn_start", "turn_end", "model_call"):
            ctx.register_hook(name, _note(name))
        ctx.register_tool("stall", "Never returns.", {"type": "object"}, stall)
"""


def hook_events(tmp_path: Path) -> list[dict]:
    path = tmp_path / "hooks.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_config(tmp_path: Path, telegram: FakeTelegram, slack: FakeSlack | None, script: dict) -> Path:
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script))
    platforms: dict = {"telegram": {"enabled": True, "token": telegram.token, "api_base": telegram.base_url,
                                    "allow_all": True}}
    if slack is not None:
        platforms["slack"] = {"enabled": True, "bot_token": slack.bot_token, "app_token": slack.app_token,
                              "api_base": slack.api_base, "allow_all": True}
    config = tmp_path / "switchboard.yaml"
    config.write_text(yaml.safe_dump({
        "state_dir": str(tmp_path / "state"), "server": {"port": 0},
        "model": {"provider": "scripted", "script": str(tmp_path / "script.yaml")},
        "display": {"progress": "off"}, "plugins": ["turn_log"], "platforms": platforms,
    }))
    return config


async def failed_start(config: Path, tmp_path: Path) -> tuple[int, str]:
    """`switchboard run` on ``config`` to its end, which must come without a signal: status, stderr."""
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("SWITCHBOARD_CONFIG", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "gateway.cli", "--config", str(config), "run",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env, cwd=str(tmp_path))
    try:
        async with asyncio.timeout(TIMEOUT):
            _, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return proc.returncode, err.decode()


async def test_a_start_a_later_platform_fails_replays_nothing_and_the_next_replays_once(tmp_path):
    (tmp_path / "turn_log.py").write_text(textwrap.dedent(PLUGIN))
    stalled = {"parent": [[{"tool_calls": [{"name": "stall", "arguments": {}}]}]]}
    async with FakeTelegram() as telegram, FakeSlack() as slack:
        config = write_config(tmp_path, telegram, None, stalled)
        proc, _ = await start(config, tmp_path)
        try:
            telegram.push_message(42, "ping")
            await telegram.wait_for(lambda: any(e["hook"] == "model_call" for e in hook_events(tmp_path)),
                                    timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        first = hook_events(tmp_path)
        [turn_id] = {e["turn_id"] for e in first if e["hook"] == "turn_start"}

        # Telegram starts first and works; Slack, started after it, refuses the token: the start fails.
        slack.bot_token_revoked = True
        config = write_config(tmp_path, telegram, slack, stalled)
        status, stderr = await failed_start(config, tmp_path)
        assert status != 0, stderr
        assert "platform telegram started" in stderr  # the replay had its platform: only the start failed
        assert hook_events(tmp_path) == first, stderr  # no model call paid for, no hook run again

        slack.bot_token_revoked = False
        config = write_config(tmp_path, telegram, slack, {"parent": [[{"text": "pong"}]]})
        proc, _ = await start(config, tmp_path)
        try:
            await telegram.wait_for(lambda: telegram.messages["42"], timeout=30)
            await telegram.wait_for(lambda: any(e["hook"] == "turn_end" for e in hook_events(tmp_path)),
                                    timeout=30)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert [m["text"] for m in telegram.messages["42"]] == ["pong"]
    replayed = hook_events(tmp_path)[len(first):]
    assert [e["hook"] for e in replayed if e["role"] == "parent"] == ["turn_start", "model_call", "turn_end"]
    # The replay's hooks name the turn the first run's did: a plugin de-duplicates on it.
    assert {e["turn_id"] for e in replayed} == {turn_id}
    assert proc.returncode == 0
