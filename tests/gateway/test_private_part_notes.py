"""The rows the outbox journals itself in a part's place or ahead of it keep that part's being for its command's
user alone (`OutboxRow.private`, a Discord refusal's): a re-split piece, the note that a part is missing, the note
that it is late. Without it, the next process (whose adapter remembers nothing) posted them in the channel."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent.testing import FakeClock
from gateway import resplit
from gateway.part_notes import late_note, missing_note
from gateway.store import GatewayStore, NewMessage, OutboxRows
from tests.gateway.test_outbox import FakeAdapter

TOKEN = "1:interaction-token"


@pytest.fixture
def store(tmp_path) -> Iterator[OutboxRows]:
    state = GatewayStore(tmp_path / "state.db", clock=FakeClock())
    yield state.outbox
    state.close()


def _private(store: OutboxRows, key: str, text: str) -> None:
    store.add_messages([NewMessage(key, "discord", "600", None, text, kind="command", reply_token=TOKEN,
                                   turn_id="t", private=True)])


def test_the_pieces_of_a_private_part_are_private(store):
    _private(store, "refused:0", "word " * 40)
    pieces = resplit.pieces(FakeAdapter("discord", text_limit=2000), store.message("refused:0"))
    assert len(pieces) >= 2 and all(p.private and p.reply_token == TOKEN for p in pieces)


def test_the_note_missing_a_private_part_is_private(store):
    for i in range(3):
        _private(store, f"refused:{i}", f"part {i}")
    note = missing_note(store, store.message("refused:1"))
    assert note is not None and note.private and note.reply_token == TOKEN


def test_the_late_note_of_a_private_part_goes_through_its_interaction_privately(store):
    _private(store, "refused:0", "not you")
    note = late_note(store, store.message("refused:0"), age=700.0, late_after=600.0)
    assert note is not None and note.private and note.reply_token == TOKEN


def test_the_late_note_of_a_public_answer_stays_a_channel_message(store):
    # Through the interaction, it would be the answer replacing "thinking…", and the answer a follow-up.
    store.add_messages([NewMessage("said:0", "discord", "600", None, "done", kind="command", reply_token=TOKEN)])
    note = late_note(store, store.message("said:0"), age=700.0, late_after=600.0)
    assert note is not None and not note.private and note.reply_token is None
