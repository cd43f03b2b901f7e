"""A part the platform refused as too long is sent in pieces in its place (`gateway.resplit`): a piece that
then fails for good is noted in the chat as a missing part is (`gateway.part_notes`), never a silent hole;
and nothing sent is sent again."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.splitting import split_text
from gateway.store import GatewayStore, NewMessage, OutboxRows
from platforms.base import BadRequest, MessageTooLong, NetworkError
from tests.gateway.test_outbox import WAIT
from tests.gateway.test_outbox_card_changes import PiecesAdapter

TEXT = "First paragraph, the opening.\n\nSecond paragraph, the middle.\n\nThird paragraph, the end."
PIECES = split_text(TEXT, len(TEXT) // 2)  # as `resplit.pieces` cuts it once the platform refuses it whole


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path, clock) -> Iterator[OutboxRows]:
    state = GatewayStore(tmp_path / "state.db", clock=clock)
    yield state.outbox
    state.close()


@pytest.fixture
async def make(store, clock) -> AsyncIterator[Callable[..., Awaitable[Outbox]]]:
    """make(adapter, **outbox options) -> a started Outbox on ``store``, closed after the test."""
    made: list[Outbox] = []

    async def make(adapter: PiecesAdapter, **kw) -> Outbox:
        outbox = Outbox(store, {adapter.name: adapter}, clock=clock, rng=random.Random(7), **kw)
        made.append(outbox)
        await outbox.start()
        return outbox

    yield make
    for outbox in made:
        await outbox.close()


def test_the_text_is_re_split_in_three():
    assert len(PIECES) == 3


async def test_a_later_piece_refused_for_good_is_noted_in_its_place(make, store, clock):
    adapter = PiecesAdapter(clock=clock, text_limit=100)
    adapter.refuse[TEXT] = [MessageTooLong("message is too long")]
    adapter.refuse[PIECES[1]] = [BadRequest("Bad Request: wrong parameter")]
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, TEXT, kind="reply", key="t:reply", turn_id="t")
    outbox.enqueue("fake", "c1", None, "next", kind="reply", key="t2:reply", turn_id="t2")
    assert await outbox.flush(timeout=WAIT)
    note = "(part 2 of 3 could not be sent: the platform refused it)"
    assert adapter.texts() == [PIECES[0], note, PIECES[2], "next"]  # each once, in its place
    assert [text for _, _, text, _ in adapter.calls] == [TEXT, *PIECES[:2], note, PIECES[2], "next"]
    assert store.message("t:reply:0/b").status == "failed"  # listed for the operator's retry
    assert store.message("t:reply:0").message_id == adapter.sent[0][1]  # the part stands for its first piece


async def test_a_piece_given_up_on_is_counted_among_the_messages_the_chat_shows(make, store, clock):
    # The message is three parts, its second re-split in three: the chat shows five messages.
    text = "\n\n".join(["An opening part, " + "word " * 12, TEXT, "A closing part, " + "word " * 12])
    parts = split_text(text, 100)
    assert len(parts) == 3 and parts[1] == TEXT
    adapter = PiecesAdapter(clock=clock, text_limit=100)
    adapter.refuse[TEXT] = [MessageTooLong("message is too long")]
    adapter.refuse[PIECES[1]] = [NetworkError("HTTP 502") for _ in range(30)]
    outbox = await make(adapter, give_up_after={"fake": 20.0})
    outbox.enqueue("fake", "c1", None, text, kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    note = "(part 3 of 5 could not be sent: the platform kept failing)"
    assert adapter.texts() == [parts[0], PIECES[0], note, PIECES[2], parts[2]]


@pytest.mark.parametrize("error, why", [(BadRequest("Bad Request: wrong parameter"), "the platform refused it"),
                                        (NetworkError("HTTP 502"), "the platform kept failing")])
async def test_a_first_piece_failing_is_noted_once_a_later_one_went_out(make, store, clock, error, why):
    # Until a later piece goes out the whole part may be lost (then the part's own note says so): its note
    # follows the first piece that does.
    adapter = PiecesAdapter(clock=clock, text_limit=100)
    adapter.refuse[TEXT] = [MessageTooLong("message is too long")]
    adapter.refuse[PIECES[0]] = [error] * 30
    outbox = await make(adapter, give_up_after={"fake": 20.0})
    outbox.enqueue("fake", "c1", None, TEXT, kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == [PIECES[1], f"(part 1 of 3 could not be sent: {why})", PIECES[2]]


async def test_resumed_after_a_restart_the_note_is_owed_still_and_nothing_is_sent_twice(make, store, clock):
    # The last process re-split the part; its first piece failed, its second went out, and it died then.
    store.add_messages([NewMessage("t:reply:0", "fake", "c1", None, TEXT, kind="reply", turn_id="t")])
    store.add_messages([NewMessage(f"t:reply:0/{name}", "fake", "c1", None, piece, kind="reply", turn_id="t",
                                   sequence=0) for name, piece in zip("abc", PIECES, strict=True)])
    store.set_op(store.message("t:reply:0").id, "split")
    store.mark_failed(store.message("t:reply:0/a").id, "BadRequest: Bad Request: wrong parameter")
    store.mark_sent(store.message("t:reply:0/b").id, "m0")
    adapter = PiecesAdapter(clock=clock, text_limit=100)
    outbox = await make(adapter)
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == ["(part 1 of 3 could not be sent: the platform refused it)", PIECES[2]]
    assert store.message("t:reply:0").message_id == "m0"


async def test_a_piece_cut_again_none_of_whose_pieces_went_out_is_noted_as_one(make, store, clock):
    # The first piece was too long for the platform as well, and each piece it was cut into was refused.
    smaller = split_text(PIECES[0], len(PIECES[0]) // 2)
    assert len(smaller) > 1
    adapter = PiecesAdapter(clock=clock, text_limit=100)
    adapter.refuse[TEXT] = [MessageTooLong("message is too long")]
    adapter.refuse[PIECES[0]] = [MessageTooLong("message is too long")]
    for piece in smaller:
        adapter.refuse[piece] = [BadRequest("Bad Request: wrong parameter")]
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, TEXT, kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == [PIECES[1], "(part 1 of 3 could not be sent: the platform refused it)", PIECES[2]]
