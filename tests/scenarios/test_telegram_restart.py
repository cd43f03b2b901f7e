"""Telegram polling across a SIGKILL: `switchboard run` killed right after Telegram served it
updates, an album still gathering and a text perhaps not yet recorded. Restarted on the same state
directory, it is served them again (nothing was confirmed that was not recorded) and answers each
message once."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import yaml

from platforms.fakes.telegram import FakeTelegram
from tests.scenarios.test_outbox_restart import restarts, start

pytestmark = restarts(2)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 200


async def test_updates_served_before_a_sigkill_are_answered_once_after_the_restart(tmp_path: Path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"text": "got it"}]]}))
    async with FakeTelegram() as fake:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"telegram": {"enabled": True, "token": fake.token, "api_base": fake.base_url,
                                       "allow_all": True}},
        }))
        proc, _ = await start(config, tmp_path)
        try:
            served = [*fake.push_album(42, [PNG, PNG], caption="compare these"), fake.push_message(43, "hello")]
            await fake.wait_for(lambda: set(served) <= set(fake.served), timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert set(served) <= {u["update_id"] for u in fake.pending}  # none confirmed: the album was gathering
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: fake.messages["42"] and fake.messages["43"] and not fake.pending, timeout=30)
        finally:  # a graceful stop flushes the outbox: a second reply, if one were pending, would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert [m["text"] for m in fake.messages["42"]] == ["got it"]  # one turn for the album
    assert [m["text"] for m in fake.messages["43"]] == ["got it"]
    assert proc.returncode == 0
