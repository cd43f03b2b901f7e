"""A turn's progress card across a SIGKILL: the turn runs again after the restart, and its card,
left reading ``⏳`` by the process that died, is finalised with it, however fast the second run is."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
from pathlib import Path

import yaml

from platforms.fakes.telegram import FakeTelegram
from tests.scenarios.test_outbox_restart import restarts, start

pytestmark = restarts(2)


async def card_recorded_sent(tmp_path: Path) -> None:
    """Wait until the running gateway has recorded its card sent: killed before, it would send the card
    again after the restart (Telegram cannot be asked whether it got there), which is not what this tests."""
    async with asyncio.timeout(15):
        while True:
            with contextlib.closing(sqlite3.connect(tmp_path / "state" / "switchboard.db")) as db:
                if db.execute("SELECT 1 FROM gateway_outbox WHERE kind='notice' AND status='sent'").fetchone():
                    return
            await asyncio.sleep(0.05)


async def test_a_card_left_working_by_a_sigkill_is_finalised_by_a_fast_rerun_of_its_turn(tmp_path: Path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[{"hang": True}]]}))
    async with FakeTelegram() as fake:
        config = tmp_path / "switchboard.yaml"

        def configure(progress_delay: float) -> None:
            config.write_text(yaml.safe_dump({
                "state_dir": str(tmp_path / "state"), "server": {"port": 0},
                "model": {"provider": "scripted", "script": str(script)},
                "display": {"progress": "card", "progress_delay": progress_delay},
                "platforms": {"telegram": {"enabled": True, "token": fake.token, "api_base": fake.base_url,
                                           "allow_all": True}},
            }))

        configure(progress_delay=0)  # the card at once: the first run is there to leave it
        proc, _ = await start(config, tmp_path)
        try:
            fake.push_message(42, "take your time")
            await fake.wait_for(lambda: fake.messages["42"], timeout=30)  # the card, the turn still running
            await card_recorded_sent(tmp_path)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        [card] = fake.messages["42"]
        assert card["text"].startswith("⏳")
        # The turn runs again, answering before a card of its own would be due, also on a loaded machine.
        script.write_text(yaml.safe_dump({"parent": [[{"text": "all done"}]]}))
        configure(progress_delay=60)
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: any(m["text"] == "all done" for m in fake.messages["42"]), timeout=30)
            await fake.wait_for(lambda: not card["text"].startswith("⏳"), timeout=10)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert card["text"].startswith("✓"), card["text"]
    assert [m["text"] for m in fake.messages["42"]][1:] == ["all done"]
