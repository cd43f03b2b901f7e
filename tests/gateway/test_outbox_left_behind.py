"""A progress message whose edit the platform refused goes out anew, and the message it was to edit is
deleted (`tests/gateway/test_card_edit_refused_once.py`), also when a reply queued while the new one waited
its turn went first: the sender lets the reply by and comes back to the card later."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from platforms.base import EditUnsupported
from tests.gateway.test_card_edit_refused_once import DeletingAdapter
from tests.gateway.test_outbox import WAIT, make, sent, store  # noqa: F401 (fixtures)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(autojump=False)  # the card's new message waits its pace while the reply comes


async def test_a_card_sent_anew_deletes_the_one_left_behind_after_a_reply_went_first(make, store, clock):  # noqa: F811
    # Before, the reply returned the card's part unsent, and its next try forgot which message it replaced:
    # that one stayed in the chat reading `⏳ v1` for good, above the answer.
    adapter = DeletingAdapter(clock=clock, send_interval=1.0)
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "⏳ v1", kind="notice", key="card")
    old = await sent(outbox, "card:0")
    adapter.fail_next(EditUnsupported("message can't be edited"))
    outbox.enqueue_edit("fake", "c1", None, "card:0", "⏳ v2", key="e1")
    await clock.until_sleeping()  # the edit's pace
    clock.advance(1.0)
    await adapter.until(lambda: len(adapter.calls) == 2)  # refused: its state now waits to go out anew
    await clock.until_sleeping()
    outbox.enqueue("fake", "c1", None, "the answer", kind="reply", key="r")
    clock.autojump = True
    clock.advance(1.0)
    assert await outbox.flush(timeout=WAIT)
    new = await sent(outbox, "e1:0")
    assert [(op, text) for op, _, text, _ in adapter.calls] == [
        ("send", "⏳ v1"), ("edit", "⏳ v2"), ("send", "the answer"), ("send", "⏳ v2"), ("delete", old)]
    assert adapter.messages == {"m2": "the answer", new: "⏳ v2"}
    assert outbox._sender.remembered == 0
