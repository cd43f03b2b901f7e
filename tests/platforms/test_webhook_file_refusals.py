"""A receiver refusing file deliveries for good (405, 410, 413, 415, 422) is logged as its refusal of text deliveries
is: once per chat and refusal, at WARNING, the chat's next message going at once. Each refused file was one more line,
every file of a chat whose receiver takes no files. The real adapter, outbox and store against the loopback
receiver."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest

from agent.testing import FakeClock
from agent.tools.send_file import FileToSend
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms.fakes.webhook_receiver import WebhookReceiver
from platforms.webhook import WebhookAdapter

SECRET = "file-refusal-secret-0123456789"
NOW = 1_700_000_000.0
WAIT = 5.0


def keep(files: OutboxFiles, tmp_path: Path, key: str) -> None:
    source = tmp_path / "q3.csv"
    source.write_text("region,total\n")
    files.keep(key, FileToSend(source, "q3.csv", None), 10_000_000, "webhook")


@pytest.mark.parametrize("status", [415, 422])
async def test_refused_files_are_warned_of_once_per_chat_and_the_chat_goes_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, status: int) -> None:
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    files = OutboxFiles(tmp_path / "outbox-files")
    caplog.set_level(logging.INFO)
    async with WebhookReceiver(SECRET, clock=lambda: NOW) as receiver:
        adapter = WebhookAdapter({"hook": (SECRET, receiver.url)}, clock=lambda: NOW,
                                 files_dir=tmp_path / "webhook-files")
        outbox = Outbox(store.outbox, {"webhook": adapter}, clock=clock, files=files, rng=random.Random(1))
        await outbox.start()
        try:
            receiver.fail_next(3, status=status)
            keys = [f"t{n}:file:0:0" for n in range(3)]
            for n, key in enumerate(keys):
                keep(files, tmp_path, key)
                outbox.enqueue_file("webhook", "hook:ops", None, f"report {n}", key=key, turn_id=f"t{n}")
            outbox.enqueue("webhook", "hook:ops", None, "after", kind="reply", key="t9:reply", turn_id="t9")
            for key in keys:
                assert await outbox.wait_sent(key, timeout=WAIT) is None
            assert await outbox.wait_sent("t9:reply:0", timeout=WAIT) is not None
        finally:
            await outbox.close()
            await adapter.stop()
            store.close()
    assert clock.sleeps == []  # none retried: the chat's next message went at once
    assert [d.status for d in receiver.deliveries] == [status, status, status, 200]
    lines = [r for r in caplog.records if "answered HTTP" in r.getMessage()]
    assert [r.levelno for r in lines] == [logging.WARNING], [r.getMessage() for r in lines]
    assert "t0:file:0:0" in lines[0].getMessage() and "scripted failure" in lines[0].getMessage()
