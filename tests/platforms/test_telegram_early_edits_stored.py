"""A webhook's edit delivered before its message is kept in the gateway's store (`platforms.telegram_webhook.
EarlyEdits.bind`), not in memory only: the message, delivered again after its first hand-over was refused, still
comes as edited. The edit was used up by the refused hand-over, and the message came again as first written. Real
aiogram in a webhook-mode `TelegramAdapter` against `FakeTelegram`, the gateway's real store for the adapter's
records."""

from __future__ import annotations

import functools
import sqlite3

from gateway.store import GatewayStore
from platforms.base import Inbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter
from tests.platforms.sink import Sink
from tests.platforms.telegram_client import edit_of, fake_telegram
from tests.platforms.telegram_store import gateway_store, process

fake = fake_telegram()
store = gateway_store()


class RefusesFirst(Sink):
    """The gateway's intake, whose store is full for the first event handed over."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: list[str] = []

    async def __call__(self, inbound: Inbound) -> None:
        if not self.refused:
            self.refused.append(inbound.text)
            full = sqlite3.OperationalError("database or disk is full")
            full.sqlite_errorcode = sqlite3.SQLITE_FULL
            raise full
        await super().__call__(inbound)


async def test_a_message_delivered_again_after_a_refusal_still_comes_as_edited(fake: FakeTelegram,
                                                                               store: GatewayStore) -> None:
    sink = RefusesFirst()
    async with process(fake, store, sink):
        prod = fake.message_update(42, "deploy to prod")
        assert await fake.deliver_webhook(edit_of(prod, "deploy to staging")) == 200
        assert await fake.deliver_webhook(prod) == 500  # not recorded: Telegram delivers it again
        assert await fake.deliver_webhook(prod) == 200
    assert sink.refused == ["deploy to staging"]
    assert [i.text for i in sink.inbound] == ["deploy to staging"]


async def test_polling_keeps_no_edit_in_the_store(fake: FakeTelegram, store: GatewayStore) -> None:
    # Polling hands updates over in order: every edit of a message handed over already would be a row for a month.
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=1)
    adapter.bind_last_seen({}, functools.partial(store.last_seen.record, "telegram"),
                           functools.partial(store.last_seen.at, "telegram"))
    edits: list[str] = []

    async def heard(platform: str, chat_id: str, thread_id: str | None, message_id: str, text: str) -> bool:
        edits.append(text)
        return False

    adapter.bind_edits(heard)
    sink = Sink()
    await adapter.start(sink)
    try:
        fake.push_message(42, "hello")
        await fake.wait_for(lambda: sink.inbound)
        fake.edit_message(42, int(sink.inbound[0].message_id or 0), "hello there")
        await fake.wait_for(lambda: edits)
    finally:
        await adapter.stop()
    assert store.last_seen.of("telegram") == {}
