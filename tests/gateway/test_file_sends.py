"""The gateway's ``send_file`` service: where the chat's platform takes no files the model is told
so and nothing is journaled or copied; a file's copy is kept while its send may still go out."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from pathlib import Path

import pytest

from agent.models.scripted import ScriptedModel
from agent.tools.send_file import FileToSend
from gateway.outbox_files import OutboxFiles
from gateway.testing import RecordingAdapter, make_config, settled
from platforms.base import BadRequest, Outbound, OutboundFile, Sent

WAIT = 5.0  # seconds of real time a thread may take to reach a point the test waits for


async def test_a_platform_without_file_uploads_refuses_clearly_and_journals_nothing(tmp_path, gateways):
    chat = RecordingAdapter()  # no send_file: a platform without uploads
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    (Path(config.state_dir) / "workspace").mkdir(parents=True)
    (Path(config.state_dir) / "workspace" / "a.csv").write_text("x")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "a.csv"}}]},
                                       {"text": "it is in the workspace"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("send it")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    [result] = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert "This chat's platform (chat) cannot receive files yet; nothing was sent." in result
    assert chat.texts() == ["it is in the workspace"]
    assert gateway.store.outbox.kept_files() == []
    assert not (Path(config.state_dir) / "outbox-files").exists()


class RefusingUploads(RecordingAdapter):
    """Takes files, but the platform refuses every upload for good (a permission it lacks)."""

    caption_limit = 100

    def upload_limit(self, chat_id: str) -> int:
        return 1000

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        self.uploads.append(Path(file.path).read_bytes())
        raise BadRequest("missing_scope", method="files.completeUploadExternal", chat_id=message.chat_id)


async def test_a_failed_files_copy_is_kept_for_a_retry_until_it_is_dismissed(tmp_path, gateways):
    chat = RefusingUploads()
    chat.uploads = []
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("first")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "a.csv"}}]},
                                       {"text": "sent"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("send it")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    [failed] = gateway.store.outbox.with_status("failed", 10)
    copies = Path(config.state_dir) / "outbox-files"
    assert failed.op == "file" and len(list(copies.iterdir())) == 1
    (workspace / "a.csv").write_text("changed")
    assert gateway.outbox.retry(failed.id)
    await settled(gateway)
    assert chat.uploads == [b"first", b"first"]  # the retry sends the copy, not the workspace file
    assert gateway.outbox.dismiss(failed.id)
    assert list(copies.iterdir()) == []


async def test_a_copy_no_pending_or_failed_send_names_is_removed_at_start(tmp_path, gateways):
    config = make_config(tmp_path)
    stray = Path(config.state_dir) / "outbox-files" / "t-gone%3Afile%3A0%3A0"
    stray.mkdir(parents=True)  # copied, then the process died before the send was journaled
    (stray / "a.csv").write_text("x")
    await gateways(config, [RecordingAdapter()])
    assert list(stray.parent.iterdir()) == []


class TakingUploads(RecordingAdapter):
    """Takes files up to 1000 bytes and records each upload's bytes."""

    caption_limit = 100

    def __init__(self) -> None:
        super().__init__()
        self.uploads: list[bytes] = []

    def upload_limit(self, chat_id: str) -> int:
        return 1000

    async def send_file(self, message: Outbound, file: OutboundFile) -> Sent:
        self.uploads.append(Path(file.path).read_bytes())
        return await self.send(message)


def _symlink_to_outside(target: Path, outside: Path) -> None:
    target.unlink()
    target.symlink_to(outside / "secret.txt")


def _fifo(target: Path, outside: Path) -> None:
    target.unlink()
    os.mkfifo(target)  # a copy opened by path waits for a writer for ever


def _folder_symlink_to_outside(target: Path, outside: Path) -> None:
    folder = target.parent
    shutil.rmtree(folder)
    folder.symlink_to(outside)  # outside/report.csv: the last part is no symlink, a folder on the way is


@pytest.mark.parametrize("swap, refusal", [
    (_symlink_to_outside, "changed after it was checked: a symlink"),
    (_fifo, "is not a regular file"),
    (_folder_symlink_to_outside, "changed after it was checked: a symlink"),
    (None, "has 2 hard links"),
])
async def test_a_file_swapped_after_its_check_or_linked_outside_is_refused_and_nothing_is_copied(
        tmp_path, gateways, monkeypatch, swap, refusal):
    chat = TakingUploads()
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    (workspace / "out").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("token=s3cret")
    (outside / "report.csv").write_text("token=s3cret")
    report = workspace / "out" / "report.csv"
    if swap is None:  # a hard link is what it was when checked: the check by path cannot see the other name
        os.link(outside / "secret.txt", report)
    else:
        report.write_text("a,b\n1,2\n")
        keep = OutboxFiles.keep

        def swapped_then_kept(self, *args):  # the tool checked the path; the gateway is about to copy it
            swap(report, outside)
            return keep(self, *args)

        monkeypatch.setattr(OutboxFiles, "keep", swapped_then_kept)
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "out/report.csv"}}]},
                                       {"text": "carried on"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("send the report")
    await chat.wait_for(lambda: chat.messages)
    await settled(gateway)
    [result] = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert f"'out/report.csv' {refusal}" in result and "nothing was sent" in result
    assert chat.texts() == ["carried on"] and chat.uploads == []
    assert gateway.store.outbox.kept_files() == []
    assert not (Path(config.state_dir) / "outbox-files").exists()


def test_a_files_copy_is_in_its_folder_on_disk_before_the_folder_is_renamed_into_place(tmp_path, fsyncs) -> None:
    # The folder's own names were not flushed before its rename: after a power cut the renamed
    # folder, journaled as the send's copy, could come back empty.
    (tmp_path / "report.csv").write_text("a,b\n1,2\n")
    files = OutboxFiles(tmp_path / "outbox-files")
    files.keep("t1:file:0:0", FileToSend(tmp_path / "report.csv", "report.csv", None), 1000, "the test chat")
    copy = Path(files.get("t1:file:0:0").path)
    assert fsyncs.of(copy, copy.parent, files.root) == [
        (copy, None), (copy.parent, {"report.csv"}), (files.root, {copy.parent.name})]


@pytest.mark.usefixtures("folders_not_flushable")
async def test_a_file_is_sent_from_a_state_dir_whose_file_system_flushes_no_folders(tmp_path, gateways, caplog):
    # Its copy's folder could not be flushed (EINVAL), so every send_file failed, "nothing was sent",
    # where memory notes and stored attachments carry on with a warning.
    chat = TakingUploads()
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("a,b\n")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "a.csv"}}]},
                                       {"text": "sent"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("send it")
    await chat.wait_for(lambda: "sent" in chat.texts())
    await settled(gateway)
    [result] = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert "is queued to this chat" in result
    assert chat.uploads == [b"a,b\n"]
    assert "could not be flushed" in caplog.text


async def test_a_copy_a_stop_cut_short_is_removed_once_it_is_made(tmp_path, gateways, monkeypatch):
    # The stop cancelled the turn while its worker thread copied the file: the thread went on, renamed
    # the copy into place, and nothing journaled a send for it, so it stayed until the next start.
    chat = TakingUploads()
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("a,b\n")
    copying, release, copied = threading.Event(), threading.Event(), threading.Event()
    keep = OutboxFiles.keep

    def slow_keep(self, *args):
        copying.set()
        release.wait(WAIT)
        try:
            return keep(self, *args)
        finally:
            copied.set()

    monkeypatch.setattr(OutboxFiles, "keep", slow_keep)
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "a.csv"}}]},
                                       {"text": "sent"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("send it")
    assert await asyncio.to_thread(copying.wait, WAIT)
    await chat.say("/stop")
    await chat.wait_for(lambda: chat.messages)
    release.set()
    assert await asyncio.to_thread(copied.wait, WAIT)
    await settled(gateway)
    copies = Path(config.state_dir) / "outbox-files"
    assert gateway.store.outbox.kept_files() == [] and chat.uploads == []
    assert not copies.exists() or list(copies.iterdir()) == []
