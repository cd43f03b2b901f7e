"""Discord across a SIGKILL: `switchboard run` killed while a user writes to it. Discord never
sends a message again, so what was said while the process was down is asked of the channel's
history at the restart (`platforms.discord_catch_up`) and answered exactly once."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import yaml

from platforms.fakes.discord import FakeDiscord
from tests.scenarios.test_outbox_restart import restarts, start

pytestmark = restarts(2)

USER = 42


async def test_messages_sent_around_a_sigkill_are_answered_once_after_the_restart(tmp_path: Path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"text": "got it"}]] * 3}))
    async with FakeDiscord() as fake:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"discord": {"enabled": True, "token": fake.token, "api_base": fake.api_base,
                                      "gateway_url": fake.gateway_url, "allow_all": True}},
        }))
        dm = fake.dm_channel(USER)
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: fake.live_connections, timeout=30)
            fake.push_dm(USER, "first")
            await fake.wait_for(lambda: fake.bot_messages(dm), timeout=30)
            fake.push_dm(USER, "second")  # perhaps heard, perhaps not: the kill comes now
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        fake.push_dm(USER, "third")  # while nothing listens
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: len(fake.bot_messages(dm)) >= 3, timeout=30)
        finally:  # a graceful stop flushes the outbox: a second answer, if one were pending, would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert [m.content for m in fake.bot_messages(dm)] == ["got it"] * 3  # each message once
    assert proc.returncode == 0
