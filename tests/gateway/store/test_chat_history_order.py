"""A web chat read back after the wall clock was set back (NTP correcting a clock that ran fast): the newest
messages are the last ones, each answer below its question, and with a steady clock the order is the dates'."""

from __future__ import annotations

from agent.testing import FakeClock
from platforms.base import Inbound
from tests.gateway.store.conftest import msg

HOUR = 3600.0


def asked(store, clock: FakeClock, n: int) -> None:
    """Question ``n``, beginning turn ``t<n>``."""
    store.inbox.accept(Inbound("web", "c1", None, "web", None, f"question {n}", f"k{n}@c1"), f"t{n}")
    clock.advance(1)


def answered(store, clock: FakeClock, n: int, part: str = "reply", turn: int | None = None) -> None:
    """A part of turn ``t<turn>`` (the turn of question ``n`` by default), sent."""
    (row_id,) = store.outbox.add_messages([msg(f"t{n}:{part}:0", f"{part} {n}", platform="web", chat_id="c1",
                                               turn_id=f"t{n if turn is None else turn}")])
    store.outbox.mark_sent(row_id, f"t{n}:{part}:0")
    clock.advance(1)


def texts(store, limit: int = 50) -> list[str]:
    return [m["text"] for m in store.chat_history.messages("c1", limit)]


def test_after_the_clock_is_set_back_the_newest_messages_stay_last_each_answer_below_its_question(store, clock):
    # Before, dated an hour before the older ones, the new messages were read first and, past the limit, left out:
    # a reload showed the conversation of an hour ago without what was just said.
    for n in range(3):
        asked(store, clock, n)
        answered(store, clock, n)
    clock.jump(-HOUR)
    for n in range(3, 6):
        asked(store, clock, n)
        answered(store, clock, n, "progress")
        answered(store, clock, n)
    everything = ["question 0", "reply 0", "question 1", "reply 1", "question 2", "reply 2",
                  *(t for n in range(3, 6) for t in (f"question {n}", f"progress {n}", f"reply {n}"))]
    assert texts(store) == everything
    assert texts(store, 4) == everything[-4:]


def test_after_a_step_back_seen_on_one_side_only_a_question_still_shows_below_the_answer_before_it(store, clock):
    asked(store, clock, 0)
    answered(store, clock, 0)
    clock.jump(-HOUR)
    asked(store, clock, 1)  # no answer yet
    assert texts(store) == ["question 0", "reply 0", "question 1"]


def test_with_a_steady_clock_a_message_sent_while_a_turn_ran_shows_where_it_was_sent(store, clock):
    asked(store, clock, 0)
    answered(store, clock, 0, "progress")
    asked(store, clock, 1)  # queued while turn 0 runs
    answered(store, clock, 0)
    answered(store, clock, 1)
    answered(store, clock, 9, "notice", turn=8)  # a turn no message began (a background result's)
    assert texts(store) == ["question 0", "progress 0", "question 1", "reply 0", "reply 1", "notice 9"]
