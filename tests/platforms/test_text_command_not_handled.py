"""What the user of a command typed as a message (Telegram's ``/stop``, Discord's ``!stop``) sees when the gateway
fails on it before recording it (a bug it trips, not a full disk).

The adapter logged the failure and dropped the event, as it would fail alike at every try: a slash command on Slack
and Discord was answered that it could not be handled, a text command nothing at all, its user left waiting for the
turn to stop. It is answered with the same words (`platforms.not_recorded.NOT_HANDLED`), the events after it handed
over as before; a plain message the gateway fails on is still dropped without a word. The real SDKs against the
loopback fakes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from platforms.base import CommandSpec, Inbound
from platforms.fakes.discord import FakeDiscord
from platforms.fakes.telegram import FakeTelegram
from platforms.not_recorded import NOT_HANDLED
from platforms.telegram import TelegramAdapter
from tests.discord_client import adapter_for, fake_discord, join_heartbeat_threads
from tests.platforms.telegram_webhook import webhook_adapter

BOT = "switchboard_bot"
COMMANDS = [CommandSpec("stop", "Stop the current turn"), CommandSpec("new", "Start a new session")]
USER = 42

fake_dc = fake_discord()


class Bug(Exception):
    pass


class FailsOnOdd:
    """A gateway that a bug makes fail on every event whose text ends with "odd", whatever the try."""

    def __init__(self) -> None:
        self.taken: list[str] = []

    async def __call__(self, inbound: Inbound) -> None:
        if inbound.text.endswith("odd"):
            raise Bug("a bug an odd event trips")
        self.taken.append(inbound.text)


@pytest.fixture
async def fake_tg() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(username=BOT) as fake:
        yield fake


def visible(text: str) -> str:
    """``text`` as Telegram shows it: the backticks become a code entity."""
    return text.replace("`", "")


async def test_a_telegram_command_the_gateway_fails_on_is_answered_while_polling(
        fake_tg: FakeTelegram, caplog: pytest.LogCaptureFixture) -> None:
    sink = FailsOnOdd()
    adapter = TelegramAdapter(fake_tg.token, api_base=fake_tg.base_url)
    await adapter.start(sink, COMMANDS)
    group = dict(chat_type="supergroup", user_id=5, username="bob")
    try:
        with caplog.at_level(logging.INFO, logger="platforms.telegram"):
            private = fake_tg.push_message(USER, "/stop odd")
            fake_tg.push_message(USER, "just odd")  # a message: dropped without a word, as before
            in_group = fake_tg.message_update(-100, f"/new@{BOT} odd", **group)
            fake_tg.push_update(in_group)
            fake_tg.push_message(USER, "next")
            await fake_tg.wait_for(lambda: sink.taken == ["next"] and fake_tg.messages["-100"])
    finally:
        await adapter.stop()
    [answer] = fake_tg.messages[str(USER)]
    assert answer["text"] == visible(NOT_HANDLED.format(command="/stop")) and answer["reply_to"] is None
    [answer] = fake_tg.messages["-100"]  # in a group, quoting whose command it was
    assert answer["text"] == visible(NOT_HANDLED.format(command="/new"))
    assert answer["reply_to"] == in_group["message"]["message_id"]
    told = [r.getMessage() for r in caplog.records if "telling the user" in r.getMessage()]
    assert told == [f"telegram: /stop from user {USER} (update {private}) was dropped, the gateway failing on it;"
                    " telling the user", f"telegram: /new from user 5 (update {in_group['update_id']}) was dropped,"
                    " the gateway failing on it; telling the user"]


async def test_a_telegram_command_the_gateway_fails_on_is_answered_through_a_webhook(fake_tg: FakeTelegram) -> None:
    sink = FailsOnOdd()
    async with webhook_adapter(fake_tg, sink=sink):  # type: ignore[arg-type]
        assert await fake_tg.deliver_webhook(fake_tg.message_update(USER, "/stop odd")) == 200  # not delivered again
        assert await fake_tg.deliver_webhook(fake_tg.message_update(USER, "next")) == 200
    assert sink.taken == ["next"]
    assert [m["text"] for m in fake_tg.messages[str(USER)]] == [visible(NOT_HANDLED.format(command="/stop"))]


async def test_a_telegram_answer_that_cannot_be_given_holds_up_nothing(
        fake_tg: FakeTelegram, caplog: pytest.LogCaptureFixture) -> None:
    sink = FailsOnOdd()
    adapter = TelegramAdapter(fake_tg.token, api_base=fake_tg.base_url)
    await adapter.start(sink, COMMANDS)
    try:
        fake_tg.fail_next("sendMessage", 403, description="Forbidden: bot was blocked by the user")
        with caplog.at_level(logging.WARNING, logger="platforms.telegram"):
            fake_tg.push_message(USER, "/stop odd")
            fake_tg.push_message(USER, "next")
            await fake_tg.wait_for(lambda: sink.taken == ["next"])
    finally:
        await adapter.stop()
    assert fake_tg.messages[str(USER)] == []
    assert any(r.getMessage() == f"telegram: could not tell user {USER} what became of /stop (Forbidden)"
               for r in caplog.records)


async def test_a_discord_text_command_the_gateway_fails_on_is_answered(fake_dc: FakeDiscord) -> None:
    adapter, sink = adapter_for(fake_dc), FailsOnOdd()
    dm = fake_dc.dm_channel(USER)
    await adapter.start(sink, COMMANDS)
    try:
        fake_dc.push_dm(USER, "!stop odd")
        fake_dc.push_dm(USER, "just odd")  # a message: dropped without a word, as before
        fake_dc.push_dm(USER, "next")
        await fake_dc.wait_for(lambda: sink.taken == ["next"] and fake_dc.bot_messages(dm))
    finally:
        await adapter.stop()
        await join_heartbeat_threads()
    assert [m.content for m in fake_dc.bot_messages(dm)] == [NOT_HANDLED.format(command="!stop")]
