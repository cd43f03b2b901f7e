"""The backup and restore of docs/configuration.md ("the state directory"), done as written: `switchboard run`
in a subprocess, its database copied with `VACUUM INTO` while replies are still owed, the state directory
lost, the backup put in place of a fresh one, and the gateway started on it."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import sqlite3
from pathlib import Path

import yaml

from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post
from tests.scenarios.test_outbox_restart import restarts, start

pytestmark = restarts(2)

SECRET = "backup-secret"
FOLDERS = ("outbox-files", "webhook-files")
"""What the docs say to copy beside the database, for the sends it still owes."""


async def owed(db: Path, count: int) -> None:
    """Until the running gateway has journaled ``count`` sends, none of them settled yet."""
    async with asyncio.timeout(15):
        while True:
            with contextlib.closing(sqlite3.connect(db)) as conn:
                if conn.execute("SELECT count(*) FROM gateway_outbox WHERE status='pending'").fetchone()[0] == count:
                    return
            await asyncio.sleep(0.05)  # another process: nothing to wait on but its database


def back_up(state: Path, backups: Path) -> None:
    """The documented online backup: the database in one read transaction, then the folders of its sends."""
    with contextlib.closing(sqlite3.connect(state / "switchboard.db", isolation_level=None)) as live:
        live.execute("VACUUM INTO ?", (str(backups / "switchboard.db"),))
    for folder in FOLDERS:
        shutil.copytree(state / folder, backups / folder)


def restore(backups: Path, state: Path) -> None:
    """The documented restore, onto a state directory that is gone (a new disk): no -wal or -shm to move."""
    state.mkdir(mode=0o700)
    shutil.copyfile(backups / "switchboard.db", state / "switchboard.db")
    for folder in FOLDERS:
        shutil.copytree(backups / folder, state / folder)


async def test_a_backup_taken_while_replies_are_owed_sends_them_after_a_restore_and_nothing_answered_before_it(
        tmp_path):
    state, backups = tmp_path / "state", tmp_path / "backups"
    backups.mkdir()
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "report.csv", "content": "a,b\n1,2\n"}}]},
        {"tool_calls": [{"name": "send_file", "arguments": {"path": "report.csv", "caption": "the report"}}]},
        {"text": "here it is"},
    ]]}))
    async with WebhookReceiver(SECRET) as receiver:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(state), "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"webhook": {"enabled": True, "toolsets": ["file"], "routes": {
                "hook": {"secret": SECRET, "deliver_url": receiver.url}}}},
        }))
        proc, base = await start(config, tmp_path)
        try:
            await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "first", "chat_id": "a"})
            await receiver.wait_for(lambda: len(receiver.unique) == 2, timeout=15)  # its file and its reply
            await owed(state / "switchboard.db", 0)
            receiver.fail_next(10_000, 503)
            await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "second", "chat_id": "b"})
            await owed(state / "switchboard.db", 2)
            back_up(state, backups)
            receiver.heal()  # sent after the backup: the restored gateway sends them again, as the docs admit
            await receiver.wait_for(lambda: len(receiver.unique) == 4, timeout=30)
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
        assert proc.returncode == 0

        state.rename(tmp_path / "lost")
        restore(backups, state)
        proc, base = await start(config, tmp_path)
        try:
            await receiver.wait_for(lambda: sum(d.duplicate for d in receiver.deliveries) == 2, timeout=30)
            [file] = [d.json["file"] for d in receiver.deliveries if d.duplicate and d.json["kind"] == "file"]
            download = await signed_get(f"{base}{file['path']}", SECRET)
        finally:  # a graceful stop flushes the outbox: a reply owed a second time would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    assert proc.returncode == 0
    assert download.status == 200 and download.body == b"a,b\n1,2\n"
    sent = [d for d in receiver.deliveries if d.status == 200]
    by_chat = {chat: [(d.json["kind"], d.duplicate) for d in sent if d.json["chat_id"] == chat] for chat in "ab"}
    assert by_chat == {"a": [("file", False), ("reply", False)],  # settled before the backup: never again
                       "b": [("file", False), ("reply", False), ("file", True), ("reply", True)]}
