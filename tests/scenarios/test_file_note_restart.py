"""The note for a file that could not be sent survives a SIGKILL: `switchboard run` is killed while the note,
journaled in the commit that records the file failed, is on its way to Telegram, with the turn's answer
queued behind the file. Restarted on the same state directory, the note goes out once, in the file's place:
ahead of the answer, which was journaled before it."""

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

SEND = {"tool_calls": [{"name": "send_file", "arguments": {"path": "report.csv"}}]}
NOTE = "(The file report.csv could not be sent here: the platform refused it.)"


def answer_journaled(state: Path) -> bool:
    with contextlib.closing(sqlite3.connect(state / "switchboard.db")) as db:
        return db.execute("SELECT 1 FROM gateway_outbox WHERE kind='reply' AND op='send'").fetchone() is not None


async def test_a_file_note_cut_off_by_a_sigkill_goes_once_in_the_files_place(tmp_path: Path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[SEND, {"text": "here it is"}]]}))
    state = tmp_path / "state"
    (state / "workspace").mkdir(parents=True)
    (state / "workspace" / "report.csv").write_text("as asked\n")
    async with FakeTelegram() as fake:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(state), "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"telegram": {"enabled": True, "token": fake.token, "api_base": fake.base_url,
                                       "allow_all": True, "toolsets": ["file"]}},
        }))
        fake.hold("sendDocument")  # until the answer is journaled behind the file
        proc, _ = await start(config, tmp_path)
        try:
            fake.push_message(42, "the report please")
            await fake.wait_for(lambda: fake.calls_to("sendDocument"), timeout=30)
            await fake.wait_for(lambda: answer_journaled(state), timeout=30)
            fake.fail_next("sendDocument", 400, description="Bad Request: wrong file identifier/HTTP URL specified")
            fake.hang_next("sendMessage")  # the note's send: killed before Telegram answers
            fake.release("sendDocument")
            await fake.wait_for(lambda: fake.calls_to("sendMessage"), timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert fake.messages.get("42", []) == []
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: len(fake.messages.get("42", [])) == 2, timeout=30)
        finally:  # a graceful stop flushes the outbox: a second note, if one were pending, would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert [m.get("text") for m in fake.messages["42"]] == [NOTE, "here it is"]
    assert len(fake.calls_to("sendDocument")) == 1  # failed for good: not tried again
    assert proc.returncode == 0
