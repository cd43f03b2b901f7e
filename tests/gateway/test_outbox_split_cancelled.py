"""`Outbox.enqueue_long` cancelled while its text is split: a turn's reply at a shutdown (``journal_if_cancelled``)
finishes the split under way and is journaled before the cancellation is raised; cancelled again, it gives up."""

from __future__ import annotations

import asyncio

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.splitting import split_text
from gateway.store import GatewayStore
from tests.gateway.test_long_replies import HeldSplit

TEXT = "\n\n".join(f"Paragraph {n}: " + "word " * 40 for n in range(10))


class CountedSplit(HeldSplit):
    """`HeldSplit`, counting the splits begun (each first measures the whole text)."""

    def __init__(self) -> None:
        super().__init__()
        self.splits = 0

    def measure(self, text: str) -> int:
        self.splits += text == TEXT
        return super().measure(text)


@pytest.fixture
def store(tmp_path):
    store = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    yield store
    store.close()


def not_started(store: GatewayStore, chat: CountedSplit) -> Outbox:
    """An outbox not started: what it journals stays in the store, pending."""
    return Outbox(store.outbox, {"chat": chat}, clock=FakeClock())


async def test_cancelled_while_splitting_it_finishes_that_split_then_raises(store):
    chat = CountedSplit()
    outbox = not_started(store, chat)
    firsts: list[None] = []
    journaling = asyncio.ensure_future(outbox.enqueue_long("chat", "c1", None, TEXT, kind="reply", key="t1:reply",
                                                           first=lambda: firsts.append(None),
                                                           journal_if_cancelled=True))
    assert await asyncio.to_thread(chat.splitting.wait, 10)
    journaling.cancel()
    await asyncio.sleep(0)  # it has taken its cancellation: the split goes on
    assert not journaling.done()
    chat.release.set()
    with pytest.raises(asyncio.CancelledError):
        await journaling
    assert chat.splits == 1 and firsts == [None]
    parts = split_text(TEXT, 1000)
    assert [store.outbox.message(f"t1:reply:{i}").text for i in range(len(parts))] == parts


async def test_cancelled_twice_while_splitting_it_journals_nothing(store):
    chat = CountedSplit()
    outbox = not_started(store, chat)
    journaling = asyncio.ensure_future(outbox.enqueue_long("chat", "c1", None, TEXT, kind="reply", key="t1:reply",
                                                           journal_if_cancelled=True))
    assert await asyncio.to_thread(chat.splitting.wait, 10)
    journaling.cancel()
    await asyncio.sleep(0)
    journaling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await journaling
    chat.release.set()
    assert not outbox.journaled("t1:reply:0")


async def test_the_reply_is_journaled_in_the_callers_commit(store, monkeypatch):
    # The turn records its end right after its reply is journaled, in the same commit: committed apart, a crash
    # between the two sent the reply after the restart and ran its message again, answering it twice.
    chat = CountedSplit()
    chat.release.set()
    outbox = not_started(store, chat)
    commits: list[None] = []
    commit = store.db.commit
    monkeypatch.setattr(store.db, "commit", lambda: (commits.append(None), commit())[1])
    await outbox.enqueue_long("chat", "c1", None, TEXT, kind="reply", key="t1:reply", journal_if_cancelled=True)
    assert outbox.journaled("t1:reply:0") and commits == []
