"""The inbox: accept, settle, replay what is unsettled, forget old ids, know an album by its items."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3

import pytest

from gateway.store import Acceptance, GatewayStore, inbox
from platforms import discord_catch_up, slack_catchup
from platforms.base import Inbound
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


def album(first: int, *others: int) -> Inbound:
    """A Telegram album handed over as one event: its first item's update id, every item's as aliases."""
    ids = tuple(str(i) for i in (first, *others))
    return dataclasses.replace(event(str(first), "compare these"), aliases=ids)


def rekeyed(inbound: Inbound, event_id: str) -> Inbound:
    return dataclasses.replace(inbound, event_id=event_id)


def alias_rows(path) -> set[tuple[str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return set(db.execute("SELECT alias, event_id FROM gateway_inbox_aliases"))


async def test_an_albums_items_are_recorded_with_it_in_its_commit_and_each_is_a_redelivery(store, tmp_path):
    await store.durable()
    assert store.inbox.accept(album(1, 2, 3), "t-1") == Acceptance(True, "t-1")
    assert alias_rows(tmp_path / "state.db") == set()  # batched with the event, not yet durable
    await store.durable()
    assert alias_rows(tmp_path / "state.db") == {("2", "1"), ("3", "1")}
    # Delivered again one item at a time, each gathered alone under its own id: each names the album's turn.
    for item in (1, 2, 3):
        assert store.inbox.accept(album(item), "t-2") == Acceptance(False, "t-1")
    assert store.inbox.accept(album(2, 3), "t-2") == Acceptance(False, "t-1")
    assert [e.event_id for e, _ in store.inbox.unfinished()] == ["1"]


def test_the_event_falls_with_its_aliases(store):
    store.db.write("CREATE TRIGGER refuse BEFORE INSERT ON gateway_inbox_aliases"
                   " BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with pytest.raises(sqlite3.IntegrityError, match="refused"):
        store.inbox.accept(album(1, 2), "t-1")
    assert store.inbox.unfinished() == []  # not recorded without them: its items would be answered again
    store.db.write("DROP TRIGGER refuse")
    assert store.inbox.accept(album(1, 2), "t-1").new


def test_an_item_never_recorded_is_new_and_so_is_an_album_only_some_of_whose_items_were(store):
    store.inbox.accept(album(1, 2), "t-1")
    assert store.inbox.accept(album(3), "t-2") == Acceptance(True, "t-2")  # a late item of its own
    # Gathered again with an item that was not recorded: new, under the first id not recorded, so
    # that nothing is lost (the known item is answered again with it).
    assert store.inbox.accept(album(1, 4), "t-3") == Acceptance(True, "t-3", rekeyed(album(1, 4), "4"))
    assert store.inbox.accept(album(2, 5), "t-4") == Acceptance(True, "t-4", rekeyed(album(2, 5), "5"))
    assert [(e.event_id, t) for e, t in store.inbox.unfinished()] == [("1", "t-1"), ("3", "t-2"), ("4", "t-3"),
                                                                      ("5", "t-4")]
    for item, turn in ((1, "t-1"), (2, "t-1"), (3, "t-2"), (4, "t-3"), (5, "t-4")):  # an id stays with its first
        assert store.inbox.accept(album(item), "t-9") == Acceptance(False, turn)


def test_a_message_without_aliases_is_not_looked_up_as_one(store):
    store.inbox.accept(album(1, 2), "t-1")
    statements: list[str] = []
    store.db._conn.set_trace_callback(statements.append)
    try:
        assert store.inbox.accept(event("2"), "t-2").new  # not an album item: its id names no other event
        assert not store.inbox.accept(event("2"), "t-3").new
    finally:
        store.db._conn.set_trace_callback(None)
    assert not [s for s in statements if "gateway_inbox_aliases" in s]


def test_the_aliases_are_forgotten_with_their_event(store, clock, tmp_path):
    store.inbox.accept(album(1, 2), "t-1")
    store.inbox.settle("telegram", "1")
    clock.now += 100
    store.inbox.accept(album(3, 4), "t-2")
    store.inbox.settle("telegram", "3")
    store.inbox.accept(album(5, 6), "t-3")  # not handled yet: kept however old, with its aliases
    assert store.inbox.prune(older_than=clock.now - 50) == 1
    store.close()
    assert alias_rows(tmp_path / "state.db") == {("4", "3"), ("6", "5")}
    store = GatewayStore(tmp_path / "state.db", clock=clock)
    try:
        assert store.inbox.accept(album(2), "t-4").new  # forgotten: taken as new
        assert not store.inbox.accept(album(4), "t-4").new
    finally:
        store.close()


def test_a_dead_album_handed_back_after_it_was_forgotten_is_known_by_its_items_again(store, clock):
    store.inbox.accept(album(1, 2), "t-1")
    letter_id = store.inbox.set_aside("telegram", "1")
    clock.now += 100
    assert store.inbox.prune(older_than=clock.now) == 1
    assert store.db.read("SELECT * FROM gateway_inbox_aliases") == []  # forgotten with its album
    assert store.dead_letters.retry(letter_id, store.inbox.requeue) is not None
    assert store.inbox.accept(album(2), "t-2") == Acceptance(False, "t-1")


def test_an_inbound_written_before_aliases_reads_back_without_them():
    data = event("e1").to_json()
    del data["aliases"]
    assert Inbound.from_json(json.loads(json.dumps(data))) == event("e1")
    again = album(1, 2)
    assert Inbound.from_json(json.loads(json.dumps(again.to_json()))) == again


def test_requeued_events_are_taken_only_for_the_platforms_asked_and_waiting_ones_are_counted_per_platform(store):
    for inbound in (event("e1"), event("e2", platform="slack"), event("e3", platform="slack")):
        store.inbox.requeue(inbound.platform, inbound.event_id, json.dumps(inbound.to_json()), None, 1.0)
    store.inbox.accept(event("e4", platform="slack"), "t-4")
    store.inbox.accept(event("e5"), "t-5")
    store.inbox.settle("telegram", "e5")
    assert store.inbox.waiting_by_platform() == {"telegram": 1, "slack": 3}
    assert store.inbox.take_requeued(of=()) == []
    assert [e.event_id for e, _ in store.inbox.take_requeued(of={"telegram": object()})] == ["e1"]
    assert [e.event_id for e, _ in store.inbox.take_requeued(of=["discord"])] == []
    assert [e.event_id for e, _ in store.inbox.take_requeued()] == ["e2", "e3"]
    assert store.inbox.waiting_by_platform() == {"telegram": 1, "slack": 3}  # taken, they wait all the same
