"""A part of a long message that the platform refuses for good, or that is given up on, leaves a short
note in its place: the rest of the answer goes on, and nobody reads it as whole. One note per message."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.splitting import split_text
from gateway.store import GatewayStore, OutboxRows
from platforms.base import BadRequest, Forbidden, NetworkError
from tests.gateway.test_outbox import WAIT, FakeAdapter
from tests.gateway.test_outbox_card_changes import PiecesAdapter

TEXT = "First paragraph, the opening.\n\nSecond paragraph, the middle.\n\nThird paragraph, the end."
PARTS = split_text(TEXT, 40)


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

    async def make(adapter: FakeAdapter, **kw) -> Outbox:
        outbox = Outbox(store, {adapter.name: adapter}, clock=clock, rng=random.Random(7), **kw)
        made.append(outbox)
        await outbox.start()
        return outbox

    yield make
    for outbox in made:
        await outbox.close()


def test_the_text_is_split_in_three():
    assert len(PARTS) == 3


@pytest.mark.parametrize("refused", [0, 1, 2])
async def test_a_refused_part_leaves_a_note_in_its_place(make, store, clock, refused):
    adapter = PiecesAdapter(clock=clock, text_limit=40)
    adapter.refuse[PARTS[refused]] = [BadRequest("Bad Request: wrong parameter")]
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, TEXT, kind="reply", key="t:reply", turn_id="t")
    outbox.enqueue("fake", "c1", None, "next", kind="reply", key="t2:reply", turn_id="t2")
    assert await outbox.flush(timeout=WAIT)
    note = f"(part {refused + 1} of 3 could not be sent: the platform refused it)"
    assert adapter.texts() == [*PARTS[:refused], note, *PARTS[refused + 1:], "next"]
    # In its place among the turn's messages too (a webhook's caller, the console read them so).
    assert [m["text"] for m in outbox.turn_messages("fake", "t")] == [*PARTS[:refused + 1], note, *PARTS[refused + 1:]]


async def test_a_chat_that_refuses_everything_gets_one_note_attempt_per_message(make, store, clock):
    # The bot was blocked: every part is refused, and so is the note; nothing more is tried for the message.
    adapter = FakeAdapter(clock=clock, text_limit=40)
    adapter.fail_next(*[Forbidden("Forbidden: bot was blocked by the user") for _ in range(10)])
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, TEXT, kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    note = "(part 1 of 3 could not be sent: the platform refused it)"
    assert [text for _, _, text, _ in adapter.calls] == [PARTS[0], note, *PARTS[1:]]
    assert [r.status for r in store.with_status("failed", 10)] == ["failed"] * 4


async def test_a_part_given_up_on_says_so(make, store, clock):
    # An outage outlasts give_up_after for the second part; the platform is back for the third.
    adapter = PiecesAdapter(clock=clock, text_limit=40)
    adapter.refuse[PARTS[1]] = [NetworkError("HTTP 502") for _ in range(30)]
    outbox = await make(adapter, give_up_after={"fake": 20.0})
    outbox.enqueue("fake", "c1", None, TEXT, kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    assert adapter.texts() == [PARTS[0], "(part 2 of 3 could not be sent: the platform kept failing)", PARTS[2]]


async def test_a_part_re_split_whose_pieces_were_all_refused_leaves_a_note(make, store, clock):
    # The first part was too long for the platform after all, and each piece it was cut into was refused.
    text = " ".join(f"word{i}" for i in range(14)) + "\n\n" + " ".join(["end"] * 8)
    [first, last] = split_text(text, 100)
    pieces = split_text(first, len(first) // 2)
    adapter = PiecesAdapter(clock=clock, text_limit=100, accept_limit=60)  # the note fits
    for piece in pieces:
        adapter.refuse[piece] = [BadRequest("Bad Request: wrong parameter")]
    outbox = await make(adapter)
    outbox.enqueue("fake", "c1", None, text, kind="reply", key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    note = "(part 1 of 2 could not be sent: the platform refused it)"
    assert [text for _, _, text, _ in adapter.calls] == [first, *pieces, note, last]
    assert adapter.texts() == [note, last]


@pytest.mark.parametrize("how", ["one part", "a progress message", "the webhook"])
async def test_no_note_where_nothing_is_missing_from_a_message_read_as_one(make, store, clock, how):
    # A message of one part failed whole (nothing around it to read as whole); a card is one message,
    # edited anew; a webhook's caller reads each part's sequence number, and would take a note for the answer.
    adapter = FakeAdapter("webhook" if how == "the webhook" else "fake", clock=clock, text_limit=40)
    adapter.fail_next(BadRequest("Bad Request: wrong parameter"))
    outbox = await make(adapter)
    text = "short" if how == "one part" else TEXT
    outbox.enqueue(adapter.name, "c1", None, text, kind="notice" if how == "a progress message" else "reply",
                   key="t:reply", turn_id="t")
    assert await outbox.flush(timeout=WAIT)
    assert not any("could not be sent" in text for _, _, text, _ in adapter.calls)
