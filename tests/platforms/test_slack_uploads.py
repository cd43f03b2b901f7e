"""An upload Slack took whose last step (``files.completeUploadExternal``) failed or lost its answer is
tried again without sharing the file twice or uploading its bytes again (`platforms.slack_uploads`).
Real slack-sdk, the real outbox, against the loopback FakeSlack."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent.testing import FakeClock
from agent.tools.send_file import FileToSend
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms.base import NetworkError, Outbound, OutboundFile
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.sink import Sink

COMPLETE = "files.completeUploadExternal"
KEY = "t1:file:0:0"
WAIT = 5.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
async def adapter(fake: FakeSlack) -> AsyncIterator[SlackAdapter]:
    adapter = SlackAdapter(bot_token=fake.bot_token, app_token=fake.app_token, api_base=fake.api_base)
    await adapter.start(Sink())
    yield adapter
    await adapter.stop()


def shares(fake: FakeSlack, channel: str = "C1") -> list[dict]:
    return [m for m in fake.messages.get((channel, None), []) if m.get("files")]


def calls(fake: FakeSlack) -> list[str]:
    return [c.method for c in fake.calls if c.method.startswith("files.") or c.method == "upload"]


@pytest.mark.parametrize("lost", [{"status": 500}, {"drop": True}], ids=["5xx", "connection_closed"])
async def test_a_file_whose_completion_answer_was_lost_is_shared_once_through_the_outbox(
        tmp_path: Path, fake: FakeSlack, adapter: SlackAdapter, lost: dict) -> None:
    clock = FakeClock()  # the outbox's backoff passes at once
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    files = OutboxFiles(tmp_path / "outbox-files")
    outbox = Outbox(store.outbox, {"slack": adapter}, clock=clock, files=files)
    await outbox.start()
    source = tmp_path / "q3.csv"
    source.write_text("region,total\n")
    files.keep(KEY, FileToSend(source, "q3.csv", None), 10_000_000, "slack")
    fake.fail_next(COMPLETE, "internal_error", after=True, **lost)  # shared; the answer is lost
    outbox.enqueue_file("slack", "C1", None, "the numbers", key=KEY)
    file_id = await outbox.wait_sent(KEY, timeout=WAIT)
    await outbox.close()
    store.close()
    [shared] = shares(fake)
    assert [f["id"] for f in shared["files"]] == [file_id] and fake.uploaded == {file_id: 1}
    assert calls(fake) == ["files.getUploadURLExternal", "upload", COMPLETE, "files.info"]
    # Not looked for in the channel's history as a post is: a file share carries no key to find it by.
    assert not fake.calls_to("conversations.history") and not fake.calls_to("conversations.replies")


async def test_a_completion_that_failed_completes_the_upload_slack_took_without_uploading_again(
        tmp_path: Path, fake: FakeSlack, adapter: SlackAdapter) -> None:
    path = tmp_path / "q3.csv"
    path.write_text("region,total\n")
    part, file = Outbound("C1", None, "the numbers", idempotency_key=KEY), OutboundFile(str(path), "q3.csv", 13)
    fake.fail_next(COMPLETE, "internal_error", status=503)  # refused before it took effect
    with pytest.raises(NetworkError):
        await adapter.send_file(part, file)
    assert shares(fake) == []
    sent = await adapter.send_file(part, file)  # the outbox's next try
    [shared] = shares(fake)
    assert [f["id"] for f in shared["files"]] == [sent.message_id] and fake.uploaded == {sent.message_id: 1}
    assert calls(fake) == ["files.getUploadURLExternal", "upload", COMPLETE, "files.info", COMPLETE]


async def test_an_upload_gone_before_its_completion_is_uploaded_anew_and_shared_once(
        tmp_path: Path, fake: FakeSlack, adapter: SlackAdapter) -> None:
    path = tmp_path / "q3.csv"
    path.write_text("region,total\n")
    part, file = Outbound("C1", None, "", idempotency_key=KEY), OutboundFile(str(path), "q3.csv", 13)
    fake.fail_next(COMPLETE, "internal_error", status=500)
    with pytest.raises(NetworkError):
        await adapter.send_file(part, file)
    fake.pending_uploads.clear()  # Slack let the upload expire, never shared
    sent = await adapter.send_file(part, file)
    [shared] = shares(fake)
    assert [f["id"] for f in shared["files"]] == [sent.message_id] and len(fake.uploaded) == 2
    assert calls(fake)[-3:] == ["files.getUploadURLExternal", "upload", COMPLETE]


async def test_without_files_read_the_upload_is_completed_all_the_same_and_the_log_says_why(
        tmp_path: Path, fake: FakeSlack, adapter: SlackAdapter, caplog) -> None:
    caplog.set_level(logging.WARNING, "platforms.slack")
    path = tmp_path / "q3.csv"
    path.write_text("region,total\n")
    part, file = Outbound("C1", None, "", idempotency_key=KEY), OutboundFile(str(path), "q3.csv", 13)
    fake.files_read_scope = False  # files.info answers missing_scope: whether it was shared is unknown
    fake.fail_next(COMPLETE, "internal_error", status=500)
    with pytest.raises(NetworkError):
        await adapter.send_file(part, file)
    sent = await adapter.send_file(part, file)
    assert [f["id"] for m in shares(fake) for f in m["files"]] == [sent.message_id]
    assert any("cannot tell whether file" in r.getMessage() and "files:read" in r.getMessage()
               for r in caplog.records)
