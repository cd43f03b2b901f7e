"""A progress message (a notice or card) whose edit the platform refuses as a bad request (`BadRequest`:
Discord's cap on edits of a message over an hour old, say): its state goes out as a new message that later edits
follow, and the first one is deleted, as for an edit refused as unsupported, rather than left above it reading
``⏳ …`` for good. A bad request that was the text's fault is refused as a new message too: nothing is deleted."""

from __future__ import annotations

from gateway.outbox import Outbox
from platforms.base import BadRequest
from tests.gateway.test_card_edit_refused_once import DeletingAdapter, card_refused_once
from tests.gateway.test_outbox import clock, make, sent, store  # noqa: F401 (fixtures)

OLD_MESSAGE = BadRequest("400 (code 30046): Maximum number of edits to messages older than 1 hour reached")


async def test_a_card_whose_edit_was_refused_as_a_bad_request_is_replaced_not_left_running(
        make, store, clock):  # noqa: F811
    # Before, only an edit refused as unsupported deleted the card it was to edit: this one stayed in the chat
    # reading `⏳ v1` above the new one, also once the work was over and the new one read `✓ Done`.
    adapter, outbox, old, new = await card_refused_once(make, clock, OLD_MESSAGE)
    assert adapter.messages == {new: "⏳ v2"}
    outbox.enqueue_edit("fake", "c1", None, "card:0", "✓ Done", key="final")
    assert await sent(outbox, "final:0") == new  # later edits follow the new message
    assert adapter.messages == {new: "✓ Done"}
    assert [op for op, *_ in adapter.calls] == ["send", "edit", "send", "delete", "edit"]


async def test_a_bad_request_for_the_texts_sake_deletes_nothing(make, store, clock):  # noqa: F811
    adapter = DeletingAdapter(clock=clock)
    outbox: Outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "⏳ v1", kind="notice", key="card")
    old = await sent(outbox, "card:0")
    adapter.fail_next(BadRequest("can't parse entities"), BadRequest("can't parse entities"))
    outbox.enqueue_edit("fake", "c1", None, "card:0", "⏳ v2", key="e1")
    assert await outbox.flush(timeout=5)
    assert adapter.messages == {old: "⏳ v1"}  # the one card there is stays
    assert [op for op, *_ in adapter.calls] == ["send", "edit", "send"]
