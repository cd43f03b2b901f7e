"""The inbox: accept, settle, replay what is unsettled, forget old ids."""

from __future__ import annotations

from gateway.store import Acceptance, inbox
from platforms import discord_catch_up, slack_catchup
from tests.gateway.store.conftest import event


def test_inbox_accepts_once_replays_unsettled_and_forgets_settled(store, clock):
    assert store.inbox.accept(event("e1", "first"), None).new
    clock.now += 1
    assert store.inbox.accept(event("e2", "/stop"), None).new
    assert not store.inbox.accept(event("e1", "first"), None).new  # redelivery
    assert store.inbox.accept(event("e1", platform="slack"), None).new  # ids are per platform
    assert [e for e, _ in store.inbox.unfinished()] == [event("e1", "first"), event("e2", "/stop"), event("e1", platform="slack")]
    store.inbox.settle("telegram", "e1")
    assert [e.event_id for e in [e for e, _ in store.inbox.unfinished()]] == ["e2", "e1"]
    assert not store.inbox.accept(event("e1"), None).new  # done events still count as seen


def test_a_redelivery_names_the_turn_the_event_was_accepted_with(store):
    assert store.inbox.accept(event("e1"), "t-1") == Acceptance(True, "t-1")
    assert store.inbox.accept(event("e1"), "t-2") == Acceptance(False, "t-1")  # a redelivery names the first
    assert store.inbox.turn_of("telegram", "e1") == "t-1"
    assert store.inbox.accept(event("e2", "/help"), None) == Acceptance(True, None)  # starts no turn
    assert store.inbox.accept(event("e2", "/help"), None) == Acceptance(False, None)
    assert store.inbox.turn_of("telegram", "nope") is None
    assert store.inbox.unfinished() == [(event("e1"), "t-1"), (event("e2", "/help"), None)]


def test_prune_forgets_old_ids_once_handled(store, clock):
    store.inbox.accept(event("old"), None).new
    store.inbox.accept(event("old-unhandled"), None).new
    store.inbox.settle("telegram", "old")
    clock.now += 100
    store.inbox.accept(event("new"), None).new
    store.inbox.settle("telegram", "new")
    assert store.inbox.prune(older_than=clock.now - 50) == 1
    assert store.inbox.accept(event("old"), None).new  # forgotten: taken as new
    assert not store.inbox.accept(event("new"), None).new
    assert [e.event_id for e, _ in store.inbox.unfinished()] == ["old-unhandled", "old"]  # kept: not handled yet


def test_the_inbox_remembers_an_event_longer_than_any_platform_hands_it_over_again():
    # A message answered live whose id was forgotten, read back by a catch-up (from a last-seen mark a
    # crash kept behind it) or served again by Telegram, would be answered twice.
    telegram_keeps = 24 * 3600.0  # an unconfirmed update, or one a webhook did not take
    assert inbox.RETENTION_SECONDS > max(discord_catch_up.MAX_AGE, slack_catchup.Limits().max_age, telegram_keeps)


def test_the_latest_dead_letters_are_read_newest_first_and_no_more(store):
    for i in range(5):
        store.inbox.accept(event(f"e{i}", f"text {i}"), None)
        store.inbox.set_aside("telegram", f"e{i}")
    assert [d.event_id for d in store.dead_letters.latest(3)] == ["e4", "e3", "e2"]
    assert [d.event_id for d in store.dead_letters.all()] == ["e0", "e1", "e2", "e3", "e4"]
