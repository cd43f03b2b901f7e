"""Edits of one message passed over when older than one already heard (`platforms.telegram_edits`, kept by
`platforms.telegram_webhook.EarlyEdits`): placed by ``edit_date``, the same second's by update id; what the store
keeps of an edit that changed a waiting message is its place, not its text. Real aiogram in a webhook-mode
`TelegramAdapter` against `FakeTelegram`, the gateway's real store for its records; `LatestEdits`' bounds on an
injected clock."""

from __future__ import annotations

import json
from typing import Any

from gateway.store import GatewayStore
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram_edits import LatestEdits
from tests.platforms.telegram_client import edit_of, fake_telegram
from tests.platforms.telegram_store import gateway_store, process

fake = fake_telegram()
store = gateway_store()


class Waiting:
    """The gateway's `MessageEdits.edited`, every message waiting for its turn: the texts it was changed to."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        self.texts.append(text)
        return True


async def deliver_in_turn(fake: FakeTelegram, store: GatewayStore, *updates: dict[str, Any]) -> list[str]:
    """The texts a waiting message was changed to by ``updates``, each delivered after the one before."""
    waiting = Waiting()
    async with process(fake, store, edits=waiting):
        for update in updates:
            assert await fake.deliver_webhook(update) == 200
    return waiting.texts


async def test_of_two_edits_made_in_one_second_the_higher_update_id_is_the_later(
        fake: FakeTelegram, store: GatewayStore) -> None:
    prod = fake.message_update(42, "deploy to prod")
    staging, qa = edit_of(prod, "deploy to staging", after=1), edit_of(prod, "deploy to qa", after=2)
    staging["edited_message"]["edit_date"] = qa["edited_message"]["edit_date"]
    assert await deliver_in_turn(fake, store, qa, staging) == ["deploy to qa"]


async def test_an_edit_made_later_is_the_later_whatever_its_update_id(fake: FakeTelegram, store: GatewayStore) -> None:
    # After a week without updates Telegram numbers the next one at random, maybe below the last.
    prod = fake.message_update(42, "deploy to prod")
    staging, qa = edit_of(prod, "deploy to staging", after=2), edit_of(prod, "deploy to qa", after=1)
    qa["edited_message"]["edit_date"] += 8 * 24 * 3600
    assert await deliver_in_turn(fake, store, qa, staging) == ["deploy to qa"]
    assert await deliver_in_turn(fake, store, staging) == []  # the next process, by the store's record


async def test_an_edit_that_changed_a_waiting_message_leaves_its_place_in_the_store_not_its_text(
        fake: FakeTelegram, store: GatewayStore) -> None:
    prod = fake.message_update(42, "deploy to prod")
    qa = edit_of(prod, "deploy to qa", after=2)
    assert await deliver_in_turn(fake, store, qa) == ["deploy to qa"]
    assert {key: json.loads(value) for key, value in store.last_seen.of("telegram").items()} == {
        f"edited:42/{prod['message']['message_id']}": {"update_id": qa["update_id"],
                                                      "edit_date": qa["edited_message"]["edit_date"]}}


def test_the_latest_edits_are_kept_for_fifteen_minutes_and_ten_thousand_messages() -> None:
    now = [0.0]
    latest = LatestEdits(monotonic=lambda: now[0])
    latest.heard("prod", (100, 7))
    latest.heard("prod", (100, 6))  # older: the later one stays
    now[0] = 15 * 60 - 1
    assert latest.latest("prod") == (100, 7)
    now[0] = 15 * 60
    assert latest.latest("prod") is None
    for message in range(10_001):
        latest.heard(message, (100, 1))
    assert latest.latest(0) is None and latest.latest(1) == latest.latest(10_000) == (100, 1)
