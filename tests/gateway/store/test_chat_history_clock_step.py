"""A web chat read back after NTP stepped the wall clock back (it ran fast): each answer still shows right after
its question. The inbox dates a receipt by the wall clock, as the outbox dates what it sent: dated ahead of it to
keep the receipts in order, a question asked in the hour after the step showed after its own answer."""

from __future__ import annotations

from tests.gateway.store.test_chat_history import said, sent


def test_each_answer_shows_after_its_question_once_the_clock_was_stepped_back(store, clock) -> None:
    said(store, clock, "k1", "question 1")
    sent(store, clock, "t1:reply:0", "answer 1")
    clock.jump(-3600.0)
    said(store, clock, "k2", "question 2")
    sent(store, clock, "t2:reply:0", "answer 2")
    texts = [m["text"] for m in store.chat_history.messages("c1", 50)]
    # Which exchange shows first is the clock's to say; neither is cut in two.
    assert len(texts) == 4 and set(zip(texts[::2], texts[1::2])) == {("question 1", "answer 1"),
                                                                     ("question 2", "answer 2")}
