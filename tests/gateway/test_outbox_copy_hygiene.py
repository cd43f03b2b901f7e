"""The copies of files the agent sends (`gateway.outbox_files`): only the gateway's user reads them, and one a
stopped turn left is kept for the next start's sweep, with a line naming its send, when the journal cannot say
whether its send was journaled."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.models.scripted import ScriptedModel
from agent.tools.send_file import FileToSend
from gateway.outbox_files import OutboxFiles
from gateway.testing import make_config, settled
from tests.gateway.test_file_sends import WAIT, TakingUploads
from tests.polling import until


@pytest.fixture
def umask_022() -> Iterator[None]:
    """systemd's and Docker's umask, which leaves a file opened without a mode readable by everyone."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("umask_022")
def test_a_files_copy_is_its_owners_alone_as_the_files_people_send_are(tmp_path) -> None:
    # The copy was written 0644 (the umask's default), where the attachments people send are 0600: a state
    # directory restored or copied without its 0700 left what the agent sent a chat for every user to read.
    (tmp_path / "report.csv").write_text("a,b\n1,2\n")
    files = OutboxFiles(tmp_path / "outbox-files")
    files.keep("t1:file:0:0", FileToSend(tmp_path / "report.csv", "report.csv", None), 1000, "the test chat")
    copy = Path(files.get("t1:file:0:0").path)
    assert copy.read_text() == "a,b\n1,2\n"
    assert (mode(copy), mode(copy.parent), mode(files.root)) == (0o600, 0o700, 0o700)
    # One made again for the same send (a turn run again after a restart) is no looser.
    files.keep("t1:file:0:0", FileToSend(tmp_path / "report.csv", "report.csv", None), 1000, "the test chat")
    assert mode(Path(files.get("t1:file:0:0").path)) == 0o600


async def test_a_stopped_turns_copy_is_kept_for_the_sweep_when_the_journal_cannot_be_read(
        tmp_path, gateways, monkeypatch, caplog) -> None:
    # The check whether the stopped call's send was journaled runs in a done-callback: the journal's error
    # there (a lock, a disk error) reached the loop's handler, logged as an "Exception in callback" naming
    # neither the send nor what became of its copy.
    chat = TakingUploads()
    config = make_config(tmp_path, agent={"toolsets": ["file"]})
    workspace = Path(config.state_dir) / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "a.csv").write_text("a,b\n")
    model = ScriptedModel({"parent": [[{"tool_calls": [{"name": "send_file", "arguments": {"path": "a.csv"}}]},
                                       {"text": "sent"}]]})
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
    loop = asyncio.get_running_loop()
    loop_errors: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: loop_errors.append(context))
    try:
        await chat.say("send it")
        assert await asyncio.to_thread(copying.wait, WAIT)
        await chat.say("/stop")
        await chat.wait_for(lambda: chat.messages)
        outbox = gateway.store.outbox
        journaled = outbox.has_message

        def locked(key: str) -> bool:
            if ":file:" in key:
                raise sqlite3.OperationalError("database is locked")
            return journaled(key)

        monkeypatch.setattr(outbox, "has_message", locked)
        with caplog.at_level(logging.WARNING, logger="gateway.outbox"):
            release.set()
            assert await asyncio.to_thread(copied.wait, WAIT)
            told = lambda: [r for r in caplog.records if "cannot tell whether the send" in r.getMessage()]  # noqa: E731
            await until(lambda: told() or loop_errors)
        monkeypatch.setattr(outbox, "has_message", journaled)
        await settled(gateway)
    finally:
        loop.set_exception_handler(None)
    assert [c.get("message") for c in loop_errors] == []
    [line] = told()
    key = re.search(r"the send (\S+:file:0:0) ", line.getMessage()).group(1)
    assert line.levelname == "WARNING"
    assert f"send {key} of a stopped turn" in line.getMessage()
    assert "(OperationalError: database is locked)" in line.getMessage()
    assert "kept until the next start removes it" in line.getMessage()
    copy = OutboxFiles(Path(config.state_dir) / "outbox-files").get(key)
    assert copy is not None and Path(copy.path).read_bytes() == b"a,b\n"  # left for the sweep
    assert outbox.kept_files() == [] and chat.uploads == []
