"""The Slack last-seen bookkeeping (`platforms.slack_seen`) on its own: what is recorded per
conversation while messages are handed on, taken, or not taken."""

from __future__ import annotations

from platforms.slack_seen import TakenIn, just_before

DM = ("D1", None)


def recording() -> tuple[TakenIn, list[tuple[str, str]]]:
    recorded: list[tuple[str, str]] = []
    taken_in = TakenIn()
    taken_in.bind({"D1": "100.000000"}, lambda conversation, ts: recorded.append((conversation, ts)))
    return taken_in, recorded


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


def test_a_message_not_taken_where_the_record_was_dropped_from_memory_leaves_the_record_as_stored() -> None:
    # Dropped from memory (past `REMEMBERED_NEWEST` conversations), its stored record is unseen: moving it
    # "back" to just before the message moved it forward, past messages the next start must still read.
    recorded: list[tuple[str, str]] = []
    taken_in = TakenIn(remembered=1)
    taken_in.bind({"D1": "100.000000", "D2": "200.000000"}, lambda conversation, ts: recorded.append((conversation, ts)))
    taken_in.handing_on([DM], "150.000000")
    taken_in.not_taken([DM], "150.000000")
    assert recorded == []


def test_a_message_not_taken_in_a_conversation_with_no_record_yet_is_recorded_just_before_it() -> None:
    # Nothing dropped: a conversation missing from memory has no record stored, and this one makes the
    # next start read the message back.
    taken_in, recorded = recording()
    taken_in.handing_on([("D9", None)], "150.000000")
    taken_in.not_taken([("D9", None)], "150.000000")
    assert recorded == [("D9", "149.999999")]
