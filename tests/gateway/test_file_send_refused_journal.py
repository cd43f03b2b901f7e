"""A file send the journal refuses (a full disk) whose journal then cannot be read either: its copy is left for the
next start's sweep (`OutboxFiles.sweep`), and a line names the send and the journal's error. `FileSends._refused`
ignored that error without a word, where the same case of a stopped turn's copy (`_forget_copy`) was logged."""

from __future__ import annotations

import logging
import re
import sqlite3
from pathlib import Path

from gateway.outbox_files import OutboxFiles
from gateway.testing import settled
from tests.gateway.test_file_sends import TakingUploads, sending_a_csv


async def test_a_refused_sends_copy_kept_for_the_sweep_is_named_in_the_log(tmp_path, gateways, monkeypatch,
                                                                            caplog) -> None:
    chat = TakingUploads()
    config, model = sending_a_csv(tmp_path, "could not send it")
    gateway = await gateways(config, [chat], model=model)
    gateway.store.db._conn.execute("CREATE TEMP TRIGGER no_files BEFORE INSERT ON gateway_outbox WHEN NEW.op = 'file'"
                                   " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    outbox = gateway.store.outbox
    journaled, enqueue_file = outbox.has_message, gateway.outbox.enqueue_file
    refused: list[str] = []

    def refusing(*args, key: str, **kwargs):
        try:
            return enqueue_file(*args, key=key, **kwargs)
        except sqlite3.Error:
            refused.append(key)
            raise

    def locked(key: str) -> bool:  # once the journal refused the send, it cannot be read either
        if key in refused:
            raise sqlite3.OperationalError("database is locked")
        return journaled(key)

    monkeypatch.setattr(gateway.outbox, "enqueue_file", refusing)
    monkeypatch.setattr(outbox, "has_message", locked)
    with caplog.at_level(logging.WARNING, logger="gateway.outbox"):
        await chat.say("send it")
        await chat.wait_for(lambda: "could not send it" in chat.texts())
    monkeypatch.setattr(outbox, "has_message", journaled)
    await settled(gateway)
    [result] = [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"]
    assert "database or disk is full" in result  # the model is told, as before
    [line] = [r for r in caplog.records if "cannot tell whether the send" in r.getMessage()]
    assert line.levelname == "WARNING"
    key = re.search(r"the send (\S+:file:0:0) the journal refused", line.getMessage()).group(1)
    assert [key] == refused and "(OperationalError: database is locked)" in line.getMessage()
    assert "kept until the next start removes it" in line.getMessage()
    copy = OutboxFiles(Path(config.state_dir) / "outbox-files").get(key)
    assert copy is not None and Path(copy.path).read_bytes() == b"a,b\n"  # left for the sweep
    assert chat.uploads == [] and outbox.kept_files() == []
