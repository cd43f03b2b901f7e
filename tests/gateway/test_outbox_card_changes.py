"""The outbox's changes of a progress card: its final edit is not given up on while the platform
only refuses it for now; a card or an edit of it too long for the platform is one message, what fits
of it; and a card re-split in pieces is withdrawn whole, its pieces with it."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.progress_message import ProgressMessage
from gateway.splitting import split_text
from gateway.store import GatewayStore, NewMessage, OutboxRows
from platforms.base import BadRequest, NetworkError, RateLimited
from tests.gateway.test_outbox import WAIT, FakeAdapter, sent


class DeletingAdapter(FakeAdapter):
    """`FakeAdapter` that can delete what it sent (`platforms.base.Deleting`)."""

    async def delete(self, chat_id: str, thread_id: str | None, message_id: str) -> None:
        await self._call("delete", chat_id, "")
        self.messages.pop(message_id, None)


class PiecesAdapter(FakeAdapter):
    """`FakeAdapter` that also refuses the calls carrying given texts (a re-split piece, say), once each."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.refuse: dict[str, list[BaseException]] = {}

    async def _call(self, op: str, chat_id: str, text: str) -> None:
        await super()._call(op, chat_id, text)
        if self.refuse.get(text):
            raise self.refuse[text].pop(0)


async def test_a_cards_final_edit_refused_past_the_deadline_is_tried_until_the_platform_takes_it(make):
    # An outage of the platform outlasts give_up_after just as the turn ends: once the platform is
    # back, the card reads how the turn ended, not ⏳ for good.
    adapter = FakeAdapter(clock=(clock := FakeClock()))
    outbox, store = await make(adapter, clock, give_up_after={"fake": 20.0})
    outbox.enqueue("fake", "c1", None, "⏳ Thinking — 5 s", kind="notice", key="t:notice", turn_id="t", silent=True)
    card = await sent(outbox, "t:notice:0")
    adapter.fail_next(*[NetworkError("HTTP 502") for _ in range(30)], chat="c1")
    journaled = clock.now
    outbox.enqueue_edit("fake", "c1", None, "t:notice:0", "✓ Done in 42 s", key="t:notice-final-r1")
    assert await sent(outbox, "t:notice-final-r1:0") == card
    assert adapter.messages[card] == "✓ Done in 42 s"
    assert clock.now - journaled > 10 * 20.0  # tried well past the deadline,
    assert max(clock.sleeps) <= 60.0 * 1.25  # never more than the longest backoff apart
    assert store.message("t:notice-final-r1:0").attempts == 31


async def test_a_cards_change_tried_past_the_deadline_holds_no_reply_back(make):
    adapter = PiecesAdapter(clock=(clock := FakeClock()))
    outbox, store = await make(adapter, clock, give_up_after={"fake": 20.0})
    outbox.enqueue("fake", "c1", None, "⏳ Thinking — 5 s", kind="notice", key="t:notice", turn_id="t", silent=True)
    card = await sent(outbox, "t:notice:0")
    adapter.refuse["✓ Done in 42 s"] = [NetworkError("HTTP 502") for _ in range(30)]
    journaled = clock.now
    outbox.enqueue_edit("fake", "c1", None, "t:notice:0", "✓ Done in 42 s", key="t:notice-final-r1")
    await adapter.until(lambda: len(adapter.calls) >= 12)
    assert clock.now - journaled > 20.0  # past its deadline
    outbox.enqueue("fake", "c1", None, "the next answer", kind="reply", key="t2:reply", turn_id="t2")
    assert await sent(outbox, "t2:reply:0") is not None
    assert store.message("t:notice-final-r1:0").status == "pending"
    assert await sent(outbox, "t:notice-final-r1:0") == card
    assert adapter.messages[card] == "✓ Done in 42 s"


async def test_a_card_edit_too_long_for_the_platform_edits_the_card_with_what_fits(make):
    # The card's text measured under the adapter's limit, over the platform's (Telegram's 100 entities, say).
    # It was sent anew, in pieces: the card stayed reading ⏳ above them for good, the pieces after the first
    # never finalised.
    clock = FakeClock()
    adapter = PiecesAdapter(clock=clock, text_limit=100, accept_limit=20)
    outbox, store = await make(adapter, clock)
    outbox.enqueue("fake", "c1", None, "⏳ Thinking — 5 s", kind="notice", key="t:notice", turn_id="t", silent=True)
    card = await sent(outbox, "t:notice:0")
    text = "⏳ Running search — 9 s\n✓ list_files\n▸ search"
    assert len(text) > 20
    outbox.enqueue_edit("fake", "c1", None, "t:notice:0", text, key="t:notice-edit-r1-1")
    assert await sent(outbox, "t:notice-edit-r1-1:0") == card
    assert adapter.messages == {card: split_text(text, len(text) // 2)[0]}  # the headline and what fits
    outbox.enqueue_edit("fake", "c1", None, "t:notice:0", "✓ Done in 12 s", key="t:notice-final-r1")
    assert await sent(outbox, "t:notice-final-r1:0") == card
    assert adapter.messages == {card: "✓ Done in 12 s"}
    assert [op for op, *_ in adapter.calls] == ["send", "edit", "edit", "edit"]  # refused, cut, finalised


async def test_a_card_too_long_for_the_platform_is_one_message_of_what_fits(make):
    # Its first send refused as too long: re-split, every piece went out as a message of its own, and only
    # the first was ever edited again; the others kept the card's lines under the answer for good.
    clock = FakeClock()
    adapter = PiecesAdapter(clock=clock, text_limit=100, accept_limit=20)
    outbox, store = await make(adapter, clock)
    text = "⏳ Running search — 5 s\n✓ list_files\n▸ search"
    outbox.enqueue("fake", "c1", None, text, kind="notice", key="t:notice", turn_id="t", silent=True)
    card = await sent(outbox, "t:notice:0")
    assert adapter.texts() == [split_text(text, len(text) // 2)[0]]
    outbox.enqueue_edit("fake", "c1", None, "t:notice:0", "✓ Done in 6 s", key="t:notice-final-r1")
    assert await sent(outbox, "t:notice-final-r1:0") == card
    assert adapter.messages == {card: "✓ Done in 6 s"}
    assert [r.key for r in store.pieces("t:notice:0")] == ["t:notice:0/a"]


async def test_a_card_edit_re_split_is_replaced_by_a_newer_one(make):
    # The piece an edit too long was cut to waits out a 429 when a newer state of the card comes: only
    # the newest goes out, and the replaced edit is dropped, not failed (the console lists failed ones).
    clock = FakeClock(autojump=False)
    adapter = PiecesAdapter(clock=clock, text_limit=100, accept_limit=20)
    outbox, store = await make(adapter, clock)
    outbox.enqueue("fake", "c1", None, "⏳ Thinking — 5 s", kind="notice", key="t:notice", turn_id="t", silent=True)
    card = await sent(outbox, "t:notice:0")
    text = "⏳ Running search — 9 s\n✓ list_files\n▸ search"
    adapter.refuse[split_text(text, len(text) // 2)[0]] = [RateLimited("429", retry_after=30)]
    outbox.enqueue_edit("fake", "c1", None, "t:notice:0", text, key="t:notice-edit-r1-1")
    await clock.until_sleeping(1, lasting=30)
    outbox.enqueue_edit("fake", "c1", None, "t:notice:0", "✓ Done in 12 s", key="t:notice-final-r1")
    clock.advance(30)
    assert await sent(outbox, "t:notice-final-r1:0") == card
    assert adapter.messages == {card: "✓ Done in 12 s"}
    assert [store.message(k).status for k in ("t:notice-edit-r1-1:0", "t:notice-edit-r1-1:0/a")] == ["dropped"] * 2


async def test_a_card_withdrawn_while_what_fits_of_it_waits_is_never_sent(make):
    # The card's text was too long for the platform after all: cut to what fits, that piece waits out a
    # 429 as the turn ends. It never follows the answer (it would read ⏳ under it for good).
    clock = FakeClock(autojump=False)
    adapter = PiecesAdapter(clock=clock, text_limit=100, accept_limit=20)
    outbox, store = await make(adapter, clock)
    text = "⏳ Running search — 5 s\n▸ search"
    piece = split_text(text, len(text) // 2)[0]
    adapter.refuse[piece] = [RateLimited("429", retry_after=30)]
    outbox.enqueue("fake", "c1", None, text, kind="notice", key="t:notice", turn_id="t", silent=True)
    await clock.until_sleeping(1, lasting=30)
    # The turn ends (`ProgressMessage.finish`): the card was on its way, so its final edit is queued.
    assert not outbox.withdraw("fake", "c1", None, "t:notice:0")
    outbox.enqueue_edit("fake", "c1", None, "t:notice:0", "✓ Done in 6 s", key="t:notice-final-r1")
    outbox.enqueue("fake", "c1", None, "the answer", kind="reply", key="t:reply", turn_id="t")
    clock.advance(30)
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == ["the answer"]
    assert [store.message(k).status for k in ("t:notice:0", "t:notice:0/a", "t:notice-final-r1:0")] == \
        ["dropped"] * 3


async def test_deleting_a_re_split_card_whose_piece_went_out_before_a_restart_deletes_that_piece(tmp_path):
    # The last process re-split the card and died after its first piece went out. The deletion that finishes
    # it (`progress_final: delete`) found the re-split part pending, dropped it and journaled nothing: the
    # piece in the chat read ⏳ for good.
    clock = FakeClock()
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        rows = state.outbox
        rows.add_messages([NewMessage("t:notice:0", "fake", "c1", None, "⏳ one two three four", kind="notice",
                                      silent=True, turn_id="t", tried=True),
                           NewMessage("t:notice:0/a", "fake", "c1", None, "⏳ one two", kind="notice", silent=True,
                                      turn_id="t", sequence=0, tried=True),
                           NewMessage("t:notice:0/b", "fake", "c1", None, "three four", kind="notice", silent=True,
                                      turn_id="t", sequence=0)])
        rows.set_op(rows.message("t:notice:0").id, "split")
        rows.mark_sent(rows.message("t:notice:0/a").id, "old")
        adapter = DeletingAdapter(clock=clock)
        adapter.messages["old"] = "⏳ one two"
        outbox = Outbox(rows, {"fake": adapter}, clock=clock)
        assert outbox.enqueue_delete("fake", "c1", None, "t:notice:0", "✓ Done in 6 s", key="t:notice-final-r2")
        await outbox.start()
        assert await outbox.flush(timeout=WAIT)
        assert adapter.messages == {}
        assert [(op, text) for op, _, text, _ in adapter.calls] == [("delete", "")]
        assert [rows.message(k).status for k in ("t:notice:0", "t:notice:0/b")] == ["dropped"] * 2
        await outbox.close()
    finally:
        state.close()


@pytest.mark.parametrize("final", ["edit", "delete"])
async def test_a_card_whose_send_failed_gets_no_final_line_after_the_answer(make, final):
    # The card's send was refused for good (a 400) while its turn ran: its final edit, having no message
    # to edit, was sent anew, a "✓ Done" under the answer of a card nobody saw.
    clock = FakeClock()
    adapter = DeletingAdapter(clock=clock)
    outbox, store = await make(adapter, clock)
    card = ProgressMessage(outbox, ("fake", "c1", None), "t:notice", turn_id="t", run_id="r1")
    adapter.fail_next(BadRequest("Bad Request: wrong parameter"))
    card.publish("⏳ Thinking — 2 s", 0)
    assert await sent(outbox, "t:notice:0") is None
    card.finish("✓ Done in 6 s", delete=final == "delete")  # the turn ends
    outbox.enqueue("fake", "c1", None, "the answer", kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == ["the answer"]
    assert [op for op, *_ in adapter.calls] == ["send", "send"]
    assert store.message("t:notice:0").status == "dropped"  # nothing for the operator to send after it


@pytest.mark.parametrize("in_flight", [False, True])
async def test_a_card_whose_send_failed_but_whose_edit_reached_the_chat_is_finalised(make, in_flight):
    # Its first send refused, the card's next state went out as a new message in its place (at once, or
    # as the turn ended): that message is the card, and reads how the turn ended.
    clock = FakeClock()
    adapter = FakeAdapter(clock=clock)
    outbox, store = await make(adapter, clock)
    card = ProgressMessage(outbox, ("fake", "c1", None), "t:notice", turn_id="t", run_id="r1")
    adapter.fail_next(BadRequest("Bad Request: wrong parameter"))
    card.publish("⏳ Thinking — 2 s", 0)
    assert await sent(outbox, "t:notice:0") is None
    if in_flight:
        adapter.gate.clear()
    card.publish("⏳ Running search — 4 s", 1)
    if in_flight:
        await adapter.until(lambda: len(adapter.calls) == 2)
    else:
        assert await sent(outbox, "t:notice-edit-r1-1:0") is not None
    card.finish("✓ Done in 6 s", delete=False)
    adapter.gate.set()
    assert await outbox.flush(timeout=WAIT)
    assert adapter.messages == {"m1": "✓ Done in 6 s"}


@pytest.mark.parametrize("first_out", [False, True])
async def test_a_re_split_card_withdrawn_after_a_restart_sends_none_of_its_pieces(tmp_path, first_out):
    # The last process re-split the card and died before its pieces went out (or after the first
    # did); at the next start the card is withdrawn before the outbox sends what is pending (its turn
    # is over): no piece goes, and one that went out is finalised.
    clock = FakeClock()
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        rows = state.outbox
        rows.add_messages([NewMessage("t:notice:0", "fake", "c1", None, "⏳ one two three four", kind="notice",
                                      silent=True, turn_id="t", tried=True),
                           NewMessage("t:notice:0/a", "fake", "c1", None, "⏳ one two", kind="notice", silent=True,
                                      turn_id="t", sequence=0, tried=True),
                           NewMessage("t:notice:0/b", "fake", "c1", None, "three four", kind="notice", silent=True,
                                      turn_id="t", sequence=0)])
        rows.set_op(rows.message("t:notice:0").id, "split")
        adapter = FakeAdapter(clock=clock)
        if first_out:
            rows.mark_sent(rows.message("t:notice:0/a").id, "old")
            adapter.messages["old"] = "⏳ one two"
        outbox = Outbox(rows, {"fake": adapter}, clock=clock)
        # The turn's end (`ProgressMessage.finish`): the card may have gone out before the crash.
        assert not outbox.withdraw("fake", "c1", None, "t:notice:0")
        outbox.enqueue_edit("fake", "c1", None, "t:notice:0", "✓ Done in 6 s", key="t:notice-final-r2")
        await outbox.start()
        assert await outbox.flush(timeout=WAIT)
        assert [(op, text) for op, _, text, _ in adapter.calls] == ([("edit", "✓ Done in 6 s")] if first_out else [])
        assert adapter.messages == ({"old": "✓ Done in 6 s"} if first_out else {})
        assert [rows.message(k).status for k in ("t:notice:0", "t:notice:0/b")] == ["dropped"] * 2
        await outbox.close()
    finally:
        state.close()


async def test_a_piece_dismissed_while_an_earlier_one_waits_is_not_sent(make):
    # The operator dismisses a pending piece of a long reply while the piece before it waits out a 429.
    clock = FakeClock(autojump=False)
    adapter = PiecesAdapter(clock=clock, text_limit=100, accept_limit=20)
    outbox, store = await make(adapter, clock)
    text = "one two three four five six seven eight nine"
    pieces = split_text(text, len(text) // 2)
    assert len(pieces) == 3
    adapter.refuse[pieces[0]] = [RateLimited("429", retry_after=30)]
    outbox.enqueue("fake", "c1", None, text, kind="reply", key="k")
    await clock.until_sleeping(1, lasting=30)
    last = store.pieces("k:0")[-1]
    assert outbox.dismiss(last.id)
    clock.advance(30)
    assert await sent(outbox, "k:0") == adapter.sent[0][1]
    assert adapter.texts() == pieces[:-1]
    assert store.message(last.key).status == "dropped"


@pytest.fixture
async def make(tmp_path) -> AsyncIterator[Callable[..., Awaitable[tuple[Outbox, OutboxRows]]]]:
    """make(adapter, clock, **outbox options) -> a started Outbox and its rows, on the adapter's clock."""
    made: list[tuple[Outbox, GatewayStore]] = []

    async def make(adapter: FakeAdapter, clock: FakeClock, **kw) -> tuple[Outbox, OutboxRows]:
        state = GatewayStore(tmp_path / f"state{len(made)}.db", clock=clock)
        outbox = Outbox(state.outbox, {adapter.name: adapter}, clock=clock, rng=random.Random(7), **kw)
        made.append((outbox, state))
        await outbox.start()
        return outbox, state.outbox

    yield make
    for outbox, state in made:
        await outbox.close()
        state.close()
