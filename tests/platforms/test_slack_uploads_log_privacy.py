"""An upload shared already is logged by its file id, not the file's name: the name is the model's word, often a
user's, and the operator's log is often shipped where many read it. Real slack-sdk, the real outbox, FakeSlack."""

from __future__ import annotations

import logging
from pathlib import Path

from agent.testing import FakeClock
from agent.tools.send_file import FileToSend
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from platforms.fakes.slack import FakeSlack
from platforms.slack import SlackAdapter
from tests.platforms.test_slack_uploads import COMPLETE, KEY, WAIT, adapter, fake, shares  # noqa: F401

NAME = "Ana Souza payslip.csv"


async def test_a_file_shared_already_is_logged_by_id(
        tmp_path: Path, fake: FakeSlack, adapter: SlackAdapter, caplog) -> None:  # noqa: F811
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    files = OutboxFiles(tmp_path / "outbox-files")
    outbox = Outbox(store.outbox, {"slack": adapter}, clock=clock, files=files)
    await outbox.start()
    source = tmp_path / NAME
    source.write_text("month,net\n")
    files.keep(KEY, FileToSend(source, NAME, None), 10_000_000, "slack")
    fake.fail_next(COMPLETE, "internal_error", after=True, status=500)  # shared; the answer is lost
    with caplog.at_level(logging.INFO):
        outbox.enqueue_file("slack", "C1", None, "the payslip", key=KEY)
        file_id = await outbox.wait_sent(KEY, timeout=WAIT)
    await outbox.close()
    store.close()
    assert len(shares(fake)) == 1
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert any(f"file {file_id} had been shared already" in line for line in lines)
    assert not [line for line in lines if "Souza" in line]
