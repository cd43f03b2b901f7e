"""The copy of a file whose send failed is kept for the console's Retry while its row is, and removed by
the retention sweep that forgets the row: left to the next start, a gateway running for months kept a copy
of every file a platform ever refused."""

from __future__ import annotations

import time
from pathlib import Path

from agent.models.scripted import ScriptedModel
from agent.testing import FakeClock
from gateway.retention import COPY_GRACE_SECONDS
from gateway.store.outbox_rows import RETENTION_SECONDS
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import BadRequest, Outbound, OutboundFile, Sent

FILES = 3


class RefusingUploads(RecordingAdapter):
    """Takes files, but the platform refuses every upload for good (a permission it lacks)."""

    caption_limit = 100

    def upload_limit(self, chat_id: str) -> int:
        return 1000

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        raise BadRequest("missing_scope", method="files.completeUploadExternal", chat_id=message.chat_id)


async def test_failed_files_copies_go_with_their_forgotten_rows_and_no_sooner(tmp_path, gateways):
    clock = FakeClock(autojump=False, start=time.time())  # the copies' times are the file system's
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("a,b\n")
    send = [{"tool_calls": [{"name": "send_file", "arguments": {"path": "a.csv"}}]}, {"text": "sent"}]
    chat = RefusingUploads()
    gateway = await gateways(config, [chat], model=ScriptedModel({"parent": [send] * FILES}), clock=clock)
    for n in range(FILES):
        await chat.say(f"send it ({n})", chat=f"c{n}")
        await chat.wait_for(lambda: len(chat.texts("reply")) > n)
    await settled(gateway)
    copies = Path(config.state_dir) / "outbox-files"
    assert len(gateway.store.outbox.with_status("failed", 10)) == FILES
    assert len(list(copies.iterdir())) == FILES

    clock.advance(RETENTION_SECONDS - 60)  # kept for a retry while the rows are
    gateway.retention.sweep()
    assert len(list(copies.iterdir())) == FILES

    clock.advance(120)
    gateway.retention.sweep()
    assert gateway.store.outbox.kept_files() == []
    assert list(copies.iterdir()) == []


async def test_a_copy_no_send_names_yet_is_spared_while_it_may_be_journaled(tmp_path, gateways):
    clock = FakeClock(autojump=False, start=time.time())
    config = make_config(tmp_path)
    gateway = await gateways(config, [RecordingAdapter()], clock=clock)
    copies = Path(config.state_dir) / "outbox-files"
    made = copies / "t-1%3Afile%3A0%3A0"
    made.mkdir(parents=True)  # copied just now; its send is journaled once the copy's thread is done
    (made / "a.csv").write_text("x")
    gateway.retention.sweep()
    assert made.exists()
    clock.advance(COPY_GRACE_SECONDS + 60)  # no send named it for a day: its turn stopped with the journal unreadable
    gateway.retention.sweep()
    assert not made.exists()
