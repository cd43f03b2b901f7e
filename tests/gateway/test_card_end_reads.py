"""What a progress message's end reads: the extra messages an older build left past a card's first
(`Outbox.extra_messages`, `gateway.resplit.past_the_first`) are looked for only when the state file
holds any, asked once; a state file this build wrote holds none, and then a card's end pays for no
read of the card's sent rows."""

from __future__ import annotations

import pytest

from agent.testing import FakeClock
from gateway import resplit
from gateway.outbox import Outbox
from gateway.progress_message import ProgressMessage
from gateway.store import GatewayStore
from tests.gateway.test_old_card_pieces import CHAT, old_row, sent_the_old_way
from tests.gateway.test_outbox import WAIT
from tests.gateway.test_outbox_card_changes import DeletingAdapter

SENT_PROGRESS = "status='sent' AND message_id IS NOT NULL AND op != 'split' ORDER BY id"
"""What `OutboxRows.sent_progress` reads by: a card's sent rows, read by its end on an upgraded state file."""


async def test_a_card_ends_without_reading_its_sent_rows_when_no_older_build_left_extras(tmp_path):
    clock = FakeClock()
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = DeletingAdapter(clock=clock)
    outbox = Outbox(state.outbox, {"fake": adapter}, clock=clock)
    await outbox.start()
    statements: list[str] = []
    try:
        for n in range(3):  # turns of this build: each card sent, edited, deleted at its end
            card = ProgressMessage(outbox, CHAT, f"t{n}:card", turn_id=f"t{n}", run_id="r1")
            card.publish("⏳ Thinking — 2 s", 0)
            assert await outbox.flush(timeout=WAIT)
            card.publish("⏳ Running fetch — 4 s", 1)
            assert await outbox.flush(timeout=WAIT)
            state.db._conn.set_trace_callback(statements.append)
            try:
                card.finish("✓ Done in 5 s", delete=True)
            finally:
                state.db._conn.set_trace_callback(None)
            assert await outbox.flush(timeout=WAIT)
        assert adapter.messages == {}
        assert statements  # the trace hook saw the finish's own reads and writes
        assert not [s for s in statements if SENT_PROGRESS in s or "FROM gateway_outbox WHERE kind='notice'" in s]
    finally:
        await outbox.close()
        state.close()


async def test_extras_an_older_build_sent_are_found_once_and_finished_with_their_card(tmp_path):
    clock = FakeClock()
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = DeletingAdapter(clock=clock)
    sent_the_old_way(state.outbox, adapter)
    outbox = Outbox(state.outbox, {"fake": adapter}, clock=clock)
    await outbox.start()
    statements: list[str] = []
    state.db._conn.set_trace_callback(statements.append)
    try:
        ProgressMessage(outbox, CHAT, "t:card", turn_id="t", run_id="r2").finish("✓ Done in 9 s", delete=True)
        ProgressMessage(outbox, CHAT, "u:card", turn_id="u", run_id="r1").finish("✓ Done in 1 s", delete=True)
        assert await outbox.flush(timeout=WAIT)
        assert adapter.messages == {}  # the card and the three extra messages the older build sent
        assert not [s for s in statements if "FROM gateway_outbox WHERE kind='notice'" in s]  # asked at start
    finally:
        state.db._conn.set_trace_callback(None)
        await outbox.close()
        state.close()


async def test_an_older_builds_failed_extra_retried_by_the_operator_is_finished_with_its_card(tmp_path):
    clock = FakeClock()
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    rows = state.outbox
    rows.add_messages([old_row("t:card:0", "⏳ Thinking — 2 s\n✓ one"), old_row("t:card:1", "✓ two")])
    rows.mark_sent(rows.message("t:card:0").id, "old0")
    rows.mark_failed(rows.message("t:card:1").id, "network")
    adapter = DeletingAdapter(clock=clock)
    adapter.messages["old0"] = "⏳ Thinking — 2 s\n✓ one"
    outbox = Outbox(rows, {"fake": adapter}, clock=clock)
    await outbox.start()
    try:
        assert outbox.retry(rows.message("t:card:1").id)
        assert await outbox.flush(timeout=WAIT)
        assert sorted(adapter.messages.values()) == ["⏳ Thinking — 2 s\n✓ one", "✓ two"]
        ProgressMessage(outbox, CHAT, "t:card", turn_id="t", run_id="r2").finish("✓ Done in 6 s", delete=True)
        assert await outbox.flush(timeout=WAIT)
        assert adapter.messages == {}
    finally:
        await outbox.close()
        state.close()


FIRSTS = ["t:card:0", "t:card:0/a", "t:card:0/a/a", "t:card-edit-r1-2:0", "t:card-edit-r1-2:0/a/a/a/a",
          "t:card-final-r1:0"]
EXTRAS = ["t:card:1", "t:card:12", "t:card:0/b", "t:card:0/a/b", "t:card:0/z000025", "t:card-edit-r1-2:3/a",
          "t:card:0/aa"]


@pytest.mark.parametrize("key", FIRSTS + EXTRAS)
def test_the_store_offers_every_sent_progress_row_past_the_first_and_no_first(tmp_path, key):
    state = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    try:
        rows = state.outbox
        rows.add_messages([old_row(key, "x")])
        rows.mark_sent(rows.message(key).id, "m1")
        offered = rows.sent_progress_extras()
        assert resplit.past_the_first(key) == (key in EXTRAS)
        assert offered == ([key] if key in EXTRAS else [])
    finally:
        state.close()


def test_the_store_offers_no_row_that_is_not_sent_progress(tmp_path):
    state = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    try:
        rows = state.outbox
        rows.add_messages([old_row("t:card:1", "pending"), old_row("t:card:2", "dropped"),
                           old_row("t:card:3", "failed")])
        rows.drop([rows.message("t:card:2").id])
        rows.mark_failed(rows.message("t:card:3").id, "refused")
        assert rows.sent_progress_extras() == []
    finally:
        state.close()
