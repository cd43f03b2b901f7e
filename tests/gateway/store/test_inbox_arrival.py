"""Which of two events the inbox remembers it received first (`Inbox.arrival`): the order of its rows, not the
receipts' dates, which NTP stepping a fast clock back turns round; kept when a sweep forgets the newest rows, and
for a dead letter handed back."""

from __future__ import annotations

import json

from gateway.store.inbox import RETENTION_SECONDS
from tests.gateway.store.conftest import event


def test_the_order_holds_after_a_sweep_forgot_the_newest_event(store, clock) -> None:
    store.inbox.accept(event("waiting", platform="web"), "t-1")  # never handled: kept however old
    store.inbox.accept(event("handled", platform="web"), "t-2")
    store.inbox.settle("web", "handled")
    clock.now += RETENTION_SECONDS + 1
    assert store.inbox.prune(clock.time() - RETENTION_SECONDS) == 1  # its row's number is free again
    store.inbox.accept(event("after", platform="web"), "t-3")
    first, then = (store.inbox.arrival("web", e) for e in ("waiting", "after"))
    assert first is not None and then is not None and first < then
    assert store.inbox.arrival("web", "handled") is None


def test_an_event_handed_back_keeps_its_place(store, clock) -> None:
    dead = event("dead", platform="web")
    store.inbox.accept(dead, "t-1")
    store.inbox.set_aside("web", "dead")
    store.inbox.accept(event("later", platform="web"), "t-2")
    store.inbox.requeue("web", "dead", json.dumps(dead.to_json()), "t-1", clock.time())
    first, then = (store.inbox.arrival("web", e) for e in ("dead", "later"))
    assert first is not None and then is not None and first < then


def test_a_turn_is_the_turn_of_its_first_message_though_its_answer_was_dated_before_it(store, clock) -> None:
    store.inbox.accept(event("ask", platform="webhook"), "t-1")
    clock.jump(-3600.0)  # the turn asked a question, answered after NTP set the clock right
    store.inbox.accept(event("answer", platform="webhook"), "t-2")
    store.inbox.settle("webhook", "answer", into_turn="t-1")
    turn_event = store.inbox.event_of_turn("webhook", "t-1")
    assert turn_event is not None and turn_event.event_id == "ask"
