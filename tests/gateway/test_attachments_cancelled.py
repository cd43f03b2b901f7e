"""gateway.attachments cancelled midway, as the turn runner cancels it when a stop ends the turn: a file
being stored is stored whole first, so the stopped turn leaves nothing half-written behind it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from agent.testing import FakeClock
from gateway import attachments
from gateway.attachments import prepare
from platforms.base import Attachment

WAIT = 5.0  # seconds of real time a thread may take to reach a point the test waits for
STILL = 0.05  # seconds of real time in which a cancelled `prepare` that did not wait would have ended


class Files:
    max_attachment_bytes = 1000

    async def download(self, attachment: Attachment) -> bytes:
        return b"hello"


async def test_a_cancel_while_a_file_is_stored_waits_for_it_to_be_whole(tmp_path: Path, monkeypatch) -> None:
    storing, go_on = threading.Event(), threading.Event()
    store = attachments.store

    def slow_store(*args: object) -> str:  # a large file on a slow disk
        storing.set()
        go_on.wait(WAIT)
        return store(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(attachments, "store", slow_store)
    doc = Attachment("document", "notes.txt", "text/plain", 5, "d1")
    preparing = asyncio.ensure_future(prepare(Files(), "telegram", (doc,), "read this", workspace=tmp_path,
                                              folder="s-1", supports_vision=False, clock=FakeClock()))
    await asyncio.to_thread(storing.wait, WAIT)
    preparing.cancel()
    done, _ = await asyncio.wait({preparing}, timeout=STILL)
    assert not done  # its thread still writes: the turn does not end before it
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(preparing, WAIT)
    folder = tmp_path / "attachments" / "s-1"
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]  # whole, and no temporary file left
    assert (folder / "notes.txt").read_bytes() == b"hello"
