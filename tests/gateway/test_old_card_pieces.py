"""Cards an older build split into several messages: it journaled a card (and each edit of it) too long
for one message in parts ``{key}:0``, ``{key}:1``... and re-split one the platform refused in pieces
``/a``, ``/b``..., each past the first a message of its own. This build keeps a card one message
(`gateway.progress_message`, `gateway.resplit`); the extra messages of such a card, replayed after the
upgrade, are finished with it rather than left showing its stale lines, and the extra parts still
pending are never sent."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.progress_message import ProgressMessage
from gateway.store import GatewayStore, NewMessage, OutboxRows
from tests.gateway.test_outbox import WAIT, FakeAdapter
from tests.gateway.test_outbox_card_changes import DeletingAdapter

CHAT = ("fake", "c1", None)


def old_row(key: str, text: str, *, op: str = "send", target: str | None = None) -> NewMessage:
    return NewMessage(key, *CHAT, text, kind="notice", op=op, target_key=target, silent=True, turn_id="t",
                      tried=True)


def sent_the_old_way(rows: OutboxRows, adapter: FakeAdapter) -> None:
    """What the older build left in the chat: the card re-split in two pieces (the platform refused it as
    too long), its second part a third message, and an edit's overflow a fourth."""
    rows.add_messages([old_row("t:card:0", "⏳ Thinking — 4 s\n✓ one\n✓ two"),
                       old_row("t:card:0/a", "⏳ Thinking — 4 s\n✓ one"), old_row("t:card:0/b", "✓ two"),
                       old_row("t:card:1", "✓ three"),
                       old_row("t:card-edit-r1-1:0", "⏳ Running fetch — 6 s\n✓ one", op="edit", target="t:card:0"),
                       old_row("t:card-edit-r1-1:1", "✓ two\n✓ three\n✓ four")])
    shown = {"t:card:0": "old0", "t:card:0/a": "old0", "t:card:0/b": "old1", "t:card:1": "old2",
             "t:card-edit-r1-1:0": "old0", "t:card-edit-r1-1:1": "old3"}
    for key, message_id in shown.items():
        rows.mark_sent(rows.message(key).id, message_id)
    rows.set_op(rows.message("t:card:0").id, "split")
    adapter.messages.update({"old0": "⏳ Running fetch — 6 s\n✓ one", "old1": "✓ two", "old2": "✓ three",
                             "old3": "✓ two\n✓ three\n✓ four"})


@pytest.mark.parametrize("deletes", [True, False], ids=["deleting", "editing"])
@pytest.mark.parametrize("delete", [True, False], ids=["deleted", "finalised"])
async def test_the_extra_messages_of_a_card_an_older_build_split_are_finished_with_it(tmp_path, deletes, delete):
    clock = FakeClock()
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = DeletingAdapter(clock=clock) if deletes else FakeAdapter(clock=clock)
    sent_the_old_way(state.outbox, adapter)
    outbox = Outbox(state.outbox, {"fake": adapter}, clock=clock)  # the upgraded build
    await outbox.start()
    try:
        card = ProgressMessage(outbox, CHAT, "t:card", turn_id="t", run_id="r2")  # the turn, run again, ends
        card.finish("✓ Done in 9 s", delete=delete)
        assert await outbox.flush(timeout=WAIT)
        if deletes:  # the card's extra messages are deleted, whichever way the card itself is finished
            assert adapter.messages == ({} if delete else {"old0": "✓ Done in 9 s"})
        else:  # nothing the chat shows reads ⏳ or stale lines of the card
            assert adapter.messages == {f"old{n}": "✓ Done in 9 s" for n in range(4)}
        assert not [op for op, *_ in adapter.calls if op == "send"]
    finally:
        await outbox.close()
        state.close()


async def test_the_extra_parts_of_a_card_an_older_build_left_pending_are_never_sent(tmp_path):
    clock = FakeClock()
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    rows = state.outbox
    rows.add_messages([old_row("t:card:0", "⏳ Thinking — 2 s\n✓ one"), old_row("t:card:1", "✓ two")])
    rows.mark_sent(rows.message("t:card:0").id, "old0")
    rows.add_messages([old_row("t:card-edit-r1-1:0", "⏳ Thinking — 4 s\n✓ one", op="edit", target="t:card:0"),
                       old_row("t:card-edit-r1-1:1", "✓ two\n✓ three")])  # the build stopped with these pending
    adapter = DeletingAdapter(clock=clock)
    adapter.messages["old0"] = "⏳ Thinking — 2 s\n✓ one"
    outbox = Outbox(rows, {"fake": adapter}, clock=clock)
    await outbox.start()
    try:
        assert await outbox.flush(timeout=WAIT)
        assert [(op, text) for op, _, text, _ in adapter.calls] == [("edit", "⏳ Thinking — 4 s\n✓ one")]
        assert [rows.message(k).status for k in ("t:card:1", "t:card-edit-r1-1:1")] == ["dropped"] * 2
        ProgressMessage(outbox, CHAT, "t:card", turn_id="t", run_id="r2").finish("✓ Done in 6 s", delete=False)
        assert await outbox.flush(timeout=WAIT)
        assert adapter.messages == {"old0": "✓ Done in 6 s"}
    finally:
        await outbox.close()
        state.close()
