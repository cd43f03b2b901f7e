"""A webhook's edits kept in the gateway's store for a message not delivered yet (`platforms.telegram_webhook.
EarlyEdits`): the message comes as its latest edit by update id, also when the two edits straddle a restart and come
newest first (the older, kept by the next process, overwrote the newer in the store, and the message came as the
older said); an edit of a message handed over already is not kept (its text stayed in the store for a month); and an
edit whose record the store refused, answered 500, is kept when Telegram delivers it again. Real aiogram in
webhook-mode `TelegramAdapter`s against `FakeTelegram`, the gateway's real store for their records."""

from __future__ import annotations

import sqlite3

from gateway.store import GatewayStore
from platforms.fakes.telegram import FakeTelegram
from tests.platforms.telegram_client import edit_of, fake_telegram
from tests.platforms.telegram_store import gateway_store, process

fake = fake_telegram()
store = gateway_store()


async def test_the_newer_of_two_edits_straddling_a_restart_wins_when_they_come_newest_first(
        fake: FakeTelegram, store: GatewayStore) -> None:
    prod = fake.message_update(42, "deploy to prod")
    async with process(fake, store):
        assert await fake.deliver_webhook(edit_of(prod, "deploy to qa", after=2)) == 200
    async with process(fake, store) as sink:
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging", after=1)) == 200
        assert await fake.deliver_webhook(prod) == 200
    assert [i.text for i in sink.inbound] == ["deploy to qa"]


async def test_an_older_edit_kept_in_memory_gives_way_to_a_newer_one_an_earlier_process_stored(
        fake: FakeTelegram, store: GatewayStore) -> None:
    # The store's newer edit stays, whatever the older one's record did: read against the one kept in memory.
    prod = fake.message_update(42, "deploy to prod")
    async with process(fake, store):
        assert await fake.deliver_webhook(edit_of(prod, "deploy to qa", after=2)) == 200
    async with process(fake, store, record=lambda key, value: None) as sink:
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging", after=1)) == 200
        assert await fake.deliver_webhook(prod) == 200
    assert [i.text for i in sink.inbound] == ["deploy to qa"]


async def test_an_edit_whose_record_the_store_refused_is_kept_when_telegram_delivers_it_again(
        fake: FakeTelegram, store: GatewayStore) -> None:
    refused: list[str] = []

    def full_once(key: str, value: str) -> None:
        if not refused:
            refused.append(key)
            full = sqlite3.OperationalError("database or disk is full")
            full.sqlite_errorcode = sqlite3.SQLITE_FULL
            raise full
        store.last_seen.record("telegram", key, value)

    prod = fake.message_update(42, "deploy to prod")
    staging = edit_of(prod, "deploy to staging", after=1)
    async with process(fake, store, record=full_once):
        assert await fake.deliver_webhook(staging) == 500  # not recorded: Telegram delivers it again
        assert await fake.deliver_webhook(staging) == 200
    async with process(fake, store) as sink:
        assert await fake.deliver_webhook(prod) == 200
    assert refused and [i.text for i in sink.inbound] == ["deploy to staging"]


async def test_an_edit_of_a_message_handed_over_already_leaves_no_text_in_the_store(
        fake: FakeTelegram, store: GatewayStore) -> None:
    # The everyday edit, of a message answered already: Telegram will not deliver the message as new again, and its
    # text stayed in the store for a month, past the inbox's week and `/new`.
    prod = fake.message_update(42, "deploy to prod")
    async with process(fake, store) as sink:
        assert await fake.deliver_webhook(prod) == 200
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging", after=1)) == 200
    assert [i.text for i in sink.inbound] == ["deploy to prod"]
    assert store.last_seen.of("telegram") == {}
