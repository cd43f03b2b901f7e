"""A model's text past its platform's bound (`gateway.long_messages`): ``answer.md``'s copy is written, flushed and
renamed in a worker thread (`Outbox.enqueue_long`), as its split is, so every other chat is served meanwhile; the
row naming it commits after it, and a cancellation meanwhile is handled as one during the split."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from agent.testing import FakeClock
from gateway.long_messages import FILE_PART
from gateway.outbox import Outbox
from gateway.outbox_files import OutboxFiles
from gateway.store import GatewayStore
from tests.gateway.test_long_messages import TEXT, TakesFiles

KEY = "t1:reply"


class HeldCopies(OutboxFiles):
    """Real copies, each held before it is written until ``release`` (at most 2 s: on the event loop, nothing
    could release it)."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.writing = threading.Event()
        self.release = threading.Event()
        self.written = threading.Event()
        self.released: list[bool] = []
        """Per copy, whether it was released while held, not let go by the timeout."""

    def keep_bytes(self, key: str, name: str, data: bytes) -> int:
        self.writing.set()
        self.released.append(self.release.wait(2))
        try:
            return super().keep_bytes(key, name, data)
        finally:
            self.written.set()


@pytest.fixture
def store(tmp_path):
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    yield store
    store.close()


def journaling(store: GatewayStore, files: OutboxFiles, *, keep: bool = False) -> asyncio.Future[list[str]]:
    """A long reply journaled by an outbox not started (what it journals stays pending in the store)."""
    outbox = Outbox(store.outbox, {"chat": TakesFiles()}, clock=FakeClock(), files=files, max_parts=lambda _: 3)
    return asyncio.ensure_future(outbox.enqueue_long("chat", "c1", None, TEXT, kind="reply", key=KEY, turn_id="t1",
                                                     journal_if_cancelled=keep))


async def test_the_copy_is_written_while_the_loop_serves_others_and_commits_before_its_row(store, tmp_path):
    # Before, the copy was written on the event loop: 10 MB took some 100 ms, every chat's sends, typing and HTTP
    # routes held meanwhile.
    files = HeldCopies(tmp_path / "outbox-files")
    reply = journaling(store, files)
    assert await asyncio.to_thread(files.writing.wait, 5)
    served = asyncio.ensure_future(asyncio.sleep(0, "another chat"))
    assert await served == "another chat" and not reply.done()
    assert not store.outbox.has_message(f"{KEY}:0")  # nothing names the copy before it is on disk
    files.release.set()
    assert await reply == [f"{KEY}:0", f"{KEY}:1", f"{KEY}:2", KEY + FILE_PART]
    assert files.released == [True]
    copy = files.get(KEY + FILE_PART)
    assert copy is not None and Path(copy.path).read_bytes() == TEXT.encode()
    assert store.outbox.message(KEY + FILE_PART).op == "file"


async def test_journaled_again_it_keeps_no_second_copy(store, tmp_path):
    files = HeldCopies(tmp_path / "outbox-files")
    files.release.set()
    await journaling(store, files)
    await journaling(store, files)
    assert files.released == [True]  # one copy made


async def test_a_reply_cancelled_while_its_copy_is_written_is_journaled_then_cancelled(store, tmp_path):
    # A turn's reply at a shutdown (``journal_if_cancelled``): as for a cancellation during its split.
    files = HeldCopies(tmp_path / "outbox-files")
    reply = journaling(store, files, keep=True)
    assert await asyncio.to_thread(files.writing.wait, 5)
    reply.cancel()
    await asyncio.sleep(0)
    assert not reply.done()
    files.release.set()
    with pytest.raises(asyncio.CancelledError):
        await reply
    assert store.outbox.message(KEY + FILE_PART).op == "file" and files.get(KEY + FILE_PART) is not None


@pytest.mark.parametrize("keep", [False, True], ids=["send_message", "a-reply-cancelled-twice"])
async def test_cancelled_while_its_copy_is_written_it_journals_nothing_and_the_copy_goes_at_the_sweep(
        store, tmp_path, keep):
    files = HeldCopies(tmp_path / "outbox-files")
    reply = journaling(store, files, keep=keep)
    assert await asyncio.to_thread(files.writing.wait, 5)
    reply.cancel()
    if keep:
        await asyncio.sleep(0)
        reply.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reply
    files.release.set()
    assert await asyncio.to_thread(files.written.wait, 5)
    assert not store.outbox.has_message(f"{KEY}:0") and files.get(KEY + FILE_PART) is not None
    # The retention sweep spares copies younger than a day (one may be about to be journaled); a day later:
    assert files.sweep(store.outbox.kept_files(), made_before=time.time() + 1) == 1
    assert files.get(KEY + FILE_PART) is None
