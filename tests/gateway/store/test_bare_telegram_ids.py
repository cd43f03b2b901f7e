"""Telegram events keyed by their bot (``<bot id>:<update id>``) and those an earlier version recorded by the bare
update id (`gateway.store.inbox.BareTelegramIds`): a repeat of one of the upgraded bot's is dropped, another bot's update
with the same number is not, and none is read once Telegram can no longer send it again."""

from __future__ import annotations

import dataclasses

from gateway.store import Inbox
from gateway.store.inbox import OWNER, REDELIVERED_WITHIN
from tests.gateway.store.conftest import event


def _owner(store) -> str | None:
    row = store.db.read_one("SELECT value FROM gateway_meta WHERE key=?", (OWNER,))
    return None if row is None else row[0]


def test_an_update_recorded_bare_is_a_repeat_for_the_bot_upgraded_with_it(store):
    store.inbox.accept(event("1000"), "turn-1")  # recorded by the version before
    again = store.inbox.accept(event("111:1000"), "turn-2")
    assert (again.new, again.turn_id) == (False, "turn-1")
    assert store.inbox.received_at("telegram", "111:1000") is None  # nothing recorded twice
    assert store.inbox.accept(event("111:1001"), "turn-3").new
    assert _owner(store) == "111"


def test_another_bot_never_takes_the_bare_ids_for_its_own(store):
    store.inbox.accept(event("1000"), "turn-1")
    store.inbox.accept(event("111:1001"), "turn-2")  # the bot the gateway was upgraded with
    assert store.inbox.accept(event("222:1000"), "turn-3").new


def test_the_owner_is_kept_for_the_next_process(store, clock):
    store.inbox.accept(event("1000"), "turn-1")
    store.inbox.accept(event("111:1001"), "turn-2")
    restarted = Inbox(store.db, clock)  # the next process, on another bot's token
    assert restarted.accept(event("222:1000"), "turn-3").new


def test_an_album_item_delivered_again_alone_is_a_repeat_of_the_album(store):
    album = dataclasses.replace(event("1000"), aliases=("1000", "1001"))
    store.inbox.accept(album, "turn-1")
    item = dataclasses.replace(event("111:1001"), aliases=("111:1001",))
    assert store.inbox.accept(item, "turn-2") == store.inbox.accept(event("111:1000"), None)
    assert store.inbox.accept(item, "turn-2").turn_id == "turn-1"
    partly = dataclasses.replace(event("111:1001"), aliases=("111:1001", "111:1002"))
    assert store.inbox.accept(partly, "turn-3").new  # an item never recorded: answered rather than lost


def test_bare_ids_older_than_telegram_keeps_an_update_are_read_no_more(store, clock):
    store.inbox.accept(event("1000"), "turn-1")
    clock.advance(REDELIVERED_WITHIN + 1)
    assert store.inbox.accept(event("111:1000"), "turn-2").new
    assert _owner(store) is None  # nothing to take for anyone's


def test_without_bare_ids_nothing_is_looked_up_or_written(store):
    assert store.inbox.accept(event("111:1000"), "turn-1").new
    assert not store.inbox.accept(event("111:1000"), "turn-2").new
    assert _owner(store) is None


def test_other_platforms_ids_are_their_own(store):
    store.inbox.accept(event("1000", platform="webhook"), "turn-1")
    assert store.inbox.accept(event("111:1000", platform="webhook"), "turn-2").new
