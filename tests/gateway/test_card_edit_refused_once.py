"""A progress message (a notice or card) whose one edit the platform refuses as an edit of that message
(`EditUnsupported`): the state goes out as a new message that later edits follow, and the first one is deleted
rather than left above it reading ``⏳ …`` for good. Where the platform will not delete it either, it is left as
it is, logged: nothing else is sent or edited for it."""

from __future__ import annotations

import logging

import pytest

from platforms.base import EditUnsupported, NotFound
from tests.gateway.test_outbox import FakeAdapter, clock, make, sent, store  # noqa: F401 (fixtures)


class DeletingAdapter(FakeAdapter):
    """`FakeAdapter` that can delete, refusing as scripted (`fail_next` on ``delete`` calls too)."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.deletes_refused: list[BaseException] = []

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        self.calls.append(("delete", chat_id, message_id, 0.0))
        if self.deletes_refused:
            raise self.deletes_refused.pop(0)
        self.messages.pop(message_id, None)


async def card_refused_once(make, clock, refusal, *, kind="notice"):  # noqa: F811
    adapter = DeletingAdapter(clock=clock)
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "⏳ v1", kind=kind, key="card")
    old = await sent(outbox, "card:0")
    adapter.fail_next(refusal)
    outbox.enqueue_edit("fake", "c1", None, "card:0", "⏳ v2", key="e1")
    new = await sent(outbox, "e1:0")
    assert new != old
    return adapter, outbox, old, new


async def test_a_card_whose_edit_was_refused_once_is_replaced_not_left_running(make, store, clock):  # noqa: F811
    # Before, the first message stayed in the chat reading `⏳ v1` above the one that went on, also once the
    # work was over and the new one read `✓ Done`.
    adapter, outbox, old, new = await card_refused_once(make, clock, EditUnsupported("message can't be edited"))
    assert adapter.messages == {new: "⏳ v2"}
    outbox.enqueue_edit("fake", "c1", None, "card:0", "✓ Done", key="final")
    assert await sent(outbox, "final:0") == new  # later edits follow the new message
    assert adapter.messages == {new: "✓ Done"}
    assert [op for op, *_ in adapter.calls] == ["send", "edit", "send", "delete", "edit"]


async def test_where_the_platform_will_not_delete_it_either_the_old_card_is_left_and_logged(
        make, store, clock, caplog):  # noqa: F811
    adapter = DeletingAdapter(clock=clock)
    adapter.deletes_refused.append(EditUnsupported("message can't be deleted"))
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, "⏳ v1", kind="notice", key="card")
    old = await sent(outbox, "card:0")
    adapter.fail_next(EditUnsupported("message can't be edited"))
    with caplog.at_level(logging.INFO, logger="gateway"):
        outbox.enqueue_edit("fake", "c1", None, "card:0", "⏳ v2", key="e1")
        new = await sent(outbox, "e1:0")
        assert await outbox.flush(timeout=5)
    assert adapter.messages == {old: "⏳ v1", new: "⏳ v2"}  # no third message, no other edit of it
    assert [op for op, *_ in adapter.calls] == ["send", "edit", "send", "delete"]
    assert any("the message it was to edit is left as it is (EditUnsupported)" in m for m in caplog.messages)


@pytest.mark.parametrize("refusal, kind", [
    (NotFound("message to edit not found"), "notice"),  # gone already: nothing to delete
    (EditUnsupported("message can't be edited"), "interim"),  # not a progress message: what it said stands
])
async def test_only_a_progress_message_the_platform_cannot_edit_is_deleted(make, store, clock, refusal, kind):  # noqa: F811
    adapter, _, old, new = await card_refused_once(make, clock, refusal, kind=kind)
    assert "delete" not in [op for op, *_ in adapter.calls]
    assert adapter.messages == {old: "⏳ v1", new: "⏳ v2"}
