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
from tests.plugin_modules import plugin_module

WAIT = 5.0  # seconds of real time a thread may take to reach a point the test waits for


def sending_a_csv(tmp_path, answer: str) -> tuple:
    """A configuration whose workspace holds a.csv, and a model that sends it, then answers ``answer``."""
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("a,b\n")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "a.csv"}}]},
                                       {"text": answer}]]})
    return config, model


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
    config, model = sending_a_csv(tmp_path, "sent")
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
    config, model = sending_a_csv(tmp_path, "sent")
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


BOTH_AT_ONCE = """
import asyncio

from agent.tools.send_file import FileToSend


async def send_both(args, ctx):
    send = ctx.services["send_file"]
    answers = await asyncio.gather(*(send(FileToSend(ctx.workspace / name, name, None)) for name in args["names"]))
    return " | ".join(answers)


def register(ctx):
    ctx.register_tool("send_both", "sends the files at once", {"type": "object"}, send_both)
"""


async def test_files_a_tool_sends_at_once_each_go_out_once(tmp_path, gateways, monkeypatch):
    # Each call keyed its send by the turn's count of files sent, read before its copy was made and
    # raised after: both took ``<turn>:file:0:0``, the second copy replaced the first, and the
    # outbox took the second journaling for the first one's, so one file went out and one was lost.
    plugin_module(tmp_path, monkeypatch, "both_at_once_plugin", BOTH_AT_ONCE)
    chat = TakingUploads()
    config = make_config(tmp_path, plugins=["both_at_once_plugin"])
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("first")
    (workspace / "b.csv").write_text("second")
    both = {"name": "send_both", "arguments": {"names": ["a.csv", "b.csv"]}}
    model = ScriptedModel({"parent": [[{"tool_calls": [both]}, {"text": "sent"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("send them")
    await chat.wait_for(lambda: "sent" in chat.texts())
    await settled(gateway)
    [result] = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert "a.csv (5 bytes) is queued" in result and "b.csv (6 bytes) is queued" in result
    assert chat.uploads == [b"first", b"second"]  # in the order the calls were made
    assert not (Path(config.state_dir) / "outbox-files").exists() or not any(
        (Path(config.state_dir) / "outbox-files").iterdir())


GIVES_UP_ON_ONE = """
import asyncio
import threading

from agent.tools.send_file import FileToSend

copying, release = threading.Event(), threading.Event()


async def give_up_on_one(args, ctx):
    send = ctx.services["send_file"]
    slow = asyncio.ensure_future(send(FileToSend(ctx.workspace / "a.csv", "a.csv", None)))
    assert await asyncio.to_thread(copying.wait, 5)
    slow.cancel()  # as asyncio.wait_for would on a deadline: its thread copies on
    await asyncio.gather(slow, return_exceptions=True)
    other = asyncio.ensure_future(send(FileToSend(ctx.workspace / "b.csv", "b.csv", None)))
    await asyncio.sleep(0)  # the second call's first step
    release.set()
    return await other


def register(ctx):
    ctx.register_tool("give_up_on_one", "sends a.csv, gives up on it, sends b.csv", {"type": "object"},
                      give_up_on_one)
"""


class AskedLimits(TakingUploads):
    def __init__(self, copied: threading.Event) -> None:
        super().__init__()
        self.copied, self.asked_while_copying = copied, []

    def upload_limit(self, chat_id: str) -> int:
        self.asked_while_copying.append(not self.copied.is_set())
        return super().upload_limit(chat_id)


async def test_a_send_after_one_given_up_on_mid_copy_waits_for_its_copy_and_goes_out_alone(
        tmp_path, gateways, monkeypatch):
    # The call given up on had not counted its file, so the next one took its key while its thread
    # still copied: that thread's copy could replace the next one's before it went out, or stay
    # behind once the next one's send was settled (journaled under its key, it was kept).
    plugin = plugin_module(tmp_path, monkeypatch, "gives_up_plugin", GIVES_UP_ON_ONE)
    copied = threading.Event()
    chat = AskedLimits(copied)
    keep = OutboxFiles.keep

    def slow_keep(self, key, file, *args):
        if file.path.name != "a.csv":
            return keep(self, key, file, *args)
        plugin.copying.set()
        plugin.release.wait(WAIT)
        try:
            return keep(self, key, file, *args)
        finally:
            copied.set()

    monkeypatch.setattr(OutboxFiles, "keep", slow_keep)
    config = make_config(tmp_path, plugins=["gives_up_plugin"])
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("first")
    (workspace / "b.csv").write_text("second")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "give_up_on_one", "arguments": {}}]},
                                       {"text": "sent"}]]})
    gateway = await gateways(config, [chat], model=model)
    await chat.say("send them")
    await chat.wait_for(lambda: "sent" in chat.texts())
    assert await asyncio.to_thread(copied.wait, WAIT)
    await settled(gateway)
    assert chat.asked_while_copying == [True, False]  # the second call began once the first one's copy was made
    assert chat.uploads == [b"second"]
    copies = Path(config.state_dir) / "outbox-files"
    assert not copies.exists() or list(copies.iterdir()) == []


async def test_a_copy_whose_send_the_journal_refused_is_removed_at_once(tmp_path, gateways):
    # The copy was made, then the outbox could not journal its send (a full disk): nothing would
    # ever send or remove it until the next start, on the disk that had no room.
    chat = TakingUploads()
    config, model = sending_a_csv(tmp_path, "could not send it")
    gateway = await gateways(config, [chat], model=model)
    gateway.store.db._conn.execute("CREATE TEMP TRIGGER no_files BEFORE INSERT ON gateway_outbox WHEN NEW.op = 'file'"
                                   " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    await chat.say("send it")
    await chat.wait_for(lambda: "could not send it" in chat.texts())
    await settled(gateway)
    [result] = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert "database or disk is full" in result
    assert chat.uploads == [] and gateway.store.outbox.kept_files() == []
    copies = Path(config.state_dir) / "outbox-files"
    assert not copies.exists() or list(copies.iterdir()) == []
