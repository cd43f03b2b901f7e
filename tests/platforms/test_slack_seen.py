"""The Slack last-seen bookkeeping (`platforms.slack_seen`) on its own: what is recorded per
conversation while messages are handed on, taken, or not taken."""

from __future__ import annotations

from platforms.slack_seen import TakenIn, just_before

DM = ("D1", None)


class Store:
    """The gateway's last-seen table: conversation -> position, and what was recorded in it, in order."""

    def __init__(self, rows: dict[str, str]) -> None:
        self.rows = dict(rows)
        self.recorded: list[tuple[str, str]] = []

    def seen(self, conversation: str, ts: str) -> None:
        self.rows[conversation] = ts
        self.recorded.append((conversation, ts))

    def bind(self, taken_in: TakenIn) -> list[tuple[str, str]]:
        taken_in.bind(dict(self.rows), self.seen, self.rows.get)
        return self.recorded


def recording() -> tuple[TakenIn, list[tuple[str, str]]]:
    taken_in = TakenIn()
    return taken_in, Store({"D1": "100.000000"}).bind(taken_in)


def test_just_before_is_one_microsecond_earlier_across_a_second() -> None:
    assert just_before("1700000000.000100") == "1700000000.000099"
    assert just_before("1700000000.000000") == "1699999999.999999"
    assert just_before("1700000000") == "1699999999.999999"


def test_a_later_message_is_recorded_no_further_than_just_before_one_still_being_handed_on() -> None:
    taken_in, recorded = recording()
    taken_in.handing_on([DM], "101.000000")
    taken_in.handing_on([DM], "102.000000")
    taken_in.taken([DM], "102.000000", [DM])
    assert recorded == [("D1", "100.999999")]
    taken_in.taken([DM], "101.000000", [DM])  # the older one is taken after all: both are
    assert recorded[-1] == ("D1", "102.000000")


def test_a_message_not_taken_moves_the_record_back_before_it_and_holds_it_there() -> None:
    taken_in, recorded = recording()
    taken_in.handing_on([DM], "102.000000")
    taken_in.taken([DM], "102.000000", [DM])
    taken_in.handing_on([DM], "101.000000")  # Slack does not order events: an older one comes late
    taken_in.not_taken([DM], "101.000000")
    assert recorded == [("D1", "102.000000"), ("D1", "100.999999")]
    taken_in.handing_on([DM], "103.000000")
    taken_in.taken([DM], "103.000000", [DM])
    assert recorded[-1] == ("D1", "100.999999")  # held for the next start to read it back
    taken_in.handing_on([DM], "101.000000")  # Slack sent it again (it was not acked), and it is taken
    taken_in.taken([DM], "101.000000", [DM])
    assert recorded[-1] == ("D1", "103.000000")


def test_a_message_not_taken_never_moves_the_record_forward() -> None:
    # Everything after the recorded one may not be read yet (a catch-up reading it).
    taken_in, recorded = recording()
    taken_in.handing_on([DM], "105.000000")
    taken_in.not_taken([DM], "105.000000")
    assert recorded == []


def test_a_message_not_taken_where_the_record_was_dropped_from_memory_never_moves_it_forward() -> None:
    # Dropped from memory (past `REMEMBERED_NEWEST` conversations): moving it "back" to just before the
    # message without looking at the stored record moved it forward, past messages the next start must read.
    taken_in = TakenIn(remembered=1)
    recorded = Store({"D1": "100.000000", "D2": "200.000000"}).bind(taken_in)
    taken_in.handing_on([DM], "150.000000")
    taken_in.not_taken([DM], "150.000000")
    assert recorded == []


def test_a_message_not_taken_where_the_record_was_dropped_from_memory_moves_it_back_if_recorded_past_it() -> None:
    # Slack does not order events: one older than the stored record comes late and is not taken. Left
    # "as stored" because memory no longer held the record, it was behind the record for good, and lost.
    taken_in = TakenIn(remembered=1)
    recorded = Store({"D1": "300.000000", "D2": "400.000000"}).bind(taken_in)
    taken_in.handing_on([DM], "250.000000")
    taken_in.not_taken([DM], "250.000000")
    assert recorded == [("D1", "249.999999")]


def test_a_message_not_taken_in_a_new_conversation_once_others_were_dropped_from_memory_is_recorded_before_it() -> None:
    # Once any conversation was dropped, one missing from memory was left "as stored": a DM never written
    # in before had nothing stored, so the next start did not read it, and the message was lost.
    taken_in = TakenIn(remembered=1)
    recorded = Store({"D2": "100.000000", "D3": "200.000000"}).bind(taken_in)
    taken_in.handing_on([("D9", None)], "150.000000")
    taken_in.not_taken([("D9", None)], "150.000000")
    assert recorded == [("D9", "149.999999")]


def test_a_conversation_dropped_from_memory_is_not_moved_back_by_an_older_message_taken_late() -> None:
    # Recorded without the check against its stored record, it went back, and the next start read again
    # what was answered already.
    taken_in = TakenIn(remembered=1)
    recorded = Store({"D1": "300.000000", "D2": "400.000000"}).bind(taken_in)
    taken_in.handing_on([DM], "250.000000")
    taken_in.taken([DM], "250.000000", [DM])
    assert recorded == []
    taken_in.handing_on([DM], "350.000000")
    taken_in.taken([DM], "350.000000", [DM])
    assert recorded == [("D1", "350.000000")]


def test_a_message_not_taken_in_a_conversation_with_no_record_yet_is_recorded_just_before_it() -> None:
    # Nothing dropped: a conversation missing from memory has no record stored, and this one makes the
    # next start read the message back.
    taken_in, recorded = recording()
    taken_in.handing_on([("D9", None)], "150.000000")
    taken_in.not_taken([("D9", None)], "150.000000")
    assert recorded == [("D9", "149.999999")]


def test_a_message_not_taken_is_recorded_no_further_than_an_older_one_still_being_handed_on() -> None:
    # Recorded just before itself, past an older message Slack sent late and was acked for: a crash
    # before that one was taken left it behind the record, and the next start did not read it back.
    taken_in, recorded = recording()
    taken_in.handing_on([DM], "300.000000")
    taken_in.taken([DM], "300.000000", [DM])
    taken_in.handing_on([DM], "250.000000")
    taken_in.handing_on([DM], "280.000000")
    taken_in.not_taken([DM], "280.000000")
    assert recorded == [("D1", "300.000000"), ("D1", "249.999999")]
