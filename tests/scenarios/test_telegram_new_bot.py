"""A new Telegram bot token on the same state directory. Telegram numbers each bot's updates on its own, so the
new bot's update ids may be ids the inbox recorded for the old one: its messages must be answered all the same.
And the upgrade to per-bot event ids: an update a bot's previous version recorded (by its bare update id) and
Telegram serves again after the upgrade is still a repeat, never answered twice."""

from __future__ import annotations

from pathlib import Path

from gateway.host import STATE_DB
from gateway.store import GatewayStore
from gateway.testing import make_config, settled, start_gateway
from platforms.base import Inbound
from platforms.fakes.telegram import FakeTelegram
from platforms.telegram import TelegramAdapter

OLD, NEW = "111:old-bot-token", "222:new-bot-token"


def _config(tmp_path: Path):
    return make_config(tmp_path, platforms={"telegram": {"allow_all": True}})


async def _answer(fake: FakeTelegram, config, chat: int, text: str) -> int:
    """One gateway run on ``fake``'s bot: the user writes ``text`` in ``chat``, the bot answers; the update id."""
    adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
    gateway = await start_gateway(config, [adapter])
    try:
        await fake.wait_for(lambda: fake.calls_to("getUpdates"))
        update_id = fake.push_message(chat, text)
        await fake.wait_for(lambda: fake.messages[str(chat)] and not fake.pending)
        await settled(gateway)
    finally:
        await gateway.stop(grace=0)
    return update_id


async def test_a_new_bot_is_answered_though_its_update_ids_are_the_old_bots(tmp_path: Path):
    config = _config(tmp_path)
    async with FakeTelegram(OLD) as old:
        first = await _answer(old, config, 42, "hello")
    async with FakeTelegram(NEW) as new:
        # The same update id, in the same chat: what the old bot's inbox rows would swallow.
        assert await _answer(new, config, 42, "hello again") == first
        assert len(new.messages["42"]) == 1


def _recorded_bare(tmp_path: Path, update_id: int, chat: int) -> None:
    """The update, recorded and handled as a version before per-bot ids recorded it: by its bare update id."""
    (tmp_path / "state").mkdir(exist_ok=True)
    store = GatewayStore(tmp_path / "state" / STATE_DB)
    try:
        event = Inbound(platform="telegram", chat_id=str(chat), thread_id=None, user_id=str(chat), user_name="u",
                        text="hello", event_id=str(update_id), message_id="1")
        store.inbox.accept(event, None)
        store.inbox.settle("telegram", event.event_id)
    finally:
        store.close()


async def test_an_update_recorded_before_the_upgrade_is_a_repeat_after_it(tmp_path: Path):
    config = _config(tmp_path)
    async with FakeTelegram(OLD) as fake:
        again = fake.push_message(42, "hello")  # recorded, not confirmed when the old version stopped
        _recorded_bare(tmp_path, again, 42)
        adapter = TelegramAdapter(fake.token, api_base=fake.base_url, polling_timeout=10)
        gateway = await start_gateway(config, [adapter])
        try:
            await fake.wait_for(lambda: not fake.pending)  # served again, and confirmed
            fresh = fake.push_message(43, "and now")
            await fake.wait_for(lambda: fake.messages["43"] and not fake.pending)
            await settled(gateway)
        finally:
            await gateway.stop(grace=0)
    assert again in fake.served and fresh > again
    assert not fake.messages["42"]  # a repeat: not answered again


async def test_another_bot_after_the_upgrade_is_not_taken_for_the_one_before_it(tmp_path: Path):
    config = _config(tmp_path)
    async with FakeTelegram(OLD) as old:
        # The old bot's last update before the upgrade, then its first after: the bare ids are its own.
        _recorded_bare(tmp_path, old.push_message(42, "hello"), 42)
        await _answer(old, config, 43, "upgraded")
    async with FakeTelegram(NEW) as new:
        await _answer(new, config, 42, "hello from a new bot")  # update id 1000, as the old bot's bare one
        assert len(new.messages["42"]) == 1
