"""A file the agent sent survives a SIGKILL: `switchboard run` is killed after the send is
journaled (Telegram answering 429 to it, a webhook receiver 503) while the turn still runs; the
workspace file is then changed. Restarted on the same state directory, the turn runs again and
the file arrives once, as it was when the agent sent it."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import yaml

from platforms.fakes.telegram import FakeTelegram
from platforms.fakes.webhook_receiver import WebhookReceiver, signed_get, signed_post
from tests.scenarios.test_outbox_restart import SECRET, restarts, start

pytestmark = restarts(2)

SEND = {"tool_calls": [{"name": "send_file", "arguments": {"path": "report.csv", "caption": "the report"}}]}


async def test_a_journaled_file_is_sent_once_from_its_copy_after_a_sigkill(tmp_path: Path):
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[SEND, {"wait": "never", "text": "cut short"}]]}))
    workspace = tmp_path / "state" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "report.csv").write_text("as asked\n")
    async with FakeTelegram() as fake:
        config = tmp_path / "switchboard.yaml"
        settings = {
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"telegram": {"enabled": True, "token": fake.token, "api_base": fake.base_url,
                                       "allow_all": True, "toolsets": ["file"]}},
        }
        config.write_text(yaml.safe_dump(settings))
        fake.fail_next("sendDocument", status=429, retry_after=5)  # long enough to kill it first
        proc, _ = await start(config, tmp_path)
        try:
            fake.push_message(42, "the report please")
            await fake.wait_for(lambda: fake.calls_to("sendDocument"), timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        assert fake.messages["42"] == []
        (workspace / "report.csv").write_text("changed afterwards\n")
        script.write_text(yaml.safe_dump({"parent": [[SEND, {"text": "sent it"}]]}))
        # The 429's retry time is journaled: restarted, the outbox waited out what was left of its 5 s.
        config.write_text(yaml.safe_dump({**settings, "delivery": {"max_retry_after": 0.1}}))
        proc, _ = await start(config, tmp_path)
        try:
            await fake.wait_for(lambda: len(fake.messages["42"]) == 2, timeout=30)
        finally:  # a graceful stop flushes the outbox: a second copy, if one were pending, would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    document, reply = fake.messages["42"]
    assert (document["document"]["data"], document["caption"]) == (b"as asked\n", "the report")
    assert reply["text"] == "sent it"
    assert len(fake.calls_to("sendDocument")) == 2  # the 429 before the kill, the one after
    assert list((tmp_path / "state" / "outbox-files").iterdir()) == []
    assert proc.returncode == 0


async def test_a_file_for_a_webhook_is_delivered_and_kept_once_across_a_sigkill(tmp_path: Path):
    """The receiver got the file's delivery before the kill but had not answered (it may have
    stored it): after the restart the same delivery comes again, same key, same download, one kept file."""
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"parent": [[SEND, {"wait": "never", "text": "cut short"}]]}))
    workspace = tmp_path / "state" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "report.csv").write_text("as asked\n")
    async with WebhookReceiver(SECRET) as receiver:
        config = tmp_path / "switchboard.yaml"
        config.write_text(yaml.safe_dump({
            "state_dir": str(tmp_path / "state"), "server": {"port": 0},
            "model": {"provider": "scripted", "script": str(script)},
            "platforms": {"webhook": {"enabled": True, "toolsets": ["file"], "routes": {
                "hook": {"secret": SECRET, "deliver_url": receiver.url}}}},
        }))
        receiver.hold_next(1)  # in flight when killed: not retried before, due at once after the restart
        proc, base = await start(config, tmp_path)
        try:
            await signed_post(f"{base}/webhooks/hook", SECRET, {"text": "the report please"})
            await receiver.wait_for(lambda: receiver.deliveries, timeout=30)
        finally:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
        (workspace / "report.csv").write_text("changed afterwards\n")
        script.write_text(yaml.safe_dump({"parent": [[SEND, {"text": "sent it"}]]}))
        proc, base = await start(config, tmp_path)
        try:
            await receiver.wait_for(lambda: len(receiver.unique) == 2, timeout=30)
            file, reply = receiver.payloads
            download = await signed_get(base + file["file"]["path"], SECRET)
        finally:  # a graceful stop flushes the outbox: a second copy, if one were pending, would go out now
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 30)
    refused, delivered = [d for d in receiver.deliveries if d.json["kind"] == "file"]
    assert refused.idempotency_key == delivered.idempotency_key and refused.json == delivered.json
    assert (file["text"], file["file"]["name"], reply["text"]) == ("the report", "report.csv", "sent it")
    assert (download.status, download.body) == (200, b"as asked\n")
    kept = sorted(p.name for p in (tmp_path / "state" / "webhook-files").iterdir())
    assert kept == sorted([".id-key", file["file"]["id"]])  # one copy of the file, and the ids' key
    assert list((tmp_path / "state" / "outbox-files").iterdir()) == []
    assert proc.returncode == 0
