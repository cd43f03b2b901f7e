"""The note in place of a part or a file the agent sent that failed for good (`gateway.part_notes`) when the store
fails under it (a full disk, an I/O error). The note is journaled with the part's failure: refused, the part stays
pending, and the note is written, and sent once, when the store takes it, also after a restart. A note whose send
the store failed under goes with the part's next try, ahead of what the chat queued behind it, not at the next
start. Before, the failure was recorded without its note: the user, told the file was queued, heard nothing.
SQLite itself refuses (a trigger raising). The real aiogram client against the loopback `FakeTelegram`; re-split
parts on the outbox tests' `FakeAdapter`."""

from __future__ import annotations

import random

import pytest

from agent.testing import FakeClock
from gateway.outbox import Outbox
from gateway.splitting import split_text
from gateway.store import GatewayStore
from platforms.base import BadRequest, MessageTooLong
from tests.gateway.test_file_failure_note import (  # noqa: F401 (telegram: a fixture)
    CHAT,
    CLOCK,
    KEY,
    REFUSAL,
    WAIT,
    file_then_answer,
    note,
    started,
    telegram,
    texts,
)
from tests.gateway.test_outbox_card_changes import PiecesAdapter
from tests.gateway.test_resplit_missing_pieces import PIECES, TEXT

NOTE = "t:file:0:missing"
REFUSED = note("the platform refused it")


def refuse_notes(store: GatewayStore, write: str = "INSERT", times: int | None = None) -> list[str]:
    """Have SQLite refuse ``write`` (an SQL trigger event, and a condition on ``NEW``) of a note in place of a part
    (``…:missing``) the first ``times`` times (None: until the trigger is dropped), as a full disk would; returns
    the keys it refused, as it goes."""
    refused: list[str] = []

    def refusing(key: str) -> bool:
        if key.endswith(":missing") and (times is None or len(refused) < times):
            refused.append(key)
            return True
        return False

    event, _, condition = write.partition(" WHEN ")
    store.db._conn.create_function("refusing", 1, refusing)
    store.db.write(f"CREATE TEMP TRIGGER refuse_notes BEFORE {event} ON gateway_outbox WHEN {condition or 1}"
                   " AND refusing(NEW.key) BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    return refused


def statuses(store: GatewayStore) -> dict[str, str]:
    return dict(store.db.read("SELECT key, status FROM gateway_outbox"))


async def test_a_file_note_the_store_refuses_goes_once_it_takes_it(telegram):  # noqa: F811 (a fixture)
    fake, adapter, store, files = telegram
    outbox = await started(adapter, store, files)
    try:
        refused = refuse_notes(store, times=2)
        fake.fail_next("sendDocument", 400, description=REFUSAL)
        file_then_answer(outbox, files)
        assert await outbox.flush(timeout=WAIT)
        assert refused == [NOTE, NOTE]  # written when the store took it, with the file's failure
        assert texts(fake) == [REFUSED, "the answer"]
        assert statuses(store) == {KEY: "failed", NOTE: "sent", "t:reply:0": "sent"}
    finally:
        await outbox.close()


async def test_a_part_note_the_store_refuses_goes_once_it_takes_it(telegram):  # noqa: F811 (a fixture)
    fake, adapter, store, files = telegram
    outbox = await started(adapter, store, files)
    try:
        refused = refuse_notes(store, times=1)
        fake.fail_next("sendMessage", 400, description="Bad Request: TOPIC_CLOSED")  # the first part
        outbox.enqueue(*CHAT, "a" * 3000 + "\n\n" + "b" * 3000, kind="reply", key="t:reply", turn_id="t")
        assert await outbox.flush(timeout=WAIT)
        assert refused == ["t:reply:missing"]
        assert texts(fake) == ["(part 1 of 2 could not be sent: the platform refused it)", "b" * 3000]
        assert statuses(store) == {"t:reply:0": "failed", "t:reply:1": "sent", "t:reply:missing": "sent"}
    finally:
        await outbox.close()


async def test_a_file_note_refused_until_a_restart_goes_after_it_ahead_of_the_answer(telegram):  # noqa: F811 (a fixture)
    # Stopped while the store refuses: the file is still pending (its failure was not recorded without its note),
    # so the next start tries it again; refused again, its note is written then. Before, the failure was recorded
    # alone: the answer went out, and the note never did.
    fake, adapter, store, files = telegram
    first = await started(adapter, store, files)
    refused = refuse_notes(store)
    fake.fail_next("sendDocument", 400, description=REFUSAL)
    file_then_answer(first, files)
    # The chat tries again, still refused (before: once, and the answer went out).
    await fake.wait_for(lambda: len(refused) >= 2 or texts(fake), timeout=WAIT)
    await first.close()
    store.db.write("DROP TRIGGER refuse_notes")
    fake.fail_next("sendDocument", 400, description=REFUSAL)
    again = await started(adapter, store, files)
    try:
        assert await again.flush(timeout=WAIT)
        assert texts(fake) == [REFUSED, "the answer"]
        assert len(fake.calls_to("sendDocument")) == 2
        assert statuses(store) == {KEY: "failed", NOTE: "sent", "t:reply:0": "sent"}
    finally:
        await again.close()


async def test_a_note_that_cannot_be_marked_tried_goes_with_the_next_try_ahead_of_the_answer(telegram):  # noqa: F811 (a fixture)
    # The note is journaled, and the store refuses the write committed before its send. Before, the note stayed
    # pending, sent by nothing until the next start, and the answer went out alone.
    fake, adapter, store, files = telegram
    outbox = await started(adapter, store, files)
    try:
        refused = refuse_notes(store, "UPDATE OF tried", times=2)
        fake.fail_next("sendDocument", 400, description=REFUSAL)
        file_then_answer(outbox, files)
        assert await outbox.flush(timeout=WAIT)
        assert refused == [NOTE, NOTE]
        assert texts(fake) == [REFUSED, "the answer"]
        assert statuses(store) == {KEY: "failed", NOTE: "sent", "t:reply:0": "sent"}
    finally:
        await outbox.close()


async def test_a_note_sent_whose_outcome_the_store_refuses_is_recorded_and_not_sent_again(telegram):  # noqa: F811 (a fixture)
    # Telegram took the note, and the store refused to mark it sent. Before, nothing recorded it again: pending,
    # it went out a second time at the next start.
    fake, adapter, store, files = telegram
    outbox = await started(adapter, store, files)
    try:
        refused = refuse_notes(store, "UPDATE OF status WHEN NEW.status = 'sent'", times=1)
        fake.fail_next("sendDocument", 400, description=REFUSAL)
        file_then_answer(outbox, files)
        assert await outbox.flush(timeout=WAIT)
        assert refused == [NOTE]
        assert statuses(store) == {KEY: "failed", NOTE: "sent", "t:reply:0": "sent"}
    finally:
        await outbox.close()
    again = await started(adapter, store, files)
    try:
        assert await again.flush(timeout=WAIT)
        assert texts(fake) == [REFUSED, "the answer"]
    finally:
        await again.close()


def a_later_piece_refused(adapter: PiecesAdapter) -> list[str]:
    adapter.refuse[PIECES[1]] = [BadRequest("Bad Request: wrong parameter")]
    return [PIECES[0], "(part 2 of 3 could not be sent: the platform refused it)", PIECES[2], "next"]


def the_first_piece_refused(adapter: PiecesAdapter) -> list[str]:  # noted once a later piece went out
    adapter.refuse[PIECES[0]] = [BadRequest("Bad Request: wrong parameter")]
    return [PIECES[1], "(part 1 of 3 could not be sent: the platform refused it)", PIECES[2], "next"]


def no_piece_of_a_piece_taken(adapter: PiecesAdapter) -> list[str]:  # the first piece cut again, each refused
    adapter.refuse[PIECES[0]] = [MessageTooLong("message is too long")]
    for piece in split_text(PIECES[0], len(PIECES[0]) // 2):
        adapter.refuse[piece] = [BadRequest("Bad Request: wrong parameter")]
    return [PIECES[1], "(part 1 of 3 could not be sent: the platform refused it)", PIECES[2], "next"]


@pytest.mark.parametrize("write", ["INSERT", "UPDATE OF tried"], ids=["journaled", "marked-tried"])
@pytest.mark.parametrize("refuse", [a_later_piece_refused, the_first_piece_refused, no_piece_of_a_piece_taken])
async def test_a_re_split_part_s_note_the_store_fails_under_goes_once_in_its_place(tmp_path, write, refuse):
    # A part the platform refused as too long goes in pieces (`gateway.resplit`); the note for one that fails
    # for good is journaled, and sent, where its piece's failure is recorded or the pieces are settled.
    clock = FakeClock()
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    adapter = PiecesAdapter(clock=clock, text_limit=100)
    adapter.refuse[TEXT] = [MessageTooLong("message is too long")]
    expected = refuse(adapter)
    outbox = Outbox(store.outbox, {"fake": adapter}, clock=clock, rng=random.Random(7))
    try:
        await outbox.start()
        refused = refuse_notes(store, write, times=1)
        outbox.enqueue("fake", "c1", None, TEXT, kind="reply", key="t:reply", turn_id="t")
        outbox.enqueue("fake", "c1", None, "next", kind="reply", key="t2:reply", turn_id="t2")
        assert await outbox.flush(timeout=WAIT)
        assert refused == ["t:reply:missing"]
        assert adapter.texts() == expected
        assert store.outbox.message("t:reply:missing").status == "sent"
    finally:
        await outbox.close()
        store.close()
